// The daily history in control.db (without STATE_URL): a day's fields as rows, to which each flush
// adds its deltas in one transaction, and the requests per minute of the last two days, from which
// the busiest minute is kept (minute counts only grow, so it is exact whatever the flushes' order).
import type Database from 'better-sqlite3'
import { DAY_MS } from '../limits/accept-log.ts'
import { MINUTE_MS, dateOf, deltaFields, firstKeptDay, type HistoryCounter } from './history.ts'

const HISTORY_DDL = `
CREATE TABLE IF NOT EXISTS usage_days (
  partner_id TEXT NOT NULL, day TEXT NOT NULL, field TEXT NOT NULL, value INTEGER NOT NULL,
  PRIMARY KEY (partner_id, day, field)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS usage_minutes (
  partner_id TEXT NOT NULL, minute INTEGER NOT NULL, requests INTEGER NOT NULL,
  PRIMARY KEY (partner_id, minute)) WITHOUT ROWID`

const PRUNE_EVERY_MS = 600_000

const statements = (db: Database.Database) => ({
  add: db.prepare('INSERT INTO usage_days (partner_id, day, field, value) VALUES (?, ?, ?, ?) ' +
    'ON CONFLICT (partner_id, day, field) DO UPDATE SET value = value + excluded.value'),
  addMinute: db.prepare('INSERT INTO usage_minutes (partner_id, minute, requests) VALUES (?, ?, ?) ' +
    'ON CONFLICT (partner_id, minute) DO UPDATE SET requests = requests + excluded.requests ' +
    'RETURNING requests').pluck(),
  busiest: db.prepare("SELECT field, value FROM usage_days WHERE partner_id = ? AND day = ? AND field IN ('bm', 'bc')"),
  setField: db.prepare('INSERT INTO usage_days (partner_id, day, field, value) VALUES (?, ?, ?, ?) ' +
    'ON CONFLICT (partner_id, day, field) DO UPDATE SET value = excluded.value'),
  pruneDays: db.prepare('DELETE FROM usage_days WHERE day < ?'),
  pruneMinutes: db.prepare('DELETE FROM usage_minutes WHERE minute < ?')
})

/** Adds a counter's deltas to control.db; throws when it could not (the counter keeps them). */
export class SqliteHistory {
  private readonly sql: ReturnType<typeof statements>
  private lastPrune = 0

  /** `keepDays`: days kept, today's among them (USAGE_HISTORY_DAYS). */
  constructor (private readonly db: Database.Database, private readonly keepDays: number) {
    db.exec(HISTORY_DDL)
    this.sql = statements(db)
  }

  flush (counter: HistoryCounter, now: number) {
    const prune = now - this.lastPrune >= PRUNE_EVERY_MS
    if (counter.empty && !prune) return
    const { sql } = this
    const deltas = counter.deltas()
    this.db.transaction(() => {
      for (const [key, days] of deltas) {
        for (const [day, delta] of days) {
          const date = dateOf(day)
          for (const [field, n] of deltaFields(delta)) sql.add.run(key, date, field, n)
          const stored = sql.busiest.all(key, date) as { field: string, value: number }[]
          const known = Object.fromEntries(stored.map((r) => [r.field, r.value]))
          let count = known.bc ?? 0
          let minute = known.bm ?? 0
          for (const [m, n] of delta.minutes) {
            const total = sql.addMinute.get(key, m, n) as number
            // the earliest minute of equal counts wins, as in history-redis.ts
            if (total > count || (total === count && m < minute)) [count, minute] = [total, m]
          }
          if (count !== known.bc || minute !== known.bm) {
            sql.setField.run(key, date, 'bc', count)
            sql.setField.run(key, date, 'bm', minute)
          }
        }
      }
      if (prune) {
        // minute counts from yesterday on: a flush after midnight may add to yesterday
        sql.pruneDays.run(dateOf(firstKeptDay(now, this.keepDays)))
        sql.pruneMinutes.run((Math.floor(now / DAY_MS) - 1) * (DAY_MS / MINUTE_MS))
        this.lastPrune = now
      }
    }).immediate()
    counter.clear() // only once written: a failed flush's deltas are counted on, for the next
  }
}

/** A partner's stored days, read only (the operator CLI, while the service writes). */
export function readSqliteHistory (
  db: Database.Database,
  key: string,
  fromDate: string,
  toDate: string
): Map<string, Record<string, number>> {
  const out = new Map<string, Record<string, number>>()
  try {
    const rows = db.prepare('SELECT day, field, value FROM usage_days WHERE partner_id = ? AND day >= ? AND day <= ?')
      .all(key, fromDate, toDate) as { day: string, field: string, value: number }[]
    for (const { day, field, value } of rows) out.set(day, { ...out.get(day), [field]: value })
  } catch (err) {
    if (!/no such table/.test((err as Error).message)) throw err // else no service has run here yet
  }
  return out
}
