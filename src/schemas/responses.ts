// What the OpenAPI document says of each partner operation's answers: an example of every success and error
// code, and the headers (set by src/routes/partner-api.ts from the same route flags: counted, cached).
import type { TSchema } from '@sinclair/typebox'
import { ApiError, ERRORS, type ErrorCode } from '../errors.ts'
import { COMPRESS_MIN_BYTES } from '../http/encoding.ts'
import { ErrorBody, PARTNER_ERRORS } from './errors.ts'
import { geoOf, type Example } from './examples.ts'

/**
 * A partner operation's documented answers: its success with its examples and its errors (documentedErrors);
 * with `geo`, the success has a format=geojson form too, whose example is made from the JSON one.
 * Fastify reads the schema of each media type.
 */
export function responses (
  codes: ErrorCode[], description: string, schema: TSchema, examples: Record<string, Example>, geo?: TSchema
) {
  const content: Record<string, unknown> = { 'application/json': { schema, examples } }
  if (geo) {
    const answer = { summary: 'The same, format=geojson', value: geoOf(examples.answer.value) }
    content['application/geo+json'] = { schema: geo, examples: { answer } }
    description += '; a GeoJSON FeatureCollection with format=geojson'
  }
  return { 200: { description, content }, ...documentedErrors(codes) }
}

const EXAMPLE_EXTRA: Partial<Record<ErrorCode, ConstructorParameters<typeof ApiError>[1]>> = {
  rest_missing_callback_param: { params: ['lat'] },
  rest_invalid_param: { params: { radius: 'radius must be a number greater than 0' } },
  svc_partner_api_rate_limited: { window: 'minute', retry_after: 17 },
  svc_partner_api_unavailable: { retry_after: 5 },
  svc_partner_api_invalid_coordinates: { params: { lat: 'lat must be a number from -90 to 90' } }
}

/**
 * Error responses of a partner operation (its own codes and those of every partner operation):
 * one per status, with an example of each code as the service makes its body.
 */
export function documentedErrors (codes: ErrorCode[]): Record<number, unknown> {
  const byStatus = new Map<number, ErrorCode[]>()
  for (const code of new Set([...PARTNER_ERRORS, ...codes])) {
    byStatus.set(ERRORS[code].status, [...byStatus.get(ERRORS[code].status) ?? [], code])
  }
  const responses: Record<number, unknown> = {}
  for (const [status, list] of byStatus) {
    const code = { ...ErrorBody.properties.code, enum: list, description: `One of: ${list.join(', ')}` }
    const schema = { ...ErrorBody, properties: { ...ErrorBody.properties, code } }
    const examples = Object.fromEntries(list.map((c) => [c, {
      summary: ERRORS[c].message.replace(/\{\w+\}/g, '…'), value: new ApiError(c, EXAMPLE_EXTRA[c]).toBody()
    }]))
    responses[status] = { description: list.join(', '), content: { 'application/json': { schema, examples } } }
  }
  return responses
}

/** No rate-limit headers: refused before the limiter counts (token, partner status, endpoint), or unable to. */
const NOT_COUNTED: readonly ErrorCode[] = ['svc_partner_api_missing_key', 'svc_partner_api_invalid_key',
  'svc_partner_api_inactive_partner', 'svc_partner_api_feature_disabled', 'svc_partner_api_unavailable']

const header = (description: string, type: 'string' | 'integer' = 'string', required = true) =>
  required ? { description, required: true, schema: { type } } : { description, schema: { type } }

const REQUEST_ID = header('This request\'s id: the X-Request-Id sent, when it is 1 to 64 characters of ' +
  'A-Z a-z 0-9 . _ - and holds no token; else a new UUID. Quote it to support.')

/** The rate-limit headers: their description and, if not a string, their type. */
const RATE_LIMIT: Record<string, [string, 'integer'?]> = {
  'RateLimit-Policy': [
    'Each limited window of the partner: its name, its limit (q) and its length in seconds (w), ' +
    'e.g. "minute";q=30;w=60, "hour";q=200;w=3600, "day";q=1000;w=86400'
  ],
  RateLimit: [
    'The tightest window (fewest requests left; minute before hour before day on a tie; on a 429, the window that ' +
    'refused): its name, the requests left (r) and the seconds until a request frees up in it ' +
    '(t; on a 429, Retry-After), e.g. "minute";r=12;t=34'
  ],
  'X-RateLimit-Limit': ['The tightest window\'s limit', 'integer'],
  'X-RateLimit-Remaining': ['Requests left in the tightest window', 'integer'],
  'X-RateLimit-Used': ['Requests counted in the tightest window (an accepted request counts itself)', 'integer'],
  'X-RateLimit-Reset': ['When a request frees up in the tightest window, in UTC epoch seconds', 'integer']
}

