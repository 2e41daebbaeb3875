// The partner API: every route that takes a token, in a context of its own at API_PREFIX (nothing here reaches
// the public routes). Each route's config names it; its pipeline is attached as declared, in checking order:
//   onRequest   token → partner → status → endpoint open (refused: counted nowhere); then the windows if counted
//   preHandler  the dataset (after validation, so demo= is known); then the cache lookup
//   onSend      the cache's store and ETag/304 (uncached: no-store and compression); then the usage record
import fp from 'fastify-plugin'
import type {
  FastifyInstance, FastifyReply, FastifyRequest, RouteOptions,
  onRequestHookHandler, onSendHookHandler, preHandlerHookHandler
} from 'fastify'
import { ApiError, type UnusableKey } from '../errors.ts'
import { rateLimitHeaders, retryAfterSeconds, type HitResult } from '../limits/limiter.ts'
import { datasetFor, endpointOpen, type Endpoint, type PartnerProfile } from '../partners/permissions.ts'
import { canonicalOf } from '../http/query.ts'
import { JSON_TYPE } from '../answers/records.ts'
import { cacheKeyOf, etagMatches, type CachedAnswer } from '../cache/response-cache.ts'
import { routeFlags } from '../schemas/responses.ts'
import { compress, encodedEtag, encodingFor } from '../http/encoding.ts'
import type { Dataset } from '../sites/dataset.ts'
import sitesRoutes from './sites.ts'
import discoveryRoutes from './discovery.ts'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** the partner endpoint a route serves (its feature switch and telemetry name) */
    endpoint?: Endpoint
    /** answers of this route may be cached (else they are no-store); either way compressed when asked */
    cache?: boolean
    /** false: never counted against the limits nor recorded as usage (/usage, /categories, /tags) */
    counted?: boolean
  }
  interface FastifyRequest {
    partner: PartnerProfile
    /** the dataset that answers this request, fixed once so a reload mid-request changes nothing */
    dataset?: Dataset
    /** the limiter's entry of this request, when it was accepted */
    limitSeq?: number
    /** records in the answer (for `rows`) */
    rows: number
    cacheStatus: 'hit' | 'miss' | 'none'
    cacheKey?: string
    /** the answer's pooled buffer, given back in onResponse */
    pooledBody: Buffer | undefined
  }
  interface FastifyReply {
    /** Sends serialised JSON (or GeoJSON, by `type`) as it is. */
    sendAnswer (body: Buffer, type?: string): void
  }
}

const BEARER = /^Bearer[ \t]+([^\s]+)[ \t]*$/i

const unusable = (reason: UnusableKey) => new ApiError('svc_partner_api_invalid_key', { reason })

/**
 * The token of the Authorization headers, every one as sent (Node keeps only the first in
 * `headers`, so a second with another token would go unseen), or why they cannot be used.
 */
function headerToken (rawHeaders: string[]): string | undefined | ApiError {
  let token: string | undefined
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]
    if (name.length !== 13 || name.toLowerCase() !== 'authorization') continue
    const match = BEARER.exec(rawHeaders[i + 1])
    if (!match) return unusable('not_bearer')
    if (token !== undefined && match[1] !== token) return unusable('keys_differ')
    token = match[1]
  }
  return token
}

/** The token from api_key or Authorization: Bearer headers, or the error of none or of an unusable one. */
function tokenOf (request: FastifyRequest): string | ApiError {
  const fromQuery = (request.query as Record<string, unknown>).api_key
  const fromHeader = request.headers.authorization === undefined ? undefined : headerToken(request.raw.rawHeaders)
  if (typeof fromHeader === 'object') return fromHeader
  if (fromQuery === undefined || fromQuery === '') return fromHeader ?? new ApiError('svc_partner_api_missing_key')
  if (typeof fromQuery !== 'string') return unusable('api_key_repeated')
  if (fromHeader !== undefined && fromHeader !== fromQuery) return unusable('keys_differ')
  return fromQuery
}

