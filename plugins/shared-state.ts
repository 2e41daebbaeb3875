// The connection to the shared state (STATE_URL, Redis) that every plugin using it shares. Commands fail fast
// rather than queue, so that a request never waits for Redis to come back (the limiter's failover takes over).
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import type { Redis } from 'ioredis'
import { withoutCredentials } from '../src/http/redact.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /** the shared state's connection; undefined without STATE_URL */
    redis?: Redis
  }
}

async function sharedState (app: FastifyInstance, options: { stateUrl?: string }) {
  if (!options.stateUrl) return
  // loaded only here: a service without STATE_URL does not pay for the client's code at boot
  const { Redis } = await import('ioredis')
  const redis: Redis = new Redis(options.stateUrl, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: 500,
    connectTimeout: 2_000,
    retryStrategy: (times) => Math.min(200 * times, 2_000),
    lazyConnect: true
  })
  redis.on('error', () => {}) // reported once by those who use it, not per reconnection attempt
  try {
    await redis.connect()
  } catch (err) {
    redis.disconnect()
    throw new Error(`cannot reach the shared state at STATE_URL (${withoutCredentials(options.stateUrl)}): ` +
      (err as Error).message)
  }
  app.decorate('redis', redis)
  // registered first, so closed last: the other plugins' onClose hooks still have it
  app.addHook('onClose', async () => { redis.disconnect() })
}

export default fp(sharedState, { name: 'shared-state' })
