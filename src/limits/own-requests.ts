// The requests one instance accepted for one partner in the last day, through Redis or alone, each
// with the number that names it in Redis's log (with the instance's tag): what the instance puts
// back when Redis restarts empty, and what it adds when it accepted them alone. In the order their
// answers came, which is nearly the order of their times.
import { MAX_LOG_ENTRIES } from './accept-log.ts'
import type { OwnRequest } from './redis-store.ts'

export class OwnRequests {
  private ids = new Float64Array(16)
  private times = new Float64Array(16)
  private rows = new Uint32Array(16)
  private head = 0 // index of the oldest entry
  size = 0
  /** entries pushed so far: a position that does not move when old entries leave */
  private pushed = 0
  /** the entries before this position are in Redis's log */
  private inRedisUntil = 0

  constructor (private readonly max = MAX_LOG_ENTRIES) {}

  /** Adds a request; `inRedis`: Redis admitted it (else it was accepted alone, or may be missing there). */
  push (id: number, time: number, inRedis: boolean) {
    if (this.size === this.ids.length) {
      if (this.size < this.max) this.grow(Math.min(this.max, this.size * 2))
      else this.dropOldest(1)
    }
    const i = (this.head + this.size) % this.ids.length
    this.ids[i] = id
    this.times[i] = time
    this.rows[i] = 0
    this.size++
    if (inRedis && this.inRedisUntil === this.pushed) this.inRedisUntil++
    this.pushed++
  }

  /** Sets the rows of request `id`, searched from the newest (it was just answered). */
  setRows (id: number, rows: number) {
    for (let k = this.size - 1; k >= 0; k--) {
      const i = (this.head + k) % this.ids.length
      if (this.ids[i] === id) {
        this.rows[i] = rows
        return
      }
    }
  }

  /** Drops the requests at or before `time` from the oldest end. */
  dropUntil (time: number) {
    let k = 0
    while (k < this.size && this.times[(this.head + k) % this.ids.length] <= time) k++
    this.dropOldest(k)
  }

  /**
   * The requests not known to be in Redis's log (`all`: every request kept), and the position
   * that marks them in Redis once they are added (see added).
   */
  toAdd (all: boolean): { requests: OwnRequest[], upTo: number } {
    const first = this.pushed - this.size
    const requests: OwnRequest[] = []
    for (let k = all ? 0 : Math.max(0, this.inRedisUntil - first); k < this.size; k++) {
      const i = (this.head + k) % this.ids.length
      requests.push({ id: this.ids[i], time: this.times[i], rows: this.rows[i] })
    }
    return { requests, upTo: this.pushed }
  }

  /** The requests up to `upTo` (from toAdd) are in Redis's log now. */
  added (upTo: number) {
    this.inRedisUntil = Math.max(this.inRedisUntil, upTo)
  }

  /** The rows of the requests logged after `time`. */
  rowsAfter (time: number): number {
    let rows = 0
    for (let k = this.size - 1; k >= 0; k--) {
      const i = (this.head + k) % this.ids.length
      if (this.times[i] > time) rows += this.rows[i]
    }
    return rows
  }

  private dropOldest (k: number) {
    this.head = (this.head + k) % this.ids.length
    this.size -= k
  }

  private grow (n: number) {
    const ids = new Float64Array(n)
    const times = new Float64Array(n)
    const rows = new Uint32Array(n)
    for (let k = 0; k < this.size; k++) {
      const i = (this.head + k) % this.ids.length
      ids[k] = this.ids[i]
      times[k] = this.times[i]
      rows[k] = this.rows[i]
    }
    this.ids = ids
    this.times = times
    this.rows = rows
    this.head = 0
  }
}
