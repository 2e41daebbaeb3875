// The log of one partner's accepted requests: time (ms) and rows answered, oldest first, in a
// ring that grows on demand. Exact sliding windows follow from it: a window of length W with
// limit L is full when the L-th most recent accepted request is younger than W.

/** Most entries one log keeps: bounds a partner's memory when every window is unlimited. */
export const MAX_LOG_ENTRIES = 1_000_000
/** The longest window: a request older than this counts nowhere. */
export const DAY_MS = 86_400_000

export class AcceptLog {
  private times: Float64Array
  private rows: Uint32Array
  private head = 0 // index of the oldest entry
  size = 0
  /** sequence number of the next entry; entries are addressed by it for setRows */
  nextSeq = 0
  /** per window length (ms): the sequence number of the window's first entry when last asked */
  private readonly starts = new Map<number, number>()

  /**
   * The entries the limits in force need (the log grows to it, doubling). It grows past it only after
   * limits were tightened within a day: an entry leaves by age, and the oldest is pushed out only at `max`.
   */
  capacity: number

  constructor (capacity: number, initial = 16, private readonly max = MAX_LOG_ENTRIES) {
    this.capacity = Math.min(max, Math.max(1, capacity))
    const n = Math.min(this.capacity, Math.max(1, initial))
    this.times = new Float64Array(n)
    this.rows = new Uint32Array(n)
  }

  /** Time of the k-th most recent entry (k = 1 is the newest). */
  recent (k: number): number {
    return this.times[(this.head + this.size - k) % this.times.length]
  }

  at (i: number): number { // i-th oldest
    return this.times[(this.head + i) % this.times.length]
  }

  rowsAt (i: number): number {
    return this.rows[(this.head + i) % this.rows.length]
  }

  get newest (): number {
    return this.size === 0 ? -Infinity : this.recent(1)
  }

  push (time: number, rows = 0): number {
    if (this.size === this.times.length) {
      const length = this.times.length
      if (length < this.max) this.grow(Math.min(length < this.capacity ? this.capacity : this.max, length * 2))
      else {
        this.head = (this.head + 1) % length // full: the oldest entry leaves
        this.size--
      }
    }
    const i = (this.head + this.size) % this.times.length
    this.times[i] = time
    this.rows[i] = rows
    this.size++
    return this.nextSeq++
  }

  /** Sets the rows of entry `seq`, if it is still in the log; the entry's time, or undefined if not. */
  setRows (seq: number, rows: number): number | undefined {
    const age = this.nextSeq - 1 - seq
    if (age < 0 || age >= this.size) return undefined
    const i = (this.head + this.size - 1 - age) % this.rows.length
    this.rows[i] = rows
    return this.times[i]
  }

  /** Index (oldest = 0) of the first entry with time > after (size when none), by binary search from `lo`. */
  firstAfter (after: number, lo = 0): number {
    let hi = this.size
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (this.at(mid) > after) hi = mid
      else lo = mid + 1
    }
    return lo
  }

  /**
   * firstAfter(after) for a window's start, walked on from where the last call for the same window
   * length ended (a start only moves forward): a step or two per request. One moved back or far on is searched for.
   */
  windowStart (windowMs: number, after: number): number {
    const oldest = this.nextSeq - this.size
    const i = Math.max(0, (this.starts.get(windowMs) ?? oldest) - oldest)
    const resume = i <= this.size && (i === 0 || this.at(i - 1) <= after)
    const start = resume ? this.walk(i, after) : this.firstAfter(after)
    this.starts.set(windowMs, oldest + start)
    return start
  }

  /** The first index from `i` on with time > after, given that the entries before `i` are not. */
  private walk (i: number, after: number): number {
    const end = Math.min(this.size, i + 16)
    while (i < end && this.at(i) <= after) i++
    if (i < end || i === this.size) return i
    return this.firstAfter(after, i) // a long way on: search the rest
  }

  /** Drops entries at or before `time` (usually none or a few, at the oldest end). */
  dropUntil (time: number) {
    this.dropOldest(this.walk(0, time))
  }

  /** Drops the `k` oldest entries. */
  dropOldest (k: number) {
    this.head = (this.head + k) % this.times.length
    this.size -= k
  }

  /** A capacity for new limits. Entries held are kept even above it: limits raised again within the day count them. */
  resize (capacity: number) {
    this.capacity = Math.min(this.max, Math.max(1, capacity))
    const keep = Math.max(this.capacity, this.size)
    if (this.times.length > keep) this.grow(keep)
  }

  private grow (n: number) {
    const times = new Float64Array(n)
    const rows = new Uint32Array(n)
    for (let i = 0; i < this.size; i++) {
      times[i] = this.at(i)
      rows[i] = this.rowsAt(i)
    }
    this.times = times
    this.rows = rows
    this.head = 0
  }
}
