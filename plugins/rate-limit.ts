// Step 3 of every partner request (contract section 5): the three rolling windows. Runs in
// onRequest after auth, so refused tokens count against nothing; /usage never reaches it.
// Counters are saved to control.db every COUNTER_SAVE_MS and at close (onClose hooks run last
// registered first, so before control.db closes), and restored at boot.
// Telemetry events and the rows of each accepted request are recorded when the answer is sent.
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import type Database from 'better-sqlite3'
import { ApiError } from '../src/errors.ts'
import { LocalStore, RateLimiter, rateLimitHeaders, retryAfterSeconds, type HitResult } from '../src/limits/limiter.ts'
import { TelemetryFeed } from '../src/usage/telemetry.ts'

declare module 'fastify' {
  interface FastifyInstance {
    limiter: RateLimiter
    telemetry: TelemetryFeed
  }
  interface FastifyRequest {
    /** the limiter's entry of this request, when it was accepted */
    limitSeq?: number
    /** records in the answer (for `rows`) */
    rows: number
    cacheStatus: 'hit' | 'miss' | 'none'
  }
}

export interface RateLimitOptions {
  clock?: () => number
  saveMs: number
}

const COUNTERS_DDL = `CREATE TABLE IF NOT EXISTS rate_logs (
  partner_id TEXT PRIMARY KEY, saved_at INTEGER NOT NULL, entries BLOB NOT NULL)`

function restore (db: Database.Database, store: LocalStore, now: number): number {
  db.exec(COUNTERS_DDL)
  const rows = db.prepare('SELECT partner_id, entries FROM rate_logs').all() as { partner_id: string, entries: Buffer }[]
  for (const row of rows) {
    const flat = new Float64Array(row.entries.buffer.slice(row.entries.byteOffset, row.entries.byteOffset + row.entries.byteLength))
    store.restore(row.partner_id, flat, now)
  }
  return rows.length
}

async function rateLimit (app: FastifyInstance, options: RateLimitOptions) {
  const clock = options.clock ?? Date.now
  const store = new LocalStore()
  const limiter = new RateLimiter(store, clock)
  const telemetry = new TelemetryFeed()
  const db = app.partners.store.db
  const restored = restore(db, store, clock())
  app.log.info({ partners: restored }, 'rate-limit counters restored')

  const upsert = db.prepare('INSERT INTO rate_logs (partner_id, saved_at, entries) VALUES (?, ?, ?) ' +
    'ON CONFLICT (partner_id) DO UPDATE SET saved_at = excluded.saved_at, entries = excluded.entries')
  let saveFailing = false
  const save = () => {
    const dirty = store.takeDirty()
    if (dirty.length === 0) return
    try {
      const now = clock()
      db.transaction(() => {
        for (const { key, entries } of dirty) upsert.run(key, now, Buffer.from(new Float64Array(entries).buffer))
      })()
      if (saveFailing) app.log.info('rate-limit counters are saved to control.db again')
      saveFailing = false
    } catch (err) {
      for (const { key } of dirty) store.dirty.add(key) // try again next time
      if (!saveFailing) app.log.error({ err }, 'rate-limit counters could not be saved to control.db; serving on, retrying')
      saveFailing = true
    }
  }
  const timer = setInterval(save, options.saveMs)
  timer.unref()

  app.decorate('limiter', limiter)
  app.decorate('telemetry', telemetry)
  app.decorateRequest('rows', 0)
  app.decorateRequest('limitSeq', undefined)
  app.decorateRequest('cacheStatus', 'none')

  app.addHook('onRequest', (request, reply, done) => {
    const endpoint = request.routeOptions.config.endpoint
    if (endpoint === undefined || endpoint === 'usage') return done()
    const apply = (result: HitResult & { now: number }) => {
      reply.headers(rateLimitHeaders(result.windows, result.now))
      if (!result.allowed) {
        const retryAfter = retryAfterSeconds(result.retryAfterMs!)
        reply.header('retry-after', String(retryAfter))
        return done(new ApiError('svc_partner_api_rate_limited', { window: result.refusedBy, retry_after: retryAfter }))
      }
      request.limitSeq = result.seq
      done()
    }
    const result = limiter.hit(request.partner.id, request.partner.limits)
    if (result instanceof Promise) result.then(apply, done)
    else apply(result)
  })

  app.addHook('onResponse', (request, reply, done) => {
    done()
    const endpoint = request.routeOptions.config.endpoint
    if (endpoint === undefined || !request.partner) return
    const rows = reply.statusCode === 200 ? request.rows : 0
    if (request.limitSeq !== undefined && rows > 0) {
      const set = limiter.setRows(request.partner.id, request.limitSeq, rows)
      if (set instanceof Promise) set.catch((err) => app.log.error({ err }, 'rows could not be recorded'))
    }
    if (endpoint === 'usage') return
    telemetry.record(request.partner.id, {
      timestamp: clock(),
      endpoint,
      status: reply.statusCode,
      rows,
      durationMs: Math.round(reply.elapsedTime * 100) / 100,
      dataset: request.dataset?.name ?? null,
      cache: request.cacheStatus
    })
  })

  app.addHook('onClose', async () => {
    clearInterval(timer)
    save()
  })
}

export default fp(rateLimit, { name: 'rate-limit', dependencies: ['auth', 'partners'] })
