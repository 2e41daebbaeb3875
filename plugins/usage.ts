// Usage: the limiter's three rolling windows per partner, the telemetry feed, and the counters'
// persistence. In process (saved to control.db every COUNTER_SAVE_MS and at close, restored at
// boot), or in Redis (STATE_URL) behind a store that limits alone while Redis is away. The partner
// routes count requests and record rows and events through these (src/routes/partner-api.ts).
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import type { Redis } from 'ioredis'
import { counterSaver, restoreCounters } from '../src/limits/counters.ts'
import { FailoverStore } from '../src/limits/failover-store.ts'
import { LocalStore, RateLimiter } from '../src/limits/limiter.ts'
import { RedisStore } from '../src/limits/redis-store.ts'
import { SharedTelemetry, TelemetryFeed, type Telemetry } from '../src/usage/telemetry.ts'

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

export interface UsageOptions {
  clock?: () => number
  saveMs: number
}

function sharedState (app: FastifyInstance, redis: Redis, clock: () => number) {
  const shared = new FailoverStore(redis, new RedisStore(redis), app.instance.id, app.log, { clock })
  app.addHook('onClose', () => shared.close())
  // Redis keeps the counts: nothing to save
  return { limiter: new RateLimiter(shared, clock), telemetry: new SharedTelemetry(redis, { log: app.log }), save: () => {}, shared }
}

function localState (app: FastifyInstance, options: UsageOptions, clock: () => number) {
  const store = new LocalStore()
  const db = app.partners.store.db
  app.log.info({ partners: restoreCounters(db, store, clock()) }, 'rate-limit counters restored')
  const saveNow = counterSaver(db, store, clock)
  const save = () => {
    try {
      saveNow()
      app.controlDb.succeeded('counters')
    } catch (err) {
      app.controlDb.failed('counters', err)
    }
  }
  const timer = setInterval(save, options.saveMs)
  timer.unref()
  // onClose hooks run last registered first: before control.db closes
  app.addHook('onClose', async () => {
    clearInterval(timer)
    save()
  })
  return { limiter: new RateLimiter(store, clock), telemetry: new TelemetryFeed(), save, shared: undefined }
}

async function usage (app: FastifyInstance, options: UsageOptions) {
  const clock = options.clock ?? Date.now
  const { limiter, telemetry, save, shared } = app.redis ? sharedState(app, app.redis, clock) : localState(app, options, clock)
  if (shared) app.decorate('sharedState', shared)
  app.decorate('saveCounters', save)
  app.decorate('limiter', limiter)
  app.decorate<Telemetry>('telemetry', telemetry)
}

export default fp(usage, { name: 'usage', dependencies: ['partners', 'health', 'reload', 'shared-state'] })
