// The daily usage history of each partner, per UTC day: requests answered, 429s, other 4xx and
// 5xx by status code, rows returned, and the busiest minute. Counted in process (a few Map and
// number increments per request) as deltas, which a store adds to what it holds: control.db
// (history-sqlite.ts) or Redis (history-redis.ts). Adding deltas is what makes several instances'
// counts sum up.

export const DAY_MS = 86_400_000
export const MINUTE_MS = 60_000

/** What one instance counted for a partner and a day since its last flush. */
interface DayDelta {
  requests: number
  rows: number
  /** answers of status 400 and above, by status */
  statuses: Map<number, number>
  /** requests per minute (minutes since the epoch) */
  minutes: Map<number, number>
}

/** partner id → day (days since the epoch) → delta */
export type Deltas = Map<string, Map<number, DayDelta>>

/** What the history counts of an answer (a telemetry event carries these and more). */
interface HistoryEvent { timestamp: number, status: number, rows: number }

/** Where the history's deltas go; record is on the request path. */
export interface HistorySink {
  record (key: string, event: HistoryEvent): void
}

/** A partner's delta being counted, and the current minute's count kept apart: one Map lookup a request. */
interface Slot { delta: DayDelta, minute: number, minuteCount: number }

export class HistoryCounter implements HistorySink {
  private pending: Deltas = new Map()
  private readonly slots = new Map<string, Slot>()

  record (key: string, event: HistoryEvent) {
    const { timestamp, status, rows } = event
    const minute = Math.floor(timestamp / MINUTE_MS)
    let slot = this.slots.get(key)
    if (slot === undefined || minute !== slot.minute) slot = this.nextMinute(key, slot, minute)
    slot.minuteCount++
    const delta = slot.delta
    delta.requests++
    delta.rows += rows
    if (status >= 400) delta.statuses.set(status, (delta.statuses.get(status) ?? 0) + 1)
  }

  /** The slow path, once a minute per partner: the last minute's count goes into its delta. */
  private nextMinute (key: string, slot: Slot | undefined, minute: number): Slot {
    if (slot !== undefined) fold(slot)
    const day = Math.floor(minute * MINUTE_MS / DAY_MS)
    let days = this.pending.get(key)
    if (!days) this.pending.set(key, days = new Map())
    let delta = days.get(day)
    if (!delta) days.set(day, delta = { requests: 0, rows: 0, statuses: new Map(), minutes: new Map() })
    const next = { delta, minute, minuteCount: 0 }
    this.slots.set(key, next)
    return next
  }

  /** The deltas counted since the last take; the counter starts again from nothing. */
  take (): Deltas {
    for (const slot of this.slots.values()) fold(slot)
    this.slots.clear()
    const taken = this.pending
    this.pending = new Map()
    return taken
  }

  /** Deltas a store could not take: counted again with those since, to be flushed next time. */
  putBack (deltas: Deltas) {
    for (const [key, days] of deltas) {
      for (const [day, d] of days) {
        let mine = this.pending.get(key)
        if (!mine) this.pending.set(key, mine = new Map())
        const into = mine.get(day)
        if (!into) {
          mine.set(day, d)
          continue
        }
        into.requests += d.requests
        into.rows += d.rows
        for (const [s, n] of d.statuses) into.statuses.set(s, (into.statuses.get(s) ?? 0) + n)
        for (const [m, n] of d.minutes) into.minutes.set(m, (into.minutes.get(m) ?? 0) + n)
      }
    }
  }

  get empty () {
    return this.pending.size === 0
  }
}

function fold (slot: Slot) {
  if (slot.minuteCount === 0) return
  slot.delta.minutes.set(slot.minute, (slot.delta.minutes.get(slot.minute) ?? 0) + slot.minuteCount)
  slot.minuteCount = 0
}

/**
 * The fields a delta adds to a stored day, in both stores: requests, rows, s<status>. The stores
 * keep bm (the busiest minute) and bc (its count) beside them.
 */
export function deltaFields (d: DayDelta): [string, number][] {
  const fields: [string, number][] = [['requests', d.requests], ['rows', d.rows]]
  for (const [status, n] of d.statuses) fields.push([`s${status}`, n])
  return fields
}

export const dateOf = (day: number) => new Date(day * DAY_MS).toISOString().slice(0, 10)

/** A day of history as the CLI prints it. */
export interface DayRecord {
  date: string
  /** every answer recorded (refused ones included) */
  requests: number
  /** counted against the limits: every answer but the 429s */
  accepted: number
  /** 429 answers */
  refused: number
  /** other 4xx answers, by status */
  client_errors: Record<string, number>
  /** 5xx answers, by status */
  server_errors: Record<string, number>
  rows: number
  /** the UTC minute with the most answers (the earliest of equals), or null on a day without */
  busiest_minute: { minute: string, requests: number } | null
}

/** A day's record from its stored fields (missing ones are 0). */
export function dayRecord (date: string, fields: Record<string, number>): DayRecord {
  const clientErrors: Record<string, number> = {}
  const serverErrors: Record<string, number> = {}
  for (const [field, n] of Object.entries(fields)) {
    if (!/^s\d{3}$/.test(field) || n === 0) continue
    const status = Number(field.slice(1))
    if (status >= 500) serverErrors[status] = n
    else if (status !== 429) clientErrors[status] = n
  }
  const requests = fields.requests ?? 0
  const refused = fields.s429 ?? 0
  const busiest = (fields.bc ?? 0) > 0
    ? { minute: new Date(fields.bm * MINUTE_MS).toISOString().slice(0, 16) + 'Z', requests: fields.bc }
    : null
  return {
    date,
    requests,
    accepted: requests - refused,
    refused,
    client_errors: clientErrors,
    server_errors: serverErrors,
    rows: fields.rows ?? 0,
    busiest_minute: busiest
  }
}

/** The last `count` days up to `now`'s, oldest first, each from `stored` or empty. */
export function lastDays (stored: Map<string, Record<string, number>>, now: number, count: number): DayRecord[] {
  const today = Math.floor(now / DAY_MS)
  const out: DayRecord[] = []
  for (let day = today - count + 1; day <= today; day++) {
    const date = dateOf(day)
    out.push(dayRecord(date, stored.get(date) ?? {}))
  }
  return out
}

/** Whether a minute's new total makes it the day's busiest (the earliest minute of equal counts wins). */
export const busier = (total: number, minute: number, busiestCount: number, busiestMinute: number) =>
  total > busiestCount || (total === busiestCount && minute < busiestMinute)

/** The first day kept when `keepDays` days are kept (today among them). */
export const firstKeptDay = (now: number, keepDays: number) => Math.floor(now / DAY_MS) - keepDays + 1
