import { Type, type TSchema } from '@sinclair/typebox'
import { ERRORS, type ErrorCode } from '../errors.ts'

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
    retry_after: Type.Optional(Type.Integer({ description: 'Seconds until a request is accepted again (429)' }))
  })
}, { description: 'WordPress REST style error' })

/** What any partner request can be answered with, whatever the route. */
export const PARTNER_ERRORS: ErrorCode[] = [
  'svc_partner_api_missing_key', 'svc_partner_api_invalid_key', 'svc_partner_api_inactive_partner',
  'svc_partner_api_query_failed', 'svc_partner_api_prepare_failed'
]

/** Error responses of a partner route (its own codes and the common ones): one schema per status. */
export function errorResponses (codes: ErrorCode[]): Record<number, TSchema> {
  const byStatus = new Map<number, ErrorCode[]>()
  for (const code of [...PARTNER_ERRORS, ...codes]) {
    const status = ERRORS[code].status
    byStatus.set(status, [...(byStatus.get(status) ?? []), code])
  }
  const responses: Record<number, TSchema> = {}
  for (const [status, list] of byStatus) {
    const code = { ...ErrorBody.properties.code, enum: list, description: `One of: ${list.join(', ')}` }
    responses[status] = { ...ErrorBody, properties: { ...ErrorBody.properties, code }, description: list.join(', ') }
  }
  return responses
}
