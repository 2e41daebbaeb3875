// Usage: the limiter's three rolling windows per partner, the telemetry feed, the daily history,
// and their persistence. In process (saved to control.db every COUNTER_SAVE_MS and at close,
// restored at boot), or in Redis (STATE_URL) behind a store that limits alone while Redis is away,
// each instance adding its history counts every second. The partner routes count requests and
// record rows and events through these (src/routes/partner-api.ts); every event recorded goes to
// the history too (src/usage/telemetry.ts).
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import type { Redis } from 'ioredis'
import { counterSaver, restoreCounters } from '../src/limits/counters.ts'
import { FailoverStore } from '../src/limits/failover-store.ts'
import { LocalStore, RateLimiter } from '../src/limits/limiter.ts'
import { RedisStore } from '../src/limits/redis-store.ts'
import { outageReporter } from '../src/health/outage.ts'
import { HistoryCounter } from '../src/usage/history.ts'
import { RedisHistory } from '../src/usage/history-redis.ts'
import { SqliteHistory } from '../src/usage/history-sqlite.ts'
import { SharedTelemetry, TelemetryFeed, type Telemetry } from '../src/usage/telemetry.ts'
import { restoreTelemetry, telemetrySaver } from '../src/usage/telemetry-store.ts'

declare module 'fastify' {
  interface FastifyInstance {
    limiter: RateLimiter
    telemetry: Telemetry
    /** the shared state's health, when STATE_URL is set */
    sharedState?: FailoverStore
    /**
     * Saves the counters, the telemetry feed and the history now (also done every COUNTER_SAVE_MS
     * and at close; with STATE_URL, starts adding the history counts to Redis); never throws.
     */
    saveCounters (): void
  }
}

export interface UsageOptions {
  clock?: () => number
  saveMs: number
  /** days of history kept (USAGE_HISTORY_DAYS) */
  historyDays: number
}

/** How often each instance adds its history counts to Redis. */
const SHARED_HISTORY_FLUSH_MS = 1000

function sharedState (app: FastifyInstance, redis: Redis, options: UsageOptions, clock: () => number) {
  const shared = new FailoverStore(redis, new RedisStore(redis), app.instance.id, app.log, { clock })
  app.addHook('onClose', () => shared.close())
  const counter = new HistoryCounter()
  const history = new RedisHistory(redis, options.historyDays, app.instance.id)
  const report = outageReporter(
    (err) => app.log.warn({ err }, 'usage history cannot be added to the shared state (Redis); counted in this process meanwhile'),
    () => app.log.info({}, 'usage history is added to the shared state (Redis) again'))
  // never rejects: a failure is reported (once per outage) and its counts kept for the next flush
  const flush = () => history.flush(counter).then(() => report(), report)
  let flushing: Promise<void> | undefined
  // one flush at a time: a batch is never sent twice at once
  const save = () => {
    if (!flushing) flushing = flush().finally(() => { flushing = undefined })
    return flushing
  }
  const timer = setInterval(save, SHARED_HISTORY_FLUSH_MS)
  timer.unref()
  // before the connection closes (shared-state's hook runs last): every request has been answered
  app.addHook('onClose', async () => {
    clearInterval(timer)
    await flushing
    // batches kept from a failed flush go first, the counts since in the flush after
    for (let i = 0; i < 2 && (history.unsent > 0 || !counter.empty); i++) await save()
    if (history.unsent > 0 || !counter.empty) app.log.error({}, 'usage history counts could not be added to the shared state (Redis) at close; they are lost')
  })
  const telemetry = new SharedTelemetry(redis, { log: app.log, history: counter })
  // Redis keeps the windows and telemetry: only the history is added
  return { limiter: new RateLimiter(shared, clock), telemetry, save, shared }
}

function localState (app: FastifyInstance, options: UsageOptions, clock: () => number) {
  const store = new LocalStore()
  const counter = new HistoryCounter()
  const telemetry = new TelemetryFeed(undefined, { history: counter })
  const db = app.partners.store.db
  app.log.info({ partners: restoreCounters(db, store, clock()), feeds: restoreTelemetry(db, telemetry) }, 'rate-limit counters and telemetry restored')
  const history = new SqliteHistory(db, options.historyDays)
  const saveCounters = counterSaver(db, store, clock)
  const saveTelemetry = telemetrySaver(db, telemetry)
  const save = () => {
    let failure: unknown
    // each keeps what it could not write for the next save
    for (const work of [saveCounters, saveTelemetry, () => history.flush(counter, clock())]) {
      try {
        work()
      } catch (err) {
        failure ??= err
      }
    }
    if (failure === undefined) app.controlDb.succeeded('counters')
    else app.controlDb.failed('counters', failure)
  }
  const timer = setInterval(save, options.saveMs)
  timer.unref()
  // onClose hooks run last registered first: before control.db closes
  app.addHook('onClose', async () => {
    clearInterval(timer)
    save()
  })
  return { limiter: new RateLimiter(store, clock), telemetry, save, shared: undefined }
}

async function usage (app: FastifyInstance, options: UsageOptions) {
  const clock = options.clock ?? Date.now
  const { limiter, telemetry, save, shared } = app.redis ? sharedState(app, app.redis, options, clock) : localState(app, options, clock)
  if (shared) app.decorate('sharedState', shared)
  app.decorate('saveCounters', save)
  app.decorate('limiter', limiter)
  app.decorate<Telemetry>('telemetry', telemetry)
}

export default fp(usage, { name: 'usage', dependencies: ['partners', 'health', 'reload', 'shared-state'] })
