// The response cache (contract section 5): identical requests within CACHE_TTL_SECONDS are
// answered from an LRU of serialised bodies. The key holds the dataset and its version, the
// route, the validated parameters and the partner's permission fingerprint, never the token.
// Only 200s are stored; every 200 carries an ETag and Cache-Control, and a matching
// If-None-Match gets 304. Runs after the limiter, so cached answers count; emptied on reload.
// Hooks are callback-style and bodies are kept as Buffers: this is the hot path.
//
// A repeated request is found before validation: an alias memo maps the URL as it came (without
// its token) to the normalised key and what of the partner it was made for, so a hit skips
// parsing and checking the parameters. An alias is made on a URL's first hit; the entry is still
// looked up by its normalised key. A URL asked by partners of different permissions keeps the
// last one's alias; the others take the normal way, still to a hit.
import { hash } from 'node:crypto'
import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { LRUCache } from 'lru-cache'
import { canonicalOf } from '../src/query.ts'
import { JSON_TYPE, sendJson } from '../src/records.ts'
import { answers } from '../src/answer-pool.ts'
import { datasetFor } from '../src/partners/permissions.ts'
import type { DatasetName } from '../src/sites/dataset-file.ts'
import { TOKEN_PREFIX } from '../src/partners/tokens.ts'
import type { Dataset } from '../src/sites/dataset.ts'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** answers of this route may be cached */
    cache?: boolean
  }
  interface FastifyRequest {
    cacheKey?: string
    /** the URL as it came without its token, for the alias memo (undefined: not memoised) */
    cacheAlias?: string
  }
  interface FastifyInstance {
    /** the answers cache (read it; only this plugin writes it) */
    responseCache: LRUCache<string, CachedAnswer>
    /** URL as it came, without its token → normalised key (read it; only this plugin writes it) */
    responseCacheAliases: LRUCache<string, CacheAlias>
  }
}

export interface CachedAnswer {
  /** the dataset the answer was made from */
  dataset: Dataset
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

/** Longest URL memoised: answers' URLs are far shorter, and junk parameters must not fill memory. */
const MAX_ALIAS_URL = 512

/**
 * The URL as it came, without its token (api_key=…): the alias memo's key. undefined when the URL
 * is long, has a %-escape (which could hide a token or a parameter's name) or anything shaped like
 * a token outside api_key. Not redactUrl (src/redact.ts): that keeps a URL readable, replacing
 * secret-looking values and token-shaped text in place, so two URLs that differ there read alike;
 * an alias must keep everything that can shape the answer.
 */
export function aliasUrlOf (url: string): string | undefined {
  if (url.length > MAX_ALIAS_URL || url.includes('%')) return undefined
  let at = url.indexOf('api_key')
  while (at !== -1) {
    const before = url.charCodeAt(at - 1)
    const after = url.charCodeAt(at + 7)
    if ((before === 0x3f || before === 0x26) && (after === 0x3d || after === 0x26 || at + 7 === url.length)) {
      // the parameter goes, with one of the separators around it
      const end = url.indexOf('&', at)
      url = end === -1 ? url.slice(0, at - 1) : url.slice(0, at) + url.slice(end + 1)
      at = url.indexOf('api_key', at)
    } else at = url.indexOf('api_key', at + 7)
  }
  return url.includes(TOKEN_PREFIX) ? undefined : url
}

/** What an alias stands for: the normalised key, for a partner of these permissions and dataset. */
export interface CacheAlias {
  /** the partner's permission fingerprint */
  fingerprint: string
  /** the dataset the partner is served from without demo= (demo= is in the URL) */
  dataset: DatasetName
  key: string
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
  // as many aliases as entries: an alias costs a URL of up to 512 characters and a small object
  const aliases = new LRUCache<string, CacheAlias>({ max: options.maxEntries })
  // Both are emptied when a dataset is swapped, and an answer is stored only while its dataset is
  // in service (below): so every entry, and every alias to one, is of the datasets in service.
  app.datasets.onSwap(() => {
    lru.clear()
    aliases.clear()
  })
  app.decorate('responseCache', lru)
  app.decorate('responseCacheAliases', aliases)
  app.decorateRequest('cacheKey', undefined)
  app.decorateRequest('cacheAlias', undefined)

  const serve = (request: FastifyRequest, reply: FastifyReply, key: string, entry: CachedAnswer) => {
    request.cacheKey = key
    request.cacheStatus = 'hit'
    request.rows = entry.rows
    request.dataset = entry.dataset
    reply.header('etag', entry.etag).header('cache-control', cacheControl)
    if (etagMatches(request.headers['if-none-match'], entry.etag)) reply.code(304).send()
    else {
      answers.retain(entry.body) // the request's own reference: the entry may go meanwhile
      sendJson(reply, entry.body, entry.type)
    }
  }

  // After the token check and the limiter (their onRequest hooks are registered before this one):
  // a repeated request is answered here, before its parameters are parsed and checked.
  app.addHook('onRequest', (request, reply, done) => {
    if (!enabled || !request.route.config.cache) return done()
    const url = aliasUrlOf(request.url)
    request.cacheAlias = url
    const alias = url === undefined ? undefined : aliases.get(url)
    if (alias === undefined || alias.fingerprint !== request.partner.fingerprint || alias.dataset !== datasetFor(request.partner, false)) return done()
    const entry = lru.get(alias.key)
    if (entry === undefined) return done()
    serve(request, reply, alias.key, entry)
    // answered: done() is not called
  })

  app.addHook('preHandler', (request, reply, done) => {
    if (!request.route.config.cache) return done()
    const key = keyOf(request)
    request.cacheKey = key
    const entry = enabled ? lru.get(key) : undefined
    if (!entry) {
      request.cacheStatus = 'miss'
      return done()
    }
    // Asked again: from now on the URL as it came leads here. Aliases are made on a first hit, not
    // when an answer is stored, so URLs asked once (most, under a load of misses) make none.
    if (request.cacheAlias !== undefined) {
      aliases.set(request.cacheAlias, { fingerprint: request.partner.fingerprint, dataset: datasetFor(request.partner, false), key })
    }
    serve(request, reply, key, entry)
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
    // Not when the dataset was swapped while this answer was made: its entry would outlive the
    // swap's emptying, and an alias could lead to it. Today a dataset's pick (preHandler) and the
    // store run in one synchronous pass, so this holds by itself; the check keeps it if a handler
    // ever waits.
    const dataset = request.dataset!
    if (enabled && app.datasets.get(dataset.name) === dataset) {
      answers.retain(body)
      lru.set(request.cacheKey, { dataset, body, type: String(reply.getHeader('content-type') ?? JSON_TYPE), etag, rows: request.rows })
    }
    if (etagMatches(request.headers['if-none-match'], etag)) {
      reply.code(304)
      return done(null, '')
    }
    done(null, body)
  })
}

export default fp(cache, { name: 'cache', dependencies: ['datasets', 'rate-limit', 'route-config'] })
