// The in-process telemetry feed in control.db (without STATE_URL): saved with the rate-limit
// counters, restored at boot, read by the operator CLI. Only events not saved before are written,
// and each partner keeps the feed's size.
import type Database from 'better-sqlite3'
import { TELEMETRY_FEED_SIZE, type TelemetryEvent, type TelemetryFeed } from './telemetry.ts'

const TELEMETRY_DDL = `CREATE TABLE IF NOT EXISTS telemetry_events (
  partner_id TEXT NOT NULL, seq INTEGER NOT NULL, timestamp INTEGER NOT NULL, endpoint TEXT NOT NULL,
  status INTEGER NOT NULL, rows INTEGER NOT NULL, duration_ms REAL NOT NULL, dataset TEXT, cache TEXT NOT NULL,
  PRIMARY KEY (partner_id, seq)) WITHOUT ROWID`

/** Puts the saved feeds back into `feed`; the number of partners restored. */
export function restoreTelemetry (db: Database.Database, feed: TelemetryFeed): number {
  db.exec(TELEMETRY_DDL)
  const partners = db.prepare('SELECT partner_id AS key, max(seq) AS total FROM telemetry_events GROUP BY partner_id')
    .all() as { key: string, total: number }[]
  for (const { key, total } of partners) feed.restore(key, readSavedEvents(db, key, feed.size).reverse(), total)
  return partners.length
}

/** A function that saves the events recorded since its last call, in one transaction; throws on a failure. */
export function telemetrySaver (db: Database.Database, feed: TelemetryFeed): () => void {
  db.exec(TELEMETRY_DDL)
  const insert = db.prepare('INSERT OR REPLACE INTO telemetry_events ' +
    '(partner_id, seq, timestamp, endpoint, status, rows, duration_ms, dataset, cache) ' +
    'VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)')
  const trim = db.prepare('DELETE FROM telemetry_events WHERE partner_id = ? AND seq <= ?')
  return () => {
    const unsaved = feed.unsaved()
    if (unsaved.length === 0) return
    db.transaction(() => {
      for (const { key, events, total } of unsaved) {
        const first = total - events.length + 1
        events.forEach((e, i) => {
          insert.run(key, first + i, e.timestamp, e.endpoint, e.status, e.rows, e.durationMs, e.dataset, e.cache)
        })
        trim.run(key, total - feed.size)
      }
    })()
    for (const { key, total } of unsaved) feed.markSaved(key, total)
  }
}

/** A partner's saved feed, newest first (the operator CLI; read only). */
export function readSavedEvents (db: Database.Database, key: string, size = TELEMETRY_FEED_SIZE): TelemetryEvent[] {
  try {
    return db.prepare('SELECT timestamp, endpoint, status, rows, duration_ms AS durationMs, dataset, cache ' +
      'FROM telemetry_events WHERE partner_id = ? ORDER BY seq DESC LIMIT ?').all(key, size) as TelemetryEvent[]
  } catch (err) {
    if (/no such table/.test((err as Error).message)) return [] // no service has run here yet
    throw err
  }
}
