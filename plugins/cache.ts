// The response cache (contract section 5): identical requests within CACHE_TTL_SECONDS are
// answered from an LRU of serialised bodies. The key holds the dataset and its version, the
// route, the validated parameters and the partner's permission fingerprint, never the token.
// Only 200s are stored; every 200 carries an ETag and Cache-Control, and a matching
// If-None-Match gets 304. Runs after the limiter, so cached answers count; emptied on reload.
// Hooks are callback-style and bodies are kept as Buffers: this is the hot path.
import { hash } from 'node:crypto'
import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { LRUCache } from 'lru-cache'
import { canonicalOf } from '../src/query.ts'
import { JSON_TYPE, sendJson } from '../src/records.ts'
import { answers } from '../src/answer-pool.ts'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** answers of this route may be cached */
    cache?: boolean
  }
  interface FastifyRequest {
    cacheKey?: string
  }
  interface FastifyInstance {
    /** the answers cache (read it; only this plugin writes it) */
    responseCache: LRUCache<string, CachedAnswer>
  }
}

export interface CachedAnswer {
  body: Buffer
  /** Content-Type: JSON, or GeoJSON (format=geojson) */
  type: string
  etag: string
  rows: number
}

/** Bump when the serialised form of any answer changes, so old ETags stop matching. */
const SERIALISATION_VERSION = '1'

/** If-None-Match holds the tag (or *); weak comparison, as RFC 9110 asks for GET. */
export function etagMatches (ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false
  if (ifNoneMatch.trim() === '*') return true
  return ifNoneMatch.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag)
}

/** Everything an answer depends on; the same key always means the same bytes. */
function keyOf (request: FastifyRequest): string {
  return `${request.dataset!.version}\u0000${request.route.url}\u0000${canonicalOf(request.params)}\u0000${canonicalOf(request.query)}\u0000${request.partner.fingerprint}`
}

async function cache (app: FastifyInstance, options: { ttlSeconds: number, maxEntries: number, maxMb: number, pilotAppUrl: string }) {
  const enabled = options.ttlSeconds > 0
  const lru = new LRUCache<string, CachedAnswer>({
    max: options.maxEntries,
    maxSize: options.maxMb * 1024 * 1024,
    sizeCalculation: (entry, key) => answers.footprint(entry.body) + 2 * key.length + 200,
    ttl: Math.max(1, options.ttlSeconds) * 1000,
    ttlAutopurge: false,
    // an entry holds a reference on its pooled body (taken when stored, below)
    dispose: (entry) => answers.release(entry.body)
  })
  const cacheControl = `private, max-age=${options.ttlSeconds}`
  // The ETag is a digest of the key (cheaper than of the body, and as exact: the key determines
  // the body), salted with what shapes every body but is not in the key.
  const salt = `${SERIALISATION_VERSION}\u0000${options.pilotAppUrl}\u0000`
  const etagOf = (key: string) => `"${hash('sha1', salt + key, 'base64url')}"`
  app.datasets.onSwap(() => lru.clear())
  app.decorate('responseCache', lru)
  app.decorateRequest('cacheKey', undefined)

  app.addHook('preHandler', (request, reply, done) => {
    if (!request.route.config.cache) return done()
    const key = keyOf(request)
    request.cacheKey = key
    const entry = enabled ? lru.get(key) : undefined
    if (!entry) {
      request.cacheStatus = 'miss'
      return done()
    }
    request.cacheStatus = 'hit'
    request.rows = entry.rows
    reply.header('etag', entry.etag).header('cache-control', cacheControl)
    if (etagMatches(request.headers['if-none-match'], entry.etag)) reply.code(304).send()
    else {
      answers.retain(entry.body) // the request's own reference: the entry may go meanwhile
      sendJson(reply, entry.body, entry.type)
    }
    // answered: done() is not called
  })

  app.addHook('onSend', (request, reply, payload, done) => {
    if (!request.route.config.cache) return done(null, payload)
    if (reply.statusCode !== 200 || request.cacheKey === undefined) {
      if (reply.statusCode !== 304) reply.header('cache-control', 'no-store')
      return done(null, payload)
    }
    if (request.cacheStatus === 'hit') return done(null, payload)
    const body = typeof payload === 'string' ? Buffer.from(payload) : payload as Buffer
    const etag = etagOf(request.cacheKey)
    reply.header('etag', etag).header('cache-control', cacheControl)
    if (enabled) {
      answers.retain(body)
      lru.set(request.cacheKey, { body, type: String(reply.getHeader('content-type') ?? JSON_TYPE), etag, rows: request.rows })
    }
    if (etagMatches(request.headers['if-none-match'], etag)) {
      reply.code(304)
      return done(null, '')
    }
    done(null, body)
  })
}

export default fp(cache, { name: 'cache', dependencies: ['datasets', 'rate-limit', 'route-config'] })
