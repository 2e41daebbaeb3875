// Step 3 of every partner request (contract section 5): the three rolling windows. Runs in
// onRequest after auth, so refused tokens count against nothing; /usage never reaches it.
// Counters are saved to control.db every COUNTER_SAVE_MS and at close (onClose hooks run last
// registered first, so before control.db closes), and restored at boot.
// The rows of each accepted request and its telemetry event are recorded by usage-record.ts.
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import type Database from 'better-sqlite3'
import { LocalStore, RateLimiter, type SecondBucket } from '../src/limits/limiter.ts'
import { SharedTelemetry, TelemetryFeed, type Telemetry } from '../src/usage/telemetry.ts'
import type { Redis } from 'ioredis'
import { FailoverStore } from '../src/limits/failover-store.ts'
import { RedisStore } from '../src/limits/redis-store.ts'

declare module 'fastify' {
  interface FastifyInstance {
    limiter: RateLimiter
    telemetry: Telemetry
    /** the shared state's health, when STATE_URL is set */
    sharedState?: FailoverStore
    /** Saves the counters now (also done every COUNTER_SAVE_MS and at close); never throws. */
    saveCounters (): void
  }
}

export interface RateLimitOptions {
  clock?: () => number
  saveMs: number
}

// Saved per partner and second: small upserts, however busy the partner (see LocalStore.restore).
const COUNTERS_DDL = `CREATE TABLE IF NOT EXISTS rate_buckets (
  partner_id TEXT NOT NULL, second INTEGER NOT NULL, requests INTEGER NOT NULL, rows INTEGER NOT NULL,
  PRIMARY KEY (partner_id, second)) WITHOUT ROWID`

/** A request's rows are known only when it is answered: seconds this recent are saved again. */
const RESAVE_MS = 10_000

/** Drops buckets that no window can reach any more. */
const prune = (db: Database.Database, now: number) =>
  db.prepare('DELETE FROM rate_buckets WHERE second < ?').run(Math.floor((now - 86_400_000) / 1000))

function restore (db: Database.Database, store: LocalStore, now: number): number {
  db.exec(COUNTERS_DDL)
  prune(db, now)
  const rows = db.prepare('SELECT partner_id, second, requests, rows FROM rate_buckets ORDER BY partner_id, second').all() as
    { partner_id: string, second: number, requests: number, rows: number }[]
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
 * Windows and telemetry in Redis (STATE_URL), behind a store that limits alone while Redis is
 * away. Redis keeps the counts, so nothing is saved to control.db.
 */
function sharedState (app: FastifyInstance, redis: Redis, clock: () => number) {
  const shared = new FailoverStore(redis, new RedisStore(redis), app.instance.id, app.log)
  app.addHook('onClose', () => shared.close())
  return { limiter: new RateLimiter(shared, clock), telemetry: new SharedTelemetry(redis, { log: app.log }), save: () => {}, shared }
}

/** Windows in process, saved to control.db every COUNTER_SAVE_MS and at close, restored at boot. */
function localState (app: FastifyInstance, options: RateLimitOptions, clock: () => number) {
  const store = new LocalStore()
  const db = app.partners.store.db
  const restored = restore(db, store, clock())
  app.log.info({ partners: restored }, 'rate-limit counters restored')

  const upsert = db.prepare('INSERT INTO rate_buckets (partner_id, second, requests, rows) VALUES (?, ?, ?, ?) ' +
    'ON CONFLICT (partner_id, second) DO UPDATE SET requests = excluded.requests, rows = excluded.rows')
  let savedUntil = 0 // seconds before this were saved and will not change
  let lastPrune = 0
  const save = () => {
    const now = clock()
    const dirty = store.takeDirty(savedUntil)
    if (dirty.length === 0) return
    try {
      db.transaction(() => {
        for (const { key, buckets } of dirty) {
          for (const b of buckets) upsert.run(key, b.second, b.requests, b.rows)
        }
        if (now - lastPrune > 600_000) {
          prune(db, now)
          lastPrune = now
        }
      })()
      savedUntil = Math.floor((now - RESAVE_MS) / 1000) * 1000
      app.controlDb.succeeded('counters')
    } catch (err) {
      for (const { key } of dirty) store.dirty.add(key) // try again next time, from the same second
      app.controlDb.failed('counters', err)
    }
  }
  const timer = setInterval(save, options.saveMs)
  timer.unref()
  app.addHook('onClose', async () => {
    clearInterval(timer)
    save()
  })
  return { limiter: new RateLimiter(store, clock), telemetry: new TelemetryFeed(), save, shared: undefined }
}

async function rateLimit (app: FastifyInstance, options: RateLimitOptions) {
  const clock = options.clock ?? Date.now
  const { limiter, telemetry, save, shared } = app.redis ? sharedState(app, app.redis, clock) : localState(app, options, clock)
  if (shared) app.decorate('sharedState', shared)
  app.decorate('saveCounters', save)
  app.decorate('limiter', limiter)
  app.decorate<Telemetry>('telemetry', telemetry)
}

export default fp(rateLimit, { name: 'rate-limit', dependencies: ['partners', 'health', 'reload', 'shared-state'] })
