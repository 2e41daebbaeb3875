// What the OpenAPI document says of each partner operation's answers: the response headers (rate
// limits, caching, request id) and a real example of every success and every error code.
// Documentation only: the service sets the headers in src/routes/partner-api.ts.
import type { TSchema } from '@sinclair/typebox'
import { ApiError, type ErrorCode } from '../errors.ts'
import { ERRORS } from '../errors.ts'
import { ErrorBody, PARTNER_ERRORS } from './errors.ts'

const header = (description: string, type: 'string' | 'integer' = 'string') => ({ type, description })

export const REQUEST_ID_HEADER = {
  'X-Request-Id': header('This request\'s id (the one sent, when it is 1 to 64 of A-Z a-z 0-9 . _ - and no token; else a fresh one): quote it to support')
}

/** On every answer that reached the limiter (all partner operations but /usage, /categories, /tags). */
export const RATE_LIMIT_HEADERS = {
  'RateLimit-Policy': header('The limited windows, e.g. "minute";q=30;w=60, "hour";q=200;w=3600, "day";q=1000;w=86400'),
  RateLimit: header('The tightest window: its name, the requests left (r) and the seconds until a request frees up (t), e.g. "minute";r=12;t=34'),
  'X-RateLimit-Limit': header('The tightest window\'s limit', 'integer'),
  'X-RateLimit-Remaining': header('Requests left in it', 'integer'),
  'X-RateLimit-Used': header('Requests counted in it', 'integer'),
  'X-RateLimit-Reset': header('When a request frees up in it, UTC epoch seconds', 'integer')
}

/** On every 200 (and 304) of a cached operation. */
export const CACHE_HEADERS = {
  ETag: header('The answer\'s tag (its own per encoding, e.g. "…-gzip"): send it back as If-None-Match for a 304'),
  'Cache-Control': header('private, max-age=60: keep the answer at least a minute'),
  Vary: header('Accept-Encoding: answers of 1 KiB and more are gzip- or br-compressed when asked')
}

export interface Example { summary: string, value: unknown }

/**
 * A success: its schema (or one per media type), its headers and its examples. Fastify reads the
 * schema of each media type; the headers and examples are for the document.
 */
export function okResponse (description: string, media: Record<string, { schema: TSchema, examples: Record<string, Example> }>,
  headers: Record<string, unknown>) {
  return { description, headers: { ...headers, ...REQUEST_ID_HEADER }, content: media }
}

const EXAMPLE_EXTRA: Partial<Record<ErrorCode, ConstructorParameters<typeof ApiError>[1]>> = {
  rest_missing_callback_param: { params: ['lat'] },
  rest_invalid_param: { params: { radius: 'radius must be a number greater than 0' } },
  svc_partner_api_rate_limited: { window: 'minute', retry_after: 17 }
}

/** The body a partner receives for a code, as the service makes it. */
export const errorExample = (code: ErrorCode) => new ApiError(code, EXAMPLE_EXTRA[code]).toBody()

/**
 * Error responses of a partner operation (its own codes and those of every partner operation):
 * one per status, with an example of each code and, for the limiter's answers, its headers.
 */
export function documentedErrors (codes: ErrorCode[]): Record<number, unknown> {
  const byStatus = new Map<number, ErrorCode[]>()
  for (const code of new Set([...PARTNER_ERRORS, ...codes])) {
    const status = ERRORS[code].status
    byStatus.set(status, [...(byStatus.get(status) ?? []), code])
  }
  const responses: Record<number, unknown> = {}
  for (const [status, list] of byStatus) {
    const code = { ...ErrorBody.properties.code, enum: list, description: `One of: ${list.join(', ')}` }
    const schema = { ...ErrorBody, properties: { ...ErrorBody.properties, code } }
    const headers = status === 429
      ? { ...RATE_LIMIT_HEADERS, 'Retry-After': header('Whole seconds to wait; a request sent that much later is accepted', 'integer') }
      : {}
    responses[status] = {
      description: list.join(', '),
      headers: { ...headers, ...REQUEST_ID_HEADER },
      content: { 'application/json': { schema, examples: Object.fromEntries(list.map((c) => [c, { summary: ERRORS[c].message.replace(/\{\w+\}/g, '…'), value: errorExample(c) }])) } }
    }
  }
  return responses
}
