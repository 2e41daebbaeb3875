// The in-process windows' counters in control.db: saved per partner and second (small upserts, however busy the
// partner; see LocalStore.restore), restored at boot, so a restart does not give a partner a fresh day.
import type Database from 'better-sqlite3'
import { DAY_MS } from './accept-log.ts'
import type { LocalStore, SecondBucket } from './limiter.ts'

const COUNTERS_DDL = `CREATE TABLE IF NOT EXISTS rate_buckets (
  partner_id TEXT NOT NULL, second INTEGER NOT NULL, requests INTEGER NOT NULL, rows INTEGER NOT NULL,
  PRIMARY KEY (partner_id, second)) WITHOUT ROWID`

/** A request's rows are known only when it is answered: seconds this recent are saved again. */
const RESAVE_MS = 10_000
const PRUNE_EVERY_MS = 600_000

/** Drops buckets that no window can reach any more. */
const prune = (db: Database.Database, now: number) =>
  db.prepare('DELETE FROM rate_buckets WHERE second < ?').run(Math.floor((now - DAY_MS) / 1000))

/** Puts the saved counters back into `store`; the number of partners restored. */
export function restoreCounters (db: Database.Database, store: LocalStore, now: number): number {
  db.exec(COUNTERS_DDL)
  prune(db, now)
  return loadCounters(db, store, now)
}

/**
 * Loads the saved counters (of one partner, or all) into `store` without writing anything: the
 * operator CLI reads them so while the service runs. The number of partners loaded.
 */
export function loadCounters (db: Database.Database, store: LocalStore, now: number, partnerId?: string): number {
  let rows: { partner_id: string, second: number, requests: number, rows: number }[]
  const select = 'SELECT partner_id, second, requests, rows FROM rate_buckets'
  try {
    rows = partnerId === undefined
      ? db.prepare(`${select} ORDER BY partner_id, second`).all() as typeof rows
      : db.prepare(`${select} WHERE partner_id = ? ORDER BY second`).all(partnerId) as typeof rows
  } catch (err) {
    if (/no such table/.test((err as Error).message)) return 0 // no service has run here yet
    throw err
  }
  const byPartner = new Map<string, SecondBucket[]>()
  for (const r of rows) {
    let list = byPartner.get(r.partner_id)
    if (!list) byPartner.set(r.partner_id, list = [])
    list.push({ second: r.second, requests: r.requests, rows: r.rows })
  }
  for (const [partner, buckets] of byPartner) store.restore(partner, buckets, now)
  return byPartner.size
}

/**
 * A function that saves what changed in `store` since its last call, in one transaction. On a
 * failure (it throws) the changed partners stay marked, to be saved from the same second next time.
 */
export function counterSaver (db: Database.Database, store: LocalStore, clock: () => number): () => void {
  const upsert = db.prepare('INSERT INTO rate_buckets (partner_id, second, requests, rows) VALUES (?, ?, ?, ?) ' +
    'ON CONFLICT (partner_id, second) DO UPDATE SET requests = excluded.requests, rows = excluded.rows')
  let savedUntil = 0 // seconds before this were saved and will not change
  let lastPrune = 0
  return () => {
    const now = clock()
    const dirty = store.takeDirty(savedUntil)
    if (dirty.length === 0) return
    try {
      db.transaction(() => {
        for (const { key, buckets } of dirty) {
          for (const b of buckets) upsert.run(key, b.second, b.requests, b.rows)
        }
        if (now - lastPrune > PRUNE_EVERY_MS) {
          prune(db, now)
          lastPrune = now
        }
      })()
      savedUntil = Math.floor((now - RESAVE_MS) / 1000) * 1000
    } catch (err) {
      for (const { key, buckets } of dirty) if (buckets.length > 0) store.markDirty(key, buckets[0].second * 1000)
      throw err
    }
  }
}