const RETRY_AFTER = header('Whole seconds (at least 1) until every refusing window has room again: ' +
  'a request sent that much later is accepted, unless others were sent meanwhile', 'integer')

const RETRY_UNAVAILABLE = header('Whole seconds (a few) until the rate limits may be checked again: retry then; ' +
  'the refused request was not counted', 'integer')

export interface OpenApiResponse {
  description: string, headers?: Record<string, unknown>, content?: Record<string, { schema?: unknown }>
}

/** A route's flags from its config, with their defaults (uncached, counted): its hooks and its documented headers. */
export function routeFlags<E extends string> (config: { endpoint?: E, cache?: boolean, counted?: boolean } = {}) {
  return { endpoint: config.endpoint, cached: config.cache ?? false, counted: config.counted ?? true }
}

/**
 * Adds their headers to an operation's documented responses (OpenAPI form), by the flags of its route's config:
 * X-Request-Id on all; the rate-limit headers on answers that reached the limiter; Retry-After on 429 and 503; ETag,
 * Cache-Control and Vary on a cached 200, and a 304 with them; on other partner answers Cache-Control: no-store (and
 * Vary on the 200).
 */
export function withHeaders (
  responses: Record<string, OpenApiResponse>,
  config: Parameters<typeof routeFlags>[0],
  cacheControl: string
) {
  const { endpoint, cached, counted } = routeFlags(config)
  const limited = endpoint !== undefined && counted
  const rateLimit = (required: boolean, only?: ErrorCode[]) => {
    const onlyWith = only ? `only with ${only.join(', ')} (refused after the request was counted), and ` : ''
    const when = required ? '' : ` Sent ${onlyWith}when at least one of the partner's windows is limited.`
    return Object.fromEntries(Object.entries(RATE_LIMIT)
      .map(([name, [text, type]]) => [name, header(`${text}.${when}`, type, required)]))
  }
  for (const [status, response] of Object.entries(responses)) {
    const headers: Record<string, ReturnType<typeof header>> = {}
    if (status === '200') {
      if (limited) Object.assign(headers, rateLimit(false))
      if (cached) {
        headers.ETag = header('The answer\'s entity tag (a gzip or br answer has its own: -gzip or -br before the ' +
          'closing quote): send it back in If-None-Match to be answered 304 while the answer is current')
      }
      if (endpoint !== undefined) { // a public route's 200 (the index) carries X-Request-Id alone
        headers['Cache-Control'] = cached
          ? header(`${cacheControl}: the answer may be reused for that many seconds, by this caller only`)
          : header('no-store: the answer is made for each request, and is not to be kept')
        headers.Vary = header(`Accept-Encoding: an answer of ${COMPRESS_MIN_BYTES} bytes or more is sent gzip- or ` +
          'br-compressed (Content-Encoding) when Accept-Encoding asks for it')
      }
    } else {
      // an error body's codes; a status documented with another body (a probe's 503) has none
      type ErrorSchema = { properties?: { code?: { enum?: ErrorCode[] } } } | undefined
      const codes = (response.content?.['application/json']?.schema as ErrorSchema)?.properties?.code?.enum ?? []
      const counted = codes.filter((code) => !NOT_COUNTED.includes(code))
      if (limited && counted.length > 0) {
        Object.assign(headers, rateLimit(status === '429', counted.length < codes.length ? counted : undefined))
      }
      if (status === '429') headers['Retry-After'] = RETRY_AFTER
      if (codes.includes('svc_partner_api_unavailable')) headers['Retry-After'] = RETRY_UNAVAILABLE
      headers['Cache-Control'] = header('no-store: an error is not to be kept')
    }
    headers['X-Request-Id'] = REQUEST_ID
    response.headers = headers
    if (status === '200' && cached) {
      const description = 'Not Modified: If-None-Match holds the current ETag of this answer; no body'
      responses['304'] = { description, headers }
    }
  }
}
