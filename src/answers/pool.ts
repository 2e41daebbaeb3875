// Answer buffers used again instead of allocated per request (see docs/performance.md); one pool per app. The
// sending request and the response cache hold references; at zero a buffer is used again.

const PAGE = 4096
/** Smaller answers come from Node's own shared pool (Buffer.allocUnsafe), already cheap. */
export const MIN_POOLED_BYTES = 2048
/** Larger answers (a few tag pages) are rare: allocated each time. */
export const MAX_POOLED_BYTES = 256 * 1024
/** Free buffers kept per size class at most; more are left to the garbage collector. */
const MAX_FREE_BYTES_PER_CLASS = 4 * 1024 * 1024

export class AnswerPool {
  /** free ArrayBuffers by capacity (a multiple of PAGE) */
  private readonly free = new Map<number, ArrayBuffer[]>()
  /** references on each buffer out; weak: one never given back (an aborted response) is collected */
  private readonly refs = new WeakMap<ArrayBuffer, number>()
  private taken = 0
  private returned = 0
  private made = 0

  /** A buffer of `size` bytes (contents undefined) with one reference, the caller's. */
  take (size: number): Buffer {
    if (size < MIN_POOLED_BYTES || size > MAX_POOLED_BYTES) return Buffer.allocUnsafe(size)
    const capacity = Math.ceil(size / PAGE) * PAGE
    let ab = this.free.get(capacity)?.pop()
    if (ab === undefined) {
      ab = new ArrayBuffer(capacity)
      this.made++
    }
    this.refs.set(ab, 1)
    this.taken++
    return Buffer.from(ab, 0, size)
  }

  /** Whether `body` came from take() and is still out. */
  holds (body: Buffer): boolean {
    return this.refs.has(body.buffer as ArrayBuffer)
  }

  /** Memory `body` keeps: its pooled buffer's capacity, else its length. */
  footprint (body: Buffer): number {
    return this.refs.has(body.buffer as ArrayBuffer) ? body.buffer.byteLength : body.length
  }

  retain (body: Buffer): void {
    const ab = body.buffer as ArrayBuffer
    const n = this.refs.get(ab)
    if (n !== undefined) this.refs.set(ab, n + 1)
  }

  release (body: Buffer): void {
    const ab = body.buffer as ArrayBuffer
    const n = this.refs.get(ab)
    if (n === undefined) return
    if (n > 1) {
      this.refs.set(ab, n - 1)
      return
    }
    this.refs.delete(ab)
    this.returned++
    let list = this.free.get(ab.byteLength)
    if (!list) this.free.set(ab.byteLength, list = [])
    if ((list.length + 1) * ab.byteLength <= MAX_FREE_BYTES_PER_CLASS) list.push(ab)
  }

  /** Buffers handed out, out now (held or abandoned), free, and ever made. */
  stats (): { taken: number, out: number, free: number, made: number } {
    let free = 0
    for (const list of this.free.values()) free += list.length
    return { taken: this.taken, out: this.taken - this.returned, free, made: this.made }
  }
}
