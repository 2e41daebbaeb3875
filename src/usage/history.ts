// Each partner's daily usage per UTC day (requests, rows, statuses from 400, the busiest minute),
// counted in process as deltas that a store adds to what it holds (history-sqlite.ts,
// history-redis.ts): adding is what makes several instances' counts sum up.
import { DAY_MS } from '../limits/accept-log.ts'

export const MINUTE_MS = 60_000

interface DayDelta {
  requests: number
  rows: number
  /** answers of status 400 and above, by status */
  statuses: Map<number, number>
  /** requests per minute (minutes since the epoch) */
  minutes: Map<number, number>
}

/** partner id → day (days since the epoch) → delta */
type Deltas = Map<string, Map<number, DayDelta>>

/** A partner's delta being counted, its current minute's count kept apart: one Map lookup a request. */
interface Slot { delta: DayDelta, minute: number, minuteCount: number }

export class HistoryCounter {
  private pending: Deltas = new Map()
  private readonly slots = new Map<string, Slot>()

  record (key: string, event: { timestamp: number, status: number, rows: number }) {
    const minute = Math.floor(event.timestamp / MINUTE_MS)
    let slot = this.slots.get(key)
    if (slot === undefined || minute !== slot.minute) slot = this.nextMinute(key, slot, minute)
    slot.minuteCount++
    const delta = slot.delta
    delta.requests++
    delta.rows += event.rows
    if (event.status >= 400) delta.statuses.set(event.status, (delta.statuses.get(event.status) ?? 0) + 1)
  }

  /** Once a minute per partner: the last minute's count goes into its delta. */
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

  /** The deltas counted since the last clear; counting goes on into them until then. */
  deltas (): Deltas {
    for (const slot of this.slots.values()) fold(slot)
    return this.pending
  }

  clear () {
    this.slots.clear()
    this.pending = new Map()
  }

  get empty () { return this.pending.size === 0 }
}

function fold (slot: Slot) {
  if (slot.minuteCount === 0) return
  slot.delta.minutes.set(slot.minute, (slot.delta.minutes.get(slot.minute) ?? 0) + slot.minuteCount)
  slot.minuteCount = 0
}

/** The fields a delta adds to a stored day: requests, rows, s<status>; the stores keep bm and bc (busiest minute). */
export function deltaFields (d: DayDelta): [string, number][] {
  const fields: [string, number][] = [['requests', d.requests], ['rows', d.rows]]
  for (const [status, n] of d.statuses) fields.push([`s${status}`, n])
  return fields
}

export const dateOf = (day: number) => new Date(day * DAY_MS).toISOString().slice(0, 10)

export type DayRecord = ReturnType<typeof dayRecord>

/** A day as the CLI prints it, from its stored fields (missing ones are 0). */
export function dayRecord (date: string, fields: Record<string, number>) {
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
  return {
    date,
    requests,
    accepted: requests - refused,
    refused,
    client_errors: clientErrors,
    server_errors: serverErrors,
    rows: fields.rows ?? 0,
    // the earliest of the minutes with the most answers
    busiest_minute: (fields.bc ?? 0) > 0
      ? { minute: new Date(fields.bm * MINUTE_MS).toISOString().slice(0, 16) + 'Z', requests: fields.bc }
      : null
  }
}

/** The last `count` days up to `now`'s, oldest first, each from `stored` or empty. */
export function lastDays (stored: Map<string, Record<string, number>>, now: number, count: number): DayRecord[] {
  const today = Math.floor(now / DAY_MS)
  const out: DayRecord[] = []
  for (let day = today - count + 1; day <= today; day++) out.push(dayRecord(dateOf(day), stored.get(dateOf(day)) ?? {}))
  return out
}

/** The first day kept when `keepDays` days are kept (today among them). */
export const firstKeptDay = (now: number, keepDays: number) => Math.floor(now / DAY_MS) - keepDays + 1
