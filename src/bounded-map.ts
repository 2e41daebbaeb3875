// A map that holds at most about 2 × `max` entries and forgets the least used first, without the
// bookkeeping of an LRU: entries are set in a young generation; when it is full it becomes the old
// one (the previous old one is dropped), and an entry found in the old one is moved back to the
// young one. For memos whose entries are cheap to make again: the response cache's aliases.
export class BoundedMap<K, V> {
  private young = new Map<K, V>()
  private old = new Map<K, V>()

  constructor (readonly max: number) {
    if (!Number.isInteger(max) || max < 1) throw new RangeError(`BoundedMap: max must be a positive integer, not ${max}`)
  }

  get (key: K): V | undefined {
    const value = this.young.get(key)
    if (value !== undefined) return value
    const aged = this.old.get(key)
    if (aged !== undefined) {
      this.old.delete(key)
      this.set(key, aged)
    }
    return aged
  }

  set (key: K, value: V): void {
    if (this.young.size >= this.max && !this.young.has(key)) {
      this.old = this.young
      this.young = new Map()
    }
    this.young.set(key, value)
  }

  clear (): void {
    this.young.clear()
    this.old.clear()
  }

  /** Entries held (an entry in both generations counts once per generation; at most 2 × max). */
  get size (): number {
    return this.young.size + this.old.size
  }

  * keys (): IterableIterator<K> {
    yield * this.young.keys()
    yield * this.old.keys()
  }
}
