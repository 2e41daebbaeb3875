// The daily history in control.db (without STATE_URL): a day's fields as rows (partner, day,
// field, value), to which each flush adds its deltas in one transaction, and the requests per
// minute of the last two days, from which the busiest minute is kept up to date (minute counts
// only grow, so the maximum is exact whatever the order of the flushes).
import type Database from 'better-sqlite3'
import { DAY_MS, MINUTE_MS, busier, dateOf, deltaFields, firstKeptDay, type HistoryCounter } from './history.ts'

const HISTORY_DDL = `
CREATE TABLE IF NOT EXISTS usage_days (
  partner_id TEXT NOT NULL, day TEXT NOT NULL, field TEXT NOT NULL, value INTEGER NOT NULL,
  PRIMARY KEY (partner_id, day, field)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS usage_minutes (
  partner_id TEXT NOT NULL, minute INTEGER NOT NULL, requests INTEGER NOT NULL,
  PRIMARY KEY (partner_id, minute)) WITHOUT ROWID`

const PRUNE_EVERY_MS = 600_000

/** Adds a counter's deltas to control.db; throws when it could not (the deltas go back to the counter). */
export class SqliteHistory {
  private readonly add: Database.Statement
  private readonly addMinute: Database.Statement
  private readonly busiest: Database.Statement
  private readonly setField: Database.Statement
  private readonly pruneDays: Database.Statement
  private readonly pruneMinutes: Database.Statement
  private lastPrune = 0

  /** `keepDays`: days kept, today's among them (USAGE_HISTORY_DAYS). */
  constructor (private readonly db: Database.Database, private readonly keepDays: number) {
    db.exec(HISTORY_DDL)
    this.add = db.prepare('INSERT INTO usage_days (partner_id, day, field, value) VALUES (?, ?, ?, ?) ' +
      'ON CONFLICT (partner_id, day, field) DO UPDATE SET value = value + excluded.value')
    this.addMinute = db.prepare('INSERT INTO usage_minutes (partner_id, minute, requests) VALUES (?, ?, ?) ' +
      'ON CONFLICT (partner_id, minute) DO UPDATE SET requests = requests + excluded.requests ' +
      'RETURNING requests').pluck()
    this.busiest = db.prepare('SELECT field, value FROM usage_days ' +
      "WHERE partner_id = ? AND day = ? AND field IN ('bm', 'bc')")
    this.setField = db.prepare('INSERT INTO usage_days (partner_id, day, field, value) VALUES (?, ?, ?, ?) ' +
      'ON CONFLICT (partner_id, day, field) DO UPDATE SET value = excluded.value')
    this.pruneDays = db.prepare('DELETE FROM usage_days WHERE day < ?')
    this.pruneMinutes = db.prepare('DELETE FROM usage_minutes WHERE minute < ?')
  }

  flush (counter: HistoryCounter, now: number) {
    if (counter.empty && now - this.lastPrune < PRUNE_EVERY_MS) return
    const deltas = counter.take()
    try {
      this.db.transaction(() => {
        for (const [key, days] of deltas) {
          for (const [day, delta] of days) {
            const date = dateOf(day)
            for (const [field, n] of deltaFields(delta)) this.add.run(key, date, field, n)
            const stored = this.busiest.all(key, date) as { field: string, value: number }[]
            const known = Object.fromEntries(stored.map((r) => [r.field, r.value]))
            let count = known.bc ?? 0
            let minute = known.bm ?? 0
            for (const [m, n] of delta.minutes) {
              const total = this.addMinute.get(key, m, n) as number
              if (busier(total, m, count, minute)) [count, minute] = [total, m]
            }
            if (count !== known.bc || minute !== known.bm) {
              this.setField.run(key, date, 'bc', count)
              this.setField.run(key, date, 'bm', minute)
            }
          }
        }
        if (now - this.lastPrune >= PRUNE_EVERY_MS) this.prune(now)
      }).immediate()
    } catch (err) {
      counter.putBack(deltas)
      throw err
    }
  }

  /** Drops days no longer kept, and minute counts before yesterday (a flush after midnight may add to it). */
  prune (now: number) {
    this.pruneDays.run(dateOf(firstKeptDay(now, this.keepDays)))
    this.pruneMinutes.run((Math.floor(now / DAY_MS) - 1) * (DAY_MS / MINUTE_MS))
    this.lastPrune = now
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
  let rows: { day: string, field: string, value: number }[]
  try {
    rows = db.prepare('SELECT day, field, value FROM usage_days WHERE partner_id = ? AND day >= ? AND day <= ?')
      .all(key, fromDate, toDate) as typeof rows
  } catch (err) {
    if (/no such table/.test((err as Error).message)) return out // no service has run here yet
    throw err
  }
  for (const { day, field, value } of rows) {
    let fields = out.get(day)
    if (!fields) out.set(day, fields = {})
    fields[field] = value
  }
  return out
}