async function partnerApi (app: FastifyInstance) {
  // reply.sendAnswer, and the pool's buffer given back once the response is done (or failed)
  const pool = app.answerPool
  app.decorateRequest('pooledBody', undefined)
  app.decorateReply('sendAnswer', function (this: FastifyReply, body: Buffer, type = JSON_TYPE) {
    if (pool.holds(body)) this.request.pooledBody = body
    this.type(type).send(body)
  })
  app.addHook('onResponse', (request, _reply, done) => {
    if (request.pooledBody !== undefined) pool.release(request.pooledBody)
    done()
  })
  const { partners, limiter, telemetry, datasets, responseCache: cache, metrics } = app
  app.decorateRequest('partner', null as unknown as PartnerProfile)
  app.decorateRequest('dataset', undefined)
  app.decorateRequest('limitSeq', undefined)
  app.decorateRequest('rows', 0)
  app.decorateRequest('cacheStatus', 'none')
  app.decorateRequest('cacheKey', undefined)

  const authenticate = (endpoint: Endpoint): onRequestHookHandler => (request, _reply, done) => {
    const token = tokenOf(request)
    if (typeof token !== 'string') return done(token)
    const partner = partners.byToken(token)
    if (!partner) return done(new ApiError('svc_partner_api_invalid_key'))
    if (partner.status !== 'active') return done(new ApiError('svc_partner_api_inactive_partner'))
    if (!endpointOpen(partner, endpoint)) {
      const reason = partner.tier === 'demo' ? 'tier' : 'approval'
      return done(new ApiError('svc_partner_api_feature_disabled', { reason }))
    }
    request.partner = partner
    done()
  }

  // The limiter's store is in-process (answers at once) or shared (always a promise): the hook
  // and the rows' record are chosen here, once, for that kind.
  const counts = limiter.store
  const admit = (
    request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void, result: HitResult, now: number
  ) => {
    if (result.unavailable) {
      // no window is known full: no rate-limit fields, and nothing counted (nor recorded as usage)
      const retryAfter = retryAfterSeconds(result.retryAfterMs!)
      reply.header('retry-after', String(retryAfter))
      return done(new ApiError('svc_partner_api_unavailable', { retry_after: retryAfter }))
    }
    const refusal = result.allowed ? undefined : { window: result.refusedBy!, retryAfterMs: result.retryAfterMs! }
    reply.headers(rateLimitHeaders(result.windows, now, request.partner.ratelimitPolicy, refusal))
    if (!result.allowed) {
      const retryAfter = retryAfterSeconds(result.retryAfterMs!)
      metrics.rateLimited(request.partner.tier)
      reply.header('retry-after', String(retryAfter))
      return done(new ApiError('svc_partner_api_rate_limited', { window: result.refusedBy, retry_after: retryAfter }))
    }
    request.limitSeq = result.seq
    done()
  }
  const limit: onRequestHookHandler = counts.synchronous
    ? (request, reply, done) => {
        const now = limiter.clock()
        admit(request, reply, done, counts.hit(request.partner.id, request.partner.windows, now), now)
      }
    : (request, reply, done) => {
        const now = limiter.clock()
        counts.hit(request.partner.id, request.partner.windows, now)
          .then((result) => admit(request, reply, done, result, now), done)
      }
  const setRows: (partnerId: string, seq: number, rows: number) => void = counts.synchronous
    ? (partnerId, seq, rows) => counts.setRows(partnerId, seq, rows)
    : (partnerId, seq, rows) => {
        counts.setRows(partnerId, seq, rows).catch((err) => app.log.error({ err }, 'rows could not be recorded'))
      }

  const pickDataset: preHandlerHookHandler = (request, _reply, done) => {
    const dataset = datasets.get(datasetFor(request.partner, (request.query as { demo?: boolean }).demo === true))
    if (dataset === undefined) return done(new ApiError('svc_partner_api_prepare_failed'))
    request.dataset = dataset
    done()
  }

  /**
   * A cached answer in the encoding the client takes (each encoding its own ETag) with its headers, or a 304 when
   * If-None-Match holds that ETag: the payload to send (`lend`: the plain body is lent from the cache).
   */
  const represent = (
    request: FastifyRequest, reply: FastifyReply, key: string, entry: CachedAnswer, lend: boolean
  ): Buffer | undefined => {
    const encoding = encodingFor(request.headers['accept-encoding'], entry.body.length)
    const etag = encoding === undefined ? entry.etag : encodedEtag(entry.etag, encoding)
    reply.header('etag', etag).header('cache-control', cache.cacheControl).header('vary', 'accept-encoding')
    if (etagMatches(request.headers['if-none-match'], etag)) {
      reply.code(304)
      // A 304 has no body, and no Content-Length unless it is the 200's (RFC 9110 8.6): for a HEAD, Fastify sets
      // Content-Length from the payload it then drops, so it is given the 200's bytes.
      if (request.method !== 'HEAD') return undefined
      return encoding === undefined ? entry.body : cache.encodedBody(key, entry, encoding)
    }
    if (encoding === undefined) return lend ? cache.lend(entry) : entry.body
    reply.header('content-encoding', encoding)
    return cache.encodedBody(key, entry, encoding)
  }

  const lookup = (route: string): preHandlerHookHandler => (request, reply, done) => {
    const key = cacheKeyOf(
      request.dataset!.version, route, canonicalOf(request.params), canonicalOf(request.query),
      request.partner.fingerprint
    )
    request.cacheKey = key
    const entry = cache.get(key)
    if (entry === undefined) {
      request.cacheStatus = 'miss'
      return done()
    }
    request.cacheStatus = 'hit'
    request.rows = entry.rows
    request.dataset = entry.dataset
    const payload = represent(request, reply, key, entry, true)
    if (reply.statusCode === 304) reply.send(payload)
    else reply.sendAnswer(payload!, entry.type)
    // answered: done() is not called
  }

  // A handler's 200 is stored and represented as a hit would be; an error is no-store (from the error handler).
  const store: onSendHookHandler = (request, reply, payload, done) => {
    if (reply.statusCode === 200 && request.cacheStatus !== 'hit') {
      const key = request.cacheKey!
      const body = typeof payload === 'string' ? Buffer.from(payload) : payload as Buffer
      const type = String(reply.getHeader('content-type') ?? JSON_TYPE)
      const entry: CachedAnswer = { dataset: request.dataset!, body, type, etag: cache.etagOf(key), rows: request.rows }
      cache.store(key, entry)
      payload = represent(request, reply, key, entry, false) ?? null
    }
    // a 304: no Content-Type (a HEAD's payload, its 200's bytes, made Fastify add one)
    if (reply.statusCode === 304) reply.removeHeader('content-type')
    done(null, payload)
  }

  // before the answer's bytes go out: whoever has an answer finds it in /usage, on any instance
  const record = (endpoint: Endpoint): onSendHookHandler => (request, reply, payload, done) => {
    if (request.partner === null) return done(null, payload) // refused before the token was known: no one's usage
    const status = reply.statusCode
    if (status === 503) return done(null, payload) // unavailable: the limits could not be checked; counted nowhere
    const rows = status === 200 && request.method !== 'HEAD' ? request.rows : 0 // a HEAD answers no records
    if (request.limitSeq !== undefined && rows > 0) setRows(request.partner.id, request.limitSeq, rows)
    telemetry.record(request.partner.id, {
      timestamp: limiter.clock(), endpoint, status, rows, durationMs: Math.round(reply.elapsedTime * 100) / 100,
      dataset: request.dataset?.name ?? null, cache: request.cacheStatus
    })
    done(null, payload)
  }

  // An answer made for each request (/usage): no cache is to keep it either. A 200 sent as JSON text is
  // compressed when asked, by the cached answers' rules.
  const uncached: onSendHookHandler = (request, reply, payload, done) => {
    if (reply.statusCode !== 200) return done(null, payload)
    reply.header('cache-control', 'no-store')
    if (typeof payload !== 'string') return done(null, payload)
    reply.header('vary', 'accept-encoding')
    const encoding = encodingFor(request.headers['accept-encoding'], Buffer.byteLength(payload))
    if (encoding === undefined) return done(null, payload)
    reply.header('content-encoding', encoding)
    done(null, compress(Buffer.from(payload), encoding))
  }

  app.addHook('onRoute', (route) => {
    const { endpoint, cached, counted } = routeFlags(route.config)
    if (endpoint === undefined) throw new Error(`partner route ${route.url} names no endpoint`)
    attach(route, 'onRequest', authenticate(endpoint), counted && limit)
    attach(route, 'preHandler', (counted || cached) && pickDataset, cached && lookup(route.url))
    attach(route, 'onSend', cached ? store : uncached, counted && record(endpoint))
  })

  await app.register(sitesRoutes)
  await app.register(discoveryRoutes)
}

export default fp(partnerApi, {
  name: 'partner-api',
  encapsulate: true,
  dependencies: ['partners', 'usage', 'datasets', 'cache', 'metrics', 'records']
})

type HookName = 'onRequest' | 'preHandler' | 'onSend'

/** Adds the pipeline's hooks after the route's own (a `false` is a hook this route does not take). */
function attach (route: RouteOptions, name: HookName, ...hooks: (false | RouteOptions[HookName])[]) {
  const added = hooks.filter((hook) => hook !== false)
  const given = [route[name] ?? []].flat()
  if (added.length > 0) (route as unknown as Record<HookName, unknown[]>)[name] = [...given, ...added]
}
