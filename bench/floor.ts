// The floors: what the contract asks of every request, each part in its plainest Fastify form, in
// one context of the bare route's process. onRequest: a request id; the Bearer token's SHA-256
// looked up; a partner with a limit has its minute counted over its request log and gets a 429
// (RateLimit and Retry-After headers, the error body) when it is full; else the request is written
// to the log (what limits and /usage count). The routes: the query checked by a Fastify schema
// (Fastify's default Ajv: unknown parameters are dropped, a bad one is a 400), the answer found by
// a key in a Map, four more headers (type, ETag, Cache-Control, Vary), a usage count per second.
// onResponse: one access line (JSON), written once a turn.
// Left out, though the service must do them: three windows, conditional requests and compression,
// the dataset's choice, metrics, per-request telemetry, the answer pool, the Host check. What a
// floor costs beyond the bare route is the contract's; what the service costs beyond it is its own.
import { createHash, randomUUID } from 'node:crypto'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import pino from 'pino'
import { ERRORS } from '../src/errors.ts'

interface Partner {
  fingerprint: string
  /** requests a minute; null: unlimited */
  limit: number | null
  /** the times of accepted requests, a ring; with a limit, those from `start` to `next` are the last minute's */
  log: Float64Array
  start: number
  next: number
  second: number
  requests: number
}

declare module 'fastify' {
  interface FastifyRequest {
    floorPartner: Partner | null
  }
}

const BEARER = /^Bearer[ \t]+([^\s]+)[ \t]*$/i
const LOG_ENTRIES = 1 << 20
const MINUTE_MS = 60_000
const JSON_TYPE = 'application/json; charset=utf-8'
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')

/** A partner for each `token` (unlimited) or `token:N` (N requests a minute, at most the ring's size). */
function partnersOf (tokens: string[]): Map<string, Partner> {
  return new Map(tokens.map((entry, i) => {
    const [token, perMinute] = entry.split(':')
    const limit = perMinute === undefined ? null : Number(perMinute)
    if (limit !== null && !(Number.isInteger(limit) && limit >= 1 && limit <= LOG_ENTRIES)) {
      throw new Error(`floor: ${perMinute} is not a limit from 1 to ${LOG_ENTRIES}`)
    }
    const log = new Float64Array(LOG_ENTRIES)
    return [sha256(token), { fingerprint: `all-${i}`, limit, log, start: 0, next: 0, second: 0, requests: 0 }]
  }))
}

/**
 * A refusal with the service's error body for a code of its catalogue, made plainly (message
 * filled by a regular expression, JSON.stringify).
 */
function refuse (reply: FastifyReply, code: keyof typeof ERRORS, data: Record<string, unknown> = {}) {
  const { status, message } = ERRORS[code]
  const filled = message.replace(/\{(\w+)\}/g, (_, name: string) => String(data[name]))
  reply.code(status).header('content-type', JSON_TYPE).header('cache-control', 'no-store')
    .send(JSON.stringify({ code, message: filled, data: { status, ...data } }))
}

interface FloorOptions {
  /** the partners' tokens, each `token` (unlimited) or `token:N` (N requests a minute) */
  tokens: string[]
  /** where the access lines go: stdout by default */
  out?: { write: (text: string) => unknown }
}

