// Usage: the limiter, the telemetry feed and the daily history, in process (control.db) or in Redis
// (STATE_URL), through which the partner routes count requests and record rows and events.
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import type { FailoverStore } from '../src/limits/failover-store.ts'
import type { RateLimiter } from '../src/limits/limiter.ts'
import type { Telemetry } from '../src/usage/telemetry.ts'
import { createUsageState } from '../src/usage/usage-state.ts'

declare module 'fastify' {
  interface FastifyInstance {
    limiter: RateLimiter
    telemetry: Telemetry
    /** the shared state's health, when STATE_URL is set */
    sharedState?: FailoverStore
    /**
     * Saves the counters, telemetry feed and history now; never throws, never rejects. Synchronous without
     * STATE_URL; with it, a promise of the history counts added to Redis.
     */
    saveCounters (): void | Promise<void>
  }
}

interface UsageOptions {
  clock?: () => number
  saveMs: number
  /** days of history kept (USAGE_HISTORY_DAYS) */
  historyDays: number
}

async function usage (app: FastifyInstance, options: UsageOptions) {
  const state = createUsageState({
    db: app.partners.store.db,
    redis: app.redis,
    instanceId: app.instance.id,
    log: app.log,
    controlDbHealth: app.controlDb,
    clock: options.clock ?? Date.now,
    saveMs: options.saveMs,
    historyDays: options.historyDays
  })
  if (state.failover) app.decorate('sharedState', state.failover)
  app.decorate('saveCounters', state.save)
  app.decorate('limiter', state.limiter)
  app.decorate<Telemetry>('telemetry', state.telemetry)
  // onClose hooks run last registered first: this one, once every request has been answered,
  // before control.db (partners) and the Redis connection (shared-state) close
  app.addHook('onClose', () => state.close())
}

export default fp(usage, { name: 'usage', dependencies: ['partners', 'health', 'reload', 'shared-state'] })
