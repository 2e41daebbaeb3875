// The error catalogue: every code a partner can receive, its HTTP status and its sentence.
// Error bodies are WordPress REST style: {"code", "message", "data": {"status", ...}}.
import { jsonString, jsonValue } from './http/json-text.ts'

export const ERRORS = {
  rest_missing_callback_param: { status: 400, message: 'Missing parameter(s): {params}.' },
  rest_invalid_param: { status: 400, message: 'Invalid parameter(s): {params}.' },
  rest_bad_request: { status: 400, message: 'The request is malformed.' },
  rest_no_route: { status: 404, message: 'No route was found matching the URL and request method.' },
  svc_partner_api_missing_key: {
    status: 401,
    message: 'An API key is required: send it as the api_key query parameter or an Authorization: Bearer header.'
  },
  svc_partner_api_invalid_key: {
    status: 401,
    message: 'The API key is not recognised.',
    reasons: {
      api_key_repeated: 'The API key could not be read: api_key was given more than once. Send it once.',
      not_bearer: 'The API key could not be read: an Authorization header must be Bearer followed by the key.',
      keys_differ: 'The API key could not be read: two different keys were sent. Send one.'
    }
  },
  svc_partner_api_inactive_partner: { status: 403, message: 'The partner account is not active. Contact support.' },
  svc_partner_api_rate_limited: {
    status: 429, message: 'Rate limit exceeded for the {window} window. Retry after {retry_after} seconds.'
  },
  svc_partner_api_invalid_coordinates: {
    status: 400, message: 'Latitude must be a number from -90 to 90 and longitude a number from -180 to 180.'
  },
  svc_partner_api_ambiguous_coordinates: {
    status: 400, message: 'Coordinates 0,0 are ambiguous. Use a real-world location.'
  },
  svc_partner_api_category_not_permitted: {
    status: 403, message: 'The category is not in the allow-list of this partner.'
  },
  svc_partner_api_feature_disabled: {
    status: 403,
    message: 'This endpoint is not enabled for the partner. Ask the operator for approval.',
    reasons: {
      tier: 'This endpoint is not open to the demo tier. Ask the operator for the growth or scale tier.',
      approval: 'This endpoint is not enabled for the partner. Ask the operator for the site-by-id approval.'
    }
  },
  svc_partner_api_query_failed: { status: 500, message: 'The query failed. Retry later; report persistent failures.' },
  svc_partner_api_prepare_failed: {
    status: 500, message: 'The query could not be prepared. Retry later; report persistent failures.'
  },
  svc_partner_api_unavailable: {
    status: 503,
    message: 'The rate limits cannot be checked right now. Retry after {retry_after} seconds; ' +
      'this request was not counted.'
  },
  svc_partner_api_too_many_connections: {
    status: 503,
    message: 'Too many open connections, from this address or in all. Close idle connections or retry later.'
  }
} as const

export type ErrorCode = keyof typeof ERRORS

export type UnusableKey = keyof typeof ERRORS.svc_partner_api_invalid_key.reasons

interface ErrorData {
  status: number
  params?: string[] | Record<string, string>
  window?: string
  retry_after?: number
  /** a key of the code's `reasons`, whose sentence replaces its message */
  reason?: string
}

type Extra = Omit<ErrorData, 'status'>
type Reasons = { reasons?: Record<string, string> }
const NO_EXTRA: Extra = Object.freeze({})
/** The body of each code that takes no parameters, serialised once: 401s and 403s come in floods. */
const plainBodies = new Map<ErrorCode, string>()

// Each message cut once at its placeholders (text at even places, names at odd): a 429's is filled by concatenation.
const TEMPLATES = new Map(Object.entries(ERRORS).map(([code, { message }]) => [code, message.split(/\{(\w+)\}/)]))

function fill (code: ErrorCode, extra: Extra): string {
  const parts = TEMPLATES.get(code)!
  let message = parts[0]
  for (let i = 1; i < parts.length; i += 2) {
    const value = (extra as Record<string, unknown>)[parts[i]]
    const text = Array.isArray(value)
      ? value.join(', ')
      : value && typeof value === 'object' ? Object.keys(value).join(', ') : String(value)
    message += text + parts[i + 1]
  }
  return message
}

/** An error with a public code; the error handler turns it into the error body. */
export class ApiError extends Error {
  readonly statusCode: number
  readonly data: ErrorData
  private readonly plain: boolean

  /** `status` overrides the catalogue's only for rest_bad_request (a framework or HTTP parser 4xx passed on). */
  constructor (readonly code: ErrorCode, extra: Extra = NO_EXTRA, status?: number) {
    const entry = ERRORS[code]
    // An expected answer, not a fault: no stack trace to capture (the costliest part of an Error).
    const stackTraceLimit = Error.stackTraceLimit
    Error.stackTraceLimit = 0
    const reason = extra.reason === undefined ? undefined : (entry as Reasons).reasons?.[extra.reason]
    super(reason ?? fill(code, extra))
    Error.stackTraceLimit = stackTraceLimit
    this.name = 'ApiError'
    this.statusCode = status ?? entry.status
    this.plain = extra === NO_EXTRA && status === undefined
    this.data = this.plain ? { status: this.statusCode } : { status: this.statusCode, ...extra }
  }

  toBody () { return { code: this.code, message: this.message, data: this.data } }

  /** JSON.stringify(toBody()), byte for byte: made once per code without parameters, else field by field. */
  toJson (): string {
    if (!this.plain) {
      let json = `{"code":${jsonString(this.code)},"message":${jsonString(this.message)},"data":{`
      let first = true
      for (const key in this.data) {
        const value = (this.data as unknown as Record<string, unknown>)[key]
        if (value === undefined) continue // left out, as JSON.stringify leaves it
        json += `${first ? '' : ','}${jsonString(key)}:${jsonValue(value)}`
        first = false
      }
      return json + '}}'
    }
    let json = plainBodies.get(this.code)
    if (json === undefined) plainBodies.set(this.code, json = JSON.stringify(this.toBody()))
    return json
  }
}