/** Registered without fastify-plugin: its hooks stay in its context, off the bare route's path. */
export default async function floor (
  app: FastifyInstance,
  { tokens, out = pino.destination({ dest: 1, sync: false }) }: FloorOptions
) {
  const partners = partnersOf(tokens)
  const cache = new Map<string, { body: Buffer, etag: string }>()
  app.decorateRequest('floorPartner', null)
  // a query the schema refuses; anything else (a fault of the floor itself) goes on to Fastify's handler
  app.setErrorHandler((error: FastifyError, _request, reply) => {
    if (error.validation === undefined) throw error
    refuse(reply, 'rest_bad_request')
  })

  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', randomUUID())
    const match = BEARER.exec(request.headers.authorization ?? '')
    // answered here: done() is not called, and the reply (a thenable) is not returned to Fastify
    if (match === null) {
      refuse(reply, 'svc_partner_api_missing_key')
      return
    }
    const partner = partners.get(sha256(match[1]))
    if (partner === undefined) {
      refuse(reply, 'svc_partner_api_invalid_key')
      return
    }
    const now = Date.now()
    if (partner.limit !== null) {
      while (partner.start < partner.next && partner.log[partner.start % LOG_ENTRIES] <= now - MINUTE_MS) {
        partner.start++
      }
      const used = partner.next - partner.start
      if (used >= partner.limit) {
        const resetMs = partner.log[partner.start % LOG_ENTRIES] + MINUTE_MS - now
        const retryAfter = Math.max(1, Math.ceil(resetMs / 1000))
        reply.header('ratelimit-policy', `"minute";q=${partner.limit};w=60`)
          .header('ratelimit', `"minute";r=0;t=${retryAfter}`)
          .header('x-ratelimit-limit', String(partner.limit)).header('x-ratelimit-remaining', '0')
          .header('x-ratelimit-used', String(used))
          .header('x-ratelimit-reset', String(Math.ceil((now + resetMs) / 1000)))
          .header('retry-after', String(retryAfter))
        refuse(reply, 'svc_partner_api_rate_limited', { window: 'minute', retry_after: retryAfter })
        return
      }
    }
    partner.log[partner.next++ % LOG_ENTRIES] = now
    request.floorPartner = partner
    done()
  })

  const answer = (route: string) => (request: FastifyRequest, reply: FastifyReply) => {
    const partner = request.floorPartner!
    const query = request.query as Record<string, number>
    const key = `${route}\u0000lat=${query.lat}&lng=${query.lng}&radius=${query.radius}\u0000${partner.fingerprint}`
    let entry = cache.get(key)
    if (entry === undefined) {
      const body = {
        id: 'prd-0291561',
        category: '7',
        name: 'Nice Bridge Aerodrome',
        latitude: query.lat,
        longitude: query.lng,
        distance_nm: 0.353,
        helipaddy_link: 'https://helipaddy.com/pad/prd-0291561'
      }
      const etag = `"${createHash('sha1').update(key).digest('base64url')}"`
      entry = { body: Buffer.from(JSON.stringify(route === '/sites' ? [body] : body)), etag }
      cache.set(key, entry)
    }
    const second = Math.floor(Date.now() / 1000)
    if (partner.second === second) partner.requests++
    else {
      partner.second = second
      partner.requests = 1
    }
    reply.header('content-type', JSON_TYPE)
      .header('etag', entry.etag).header('cache-control', 'private, max-age=60').header('vary', 'accept-encoding')
      .send(entry.body)
  }
  const point = {
    lat: { type: 'number', minimum: -90, maximum: 90 },
    lng: { type: 'number', minimum: -180, maximum: 180 }
  }
  const querystring = (properties: object) =>
    ({ type: 'object', properties, required: ['lat', 'lng'], additionalProperties: false })
  app.get('/v1/sites/nearest', { schema: { querystring: querystring(point) } }, answer('/sites/nearest'))
  const radius = { type: 'number', minimum: 0.1, maximum: 100, default: 25 }
  app.get('/v1/sites', { schema: { querystring: querystring({ ...point, radius }) } }, answer('/sites'))

  let pending = ''
  const flush = () => {
    out.write(pending)
    pending = ''
  }
  app.addHook('onResponse', (request, reply, done) => {
    if (pending === '') setImmediate(flush)
    const time = Date.now()
    const id = JSON.stringify(reply.getHeader('x-request-id'))
    const ms = Math.round(reply.elapsedTime * 100) / 100
    const url = JSON.stringify(request.url)
    pending += `{"level":30,"time":${time},"reqId":${id},"method":"${request.method}",` +
      `"url":${url},"ip":"${request.ip}","status":${reply.statusCode},"ms":${ms},"msg":"request"}\n`
    done()
  })
}
