// The requests one instance accepted for one partner in the last day, through Redis or alone, each with the number that
// names it in Redis's log (with the instance's tag): what the instance puts back when Redis restarts empty, and what it
// adds when it accepted them alone. In the order their answers came, which is nearly the order of their times.
import { AcceptLog, MAX_LOG_ENTRIES } from './accept-log.ts'
import type { OwnRequest } from './redis-store.ts'

export class OwnRequests {
  /** times and rows; its sequence numbers are positions that do not move when old entries leave */
  private readonly log: AcceptLog
  /** each entry's id at its sequence number modulo the length, which is at least the log's size */
  private ids = new Float64Array(16)
  /** the entries before this sequence number are in Redis's log */
  private inRedisUntil = 0

  constructor (max = MAX_LOG_ENTRIES) {
    this.log = new AcceptLog(max, 16, max)
  }

  get size (): number {
    return this.log.size
  }

  private idOf (seq: number): number {
    return this.ids[seq % this.ids.length]
  }

  /** Adds a request; `inRedis`: Redis admitted it (else it was accepted alone, or may be missing there). */
  push (id: number, time: number, inRedis: boolean) {
    const seq = this.log.push(time)
    if (this.log.size > this.ids.length) {
      const ids = new Float64Array(this.ids.length * 2)
      for (let s = seq - this.log.size + 1; s < seq; s++) ids[s % ids.length] = this.idOf(s)
      this.ids = ids
    }
    this.ids[seq % this.ids.length] = id
    if (inRedis && this.inRedisUntil === seq) this.inRedisUntil++
  }

  /** Sets the rows of request `id`, searched from the newest (it was just answered). */
  setRows (id: number, rows: number) {
    for (let seq = this.log.nextSeq - 1; seq >= this.log.nextSeq - this.log.size; seq--) {
      if (this.idOf(seq) === id) {
        this.log.setRows(seq, rows)
        return
      }
    }
  }

  /** Drops the requests at or before `time` from the oldest end (a walk: their times are only nearly in order). */
  dropUntil (time: number) {
    let k = 0
    while (k < this.log.size && this.log.at(k) <= time) k++
    this.log.dropOldest(k)
  }

  /**
   * The requests not known to be in Redis's log (`all`: every request kept), and the position
   * that marks them in Redis once they are added (see added).
   */
  toAdd (all: boolean): { requests: OwnRequest[], upTo: number } {
    const first = this.log.nextSeq - this.log.size
    const requests: OwnRequest[] = []
    for (let k = all ? 0 : Math.max(0, this.inRedisUntil - first); k < this.log.size; k++) {
      requests.push({ id: this.idOf(first + k), time: this.log.at(k), rows: this.log.rowsAt(k) })
    }
    return { requests, upTo: this.log.nextSeq }
  }

  /** The requests up to `upTo` (from toAdd) are in Redis's log now. */
  added (upTo: number) {
    this.inRedisUntil = Math.max(this.inRedisUntil, upTo)
  }

  /** The rows of the requests logged after `time`. */
  rowsAfter (time: number): number {
    let rows = 0
    for (let k = this.log.size - 1; k >= 0; k--) if (this.log.at(k) > time) rows += this.log.rowsAt(k)
    return rows
  }
}
