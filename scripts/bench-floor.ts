// The floor of a cached answer: what the contract asks of every request, each part in its plainest
// Fastify form, in one context of the bare route's process: the Bearer token's SHA-256 looked up,
// the request written to the partner's log (what the limits and /usage count), the query checked by
// a Fastify schema, the answer found by a key in a Map, its five headers (request id, type, ETag,
// Cache-Control, Vary), a usage count per second, and one access line (JSON, written once a turn).
// Left out, though the service must do them: three exact windows and their headers, conditional
// requests and compression, the dataset's choice, metrics, per-request telemetry, the pool. What
// this route costs beyond the bare route is the contract's; what the service costs beyond this is
// its own (docs/performance.md, "The floor").
import { createHash, randomUUID } from 'node:crypto'
import type { FastifyInstance, FastifyReply } from 'fastify'
import pino from 'pino'

interface Partner { slug: string, fingerprint: string, log: Float64Array, next: number, second: number, requests: number }

const BEARER = /^Bearer[ \t]+([^\s]+)[ \t]*$/i
const LOG_ENTRIES = 1 << 20
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')

/** Registered without fastify-plugin: its hook stays in its context, off the bare route's path. */
export default async function floor (app: FastifyInstance, { tokens, out = pino.destination({ dest: 1, sync: false }) }: { tokens: string[], out?: { write: (text: string) => unknown } }) {
  const partners = new Map<string, Partner>(tokens.map((token, i) => [sha256(token), { slug: `partner-${i}`, fingerprint: `all-${i}`, log: new Float64Array(LOG_ENTRIES), next: 0, second: 0, requests: 0 }]))
  const cache = new Map<string, { body: Buffer, etag: string }>()
  const refuse = (reply: FastifyReply, status: number, code: string) =>
    reply.code(status).header('x-request-id', randomUUID()).send({ code, message: code, data: { status } })

  app.get('/v1/sites/nearest', {
    schema: {
      querystring: {
        type: 'object',
        properties: { lat: { type: 'number', minimum: -90, maximum: 90 }, lng: { type: 'number', minimum: -180, maximum: 180 } },
        required: ['lat', 'lng'],
        additionalProperties: false
      }
    }
  }, (request, reply) => {
    const match = BEARER.exec(request.headers.authorization ?? '')
    if (match === null) return refuse(reply, 401, 'missing_key')
    const partner = partners.get(sha256(match[1]))
    if (partner === undefined) return refuse(reply, 401, 'invalid_key')
    const now = Date.now()
    partner.log[partner.next++ % LOG_ENTRIES] = now
    const { lat, lng } = request.query as { lat: number, lng: number }
    const key = `/sites/nearest\u0000lat=${lat}&lng=${lng}\u0000${partner.fingerprint}`
    let entry = cache.get(key)
    if (entry === undefined) {
      const body = { id: 'prd-0291561', category: '7', name: 'Nice Bridge Aerodrome', latitude: lat, longitude: lng, distance_nm: 0.353, helipaddy_link: 'https://helipaddy.com/pad/prd-0291561' }
      entry = { body: Buffer.from(JSON.stringify(body)), etag: `"${createHash('sha1').update(key).digest('base64url')}"` }
      cache.set(key, entry)
    }
    const second = Math.floor(now / 1000)
    if (partner.second === second) partner.requests++
    else { partner.second = second; partner.requests = 1 }
    reply.header('x-request-id', randomUUID()).header('content-type', 'application/json; charset=utf-8')
      .header('etag', entry.etag).header('cache-control', 'private, max-age=60').header('vary', 'accept-encoding')
      .send(entry.body)
  })

  let pending = ''
  const flush = () => {
    out.write(pending)
    pending = ''
  }
  app.addHook('onResponse', (request, reply, done) => {
    if (pending === '') setImmediate(flush)
    pending += `{"level":30,"time":${Date.now()},"reqId":${JSON.stringify(reply.getHeader('x-request-id'))},"method":"${request.method}",` +
      `"url":${JSON.stringify(request.url)},"ip":"${request.ip}","status":${reply.statusCode},"ms":${Math.round(reply.elapsedTime * 100) / 100},"msg":"request"}\n`
    done()
  })
}
