// Usage: the limiter, the telemetry feed and the daily history (src/usage/usage-state.ts).
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
    /** Saves the counters, telemetry feed and history now; never throws, never rejects. */
    saveCounters (): void | Promise<void>
  }
}

async function usage (app: FastifyInstance, options: { clock?: () => number, saveMs: number, historyDays: number }) {
  const state = createUsageState({
    ...options,
    db: app.partners.store.db,
    redis: app.redis,
    instanceId: app.instance.id,
    log: app.log,
    controlDbHealth: app.controlDb,
    clock: options.clock ?? Date.now
  })
  if (state.failover) app.decorate('sharedState', state.failover)
  app.decorate('saveCounters', state.save)
  app.decorate('limiter', state.limiter)
  app.decorate<Telemetry>('telemetry', state.telemetry)
  // onClose hooks run last registered first: this one before control.db and Redis close
  app.addHook('onClose', () => state.close())
}

export default fp(usage, { name: 'usage', dependencies: ['partners', 'health', 'reload', 'shared-state'] })
