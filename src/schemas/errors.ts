import { Type } from '@sinclair/typebox'
import type { ErrorCode } from '../errors.ts'

export const ErrorBody = Type.Object({
  code: Type.String({ description: 'Machine-readable error code' }),
  message: Type.String({ description: 'Human sentence' }),
  data: Type.Object({
    status: Type.Integer({ description: 'HTTP status' }),
    params: Type.Optional(Type.Union([
      Type.Array(Type.String(), { description: 'Missing parameters (rest_missing_callback_param)' }),
      Type.Record(Type.String(), Type.String(), { description: 'Reason per malformed parameter (rest_invalid_param)' })
    ])),
    window: Type.Optional(Type.String({ description: 'Window that refused the request (429)' })),
    retry_after: Type.Optional(Type.Integer({
      description: 'Seconds until a request is accepted again (429), or until the limits can be checked again (503 ' +
        'svc_partner_api_unavailable)'
    })),
    reason: Type.Optional(Type.String({
      description: 'Why the key could not be read (401: api_key_repeated, not_bearer or keys_differ), or what ' +
        'would open the endpoint (403 feature_disabled: tier or approval)'
    }))
  })
}, { description: 'WordPress REST style error' })

/** What any partner request can be answered with, whatever the route; then each route's own codes. */
export const PARTNER_ERRORS: ErrorCode[] = ['svc_partner_api_missing_key', 'svc_partner_api_invalid_key',
  'svc_partner_api_inactive_partner', 'svc_partner_api_query_failed', 'svc_partner_api_prepare_failed']
export const SEARCH_ERRORS: ErrorCode[] = ['rest_missing_callback_param', 'rest_invalid_param',
  'svc_partner_api_invalid_coordinates', 'svc_partner_api_ambiguous_coordinates',
  'svc_partner_api_category_not_permitted', 'svc_partner_api_rate_limited', 'svc_partner_api_unavailable']
export const AREA_ERRORS: ErrorCode[] = [...SEARCH_ERRORS, 'svc_partner_api_feature_disabled']
export const BY_TAG_ERRORS: ErrorCode[] = ['rest_missing_callback_param', 'rest_invalid_param',
  'svc_partner_api_feature_disabled', 'svc_partner_api_rate_limited', 'svc_partner_api_unavailable']
export const SITE_ERRORS: ErrorCode[] = ['rest_invalid_param', 'svc_partner_api_feature_disabled',
  'svc_partner_api_rate_limited', 'svc_partner_api_unavailable']
/** /usage, /categories and /tags: never counted, so never limited */
export const UNCOUNTED_ERRORS: ErrorCode[] = ['rest_invalid_param']
