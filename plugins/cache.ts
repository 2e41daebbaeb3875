// The response cache (contract section 5): identical requests within CACHE_TTL_SECONDS are
// answered from an LRU of serialised bodies. The key holds the dataset and its version, the
// route, the validated parameters and the partner's permission fingerprint, never the token.
// Only 200s are stored; every 200 carries an ETag and Cache-Control, and a matching
// If-None-Match gets 304. Runs after the limiter, so cached answers count; emptied on reload.
import { createHash } from 'node:crypto'
import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { LRUCache } from 'lru-cache'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** answers of this route may be cached */
    cache?: boolean
  }
  interface FastifyRequest {
    cacheKey?: string
  }
}

interface Entry {
  body: string
  etag: string
  rows: number
}

export const etagOf = (body: string) => `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`

/** If-None-Match holds the tag (or *); weak comparison, as RFC 9110 asks for GET. */
function matches (ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false
  if (ifNoneMatch.trim() === '*') return true
  return ifNoneMatch.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag)
}

function keyOf (request: FastifyRequest): string {
  return [
    request.dataset!.version,
    request.routeOptions.url,
    JSON.stringify(request.params),
    JSON.stringify(request.query),
    request.partner.fingerprint
  ].join('\u0000')
}

async function cache (app: FastifyInstance, options: { ttlSeconds: number, maxEntries: number, maxMb: number }) {
  const enabled = options.ttlSeconds > 0
  const lru = new LRUCache<string, Entry>({
    max: options.maxEntries,
    maxSize: options.maxMb * 1024 * 1024,
    sizeCalculation: (entry, key) => 2 * (entry.body.length + key.length) + 200, // UTF-16 strings, and the entry itself
    ttl: Math.max(1, options.ttlSeconds) * 1000,
    ttlAutopurge: false
  })
  const cacheControl = `private, max-age=${options.ttlSeconds}`
  app.datasets.onSwap(() => lru.clear())
  app.decorateRequest('cacheKey', undefined)

  app.addHook('preHandler', async (request, reply) => {
    if (!request.routeOptions.config.cache || !enabled) return
    const key = keyOf(request)
    const entry = lru.get(key)
    if (!entry) {
      request.cacheKey = key
      request.cacheStatus = 'miss'
      return
    }
    request.cacheStatus = 'hit'
    request.rows = entry.rows
    reply.header('etag', entry.etag).header('cache-control', cacheControl)
    if (matches(request.headers['if-none-match'], entry.etag)) return reply.code(304).send()
    return reply.type('application/json; charset=utf-8').send(entry.body)
  })

  app.addHook('onSend', async (request, reply, payload) => {
    if (!request.routeOptions.config.cache) return payload
    if (reply.statusCode !== 200 || typeof payload !== 'string') {
      if (reply.statusCode !== 304) reply.header('cache-control', 'no-store')
      return payload
    }
    if (request.cacheStatus === 'hit') return payload
    const etag = etagOf(payload)
    reply.header('etag', etag).header('cache-control', cacheControl)
    if (request.cacheKey !== undefined) lru.set(request.cacheKey, { body: payload, etag, rows: request.rows })
    if (matches(request.headers['if-none-match'], etag)) {
      reply.code(304)
      return ''
    }
    return payload
  })
}

export default fp(cache, { name: 'cache', dependencies: ['datasets', 'rate-limit'] })
