// Columns of strings outside the JS heap: millions of JS strings would be objects for every full GC to mark.
// A string is made when asked for.
export class StringColumn {
  constructor (readonly bytes: Buffer, readonly ends: Uint32Array) {
    if (ends.length > 0 && ends[ends.length - 1] !== bytes.length) {
      throw new Error('string column: the ends do not match the bytes')
    }
  }

  static from (values: readonly string[]): StringColumn {
    let total = 0
    for (const v of values) total += Buffer.byteLength(v, 'utf8')
    if (total > 0xffffffff) throw new Error('string column: over 4 GB')
    const bytes = Buffer.allocUnsafeSlow(total)
    const ends = new Uint32Array(values.length)
    let at = 0
    for (let i = 0; i < values.length; i++) {
      at += bytes.write(values[i], at, 'utf8')
      ends[i] = at
    }
    return new StringColumn(bytes, ends)
  }

  get length (): number {
    return this.ends.length
  }

  at (i: number): string {
    return this.bytes.toString('utf8', i === 0 ? 0 : this.ends[i - 1], this.ends[i])
  }

  byteLength (i: number): number {
    return this.ends[i] - (i === 0 ? 0 : this.ends[i - 1])
  }

  /** Index of `value` in a column sorted by byte order (ASCII: string order), or -1; no string made per probe. */
  indexOfSorted (value: string): number {
    const key = Buffer.from(value, 'utf8')
    let lo = 0
    let hi = this.length - 1
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1
      const order = this.bytes.compare(key, 0, key.length, mid === 0 ? 0 : this.ends[mid - 1], this.ends[mid])
      if (order === 0) return mid
      if (order < 0) lo = mid + 1
      else hi = mid - 1
    }
    return -1
  }
}

/** A column of few distinct strings (regions, countries): the values once, and a 16-bit code per row. */
export class CodeColumn {
  static readonly MAX_VALUES = 1 << 16

  constructor (readonly table: readonly string[], readonly codes: Uint16Array) {
    if (table.length > CodeColumn.MAX_VALUES) throw new Error('code column: over 65,536 distinct values')
    for (let i = 0; i < codes.length; i++) {
      if (codes[i] >= table.length) throw new Error(`code column: row ${i} has no value`)
    }
  }

  /** A column of `count` rows filled with set(row, value), codes in order of first appearance. */
  static builder (count: number): { set: (row: number, value: string) => void, done: () => CodeColumn } {
    const table: string[] = []
    const index = new Map<string, number>()
    const codes = new Uint16Array(count)
    return {
      set (row, value) {
        let code = index.get(value)
        if (code === undefined) { // past MAX_VALUES, done() refuses the column
          index.set(value, code = table.length)
          table.push(value)
        }
        codes[row] = code
      },
      done: () => new CodeColumn(table, codes)
    }
  }

  get length (): number {
    return this.codes.length
  }

  at (i: number): string {
    return this.table[this.codes[i]]
  }
}
