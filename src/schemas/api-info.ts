// What the API is, for its OpenAPI document and its index: its releases, how to call it, the index's schema.
import { Type } from '@sinclair/typebox'
import { DatasetsState } from './health.ts'
import { Nullable } from './common.ts'

/** The API's releases, newest first, as version, date, change (CHANGELOG.md lists them too). */
const API_RELEASES = [
  [
    '1.3', '2026-11-28',
    'Added /sites/along-route (sites along a flight route) and /sites/by-bbox (sites in a map\'s box, ' +
      'paginated), /categories and /tags, gzip and br compression, demo= on /usage, and data.reason on ' +
      'invalid_key and feature_disabled.'
  ],
  ['1.2.6', '2026-02-18', 'Added /sites/by-tag (paginated, map-minimal) and the optional tag filter on /sites.'],
  ['1.2.1', '2026-01-24', 'Coordinates are stated to be obscured and approximate.'],
  ['1.2', '2026-01-17', '/sites/{id} requires explicit partner approval.'],
  ['1.1', '2026-01-17', 'Added /sites/{id}.'],
  ['1.0', '2025-11-05', 'Added /sites/nearest with distance in nautical miles; improved caching isolation.']
]
export const API_VERSION = API_RELEASES[0][0]

/** What a partner sends with a support request; never the token. */
export const SUPPORT_DETAILS = 'your partner id (partner.id in GET /v1/usage), the time of the request in UTC, ' +
  'the answer\'s X-Request-Id, the request, and the answer\'s status, headers and body; never your token'

/** The document's description: how to call, what every answer carries, support (SUPPORT_CONTACT), the releases. */
export const apiDescription = (cacheControl: string, contact: string) =>
  `Read-only access to helicopter, eVTOL and UAV landing sites for approved partners.

Send the partner token as the \`api_key\` query parameter or as \`Authorization: Bearer <token>\`
(which keeps it out of proxies' URL logs). Call from your servers only. Coordinates are obscured
and approximate. Every answer that reached the rate limiter (all operations but /usage,
/categories and /tags, which are never counted) carries \`RateLimit-Policy\`, \`RateLimit\` and
\`X-RateLimit-*\` headers; a 429 adds \`Retry-After\`. The answers of the sites, the categories and
the tags carry \`Cache-Control: ${cacheControl}\` and an \`ETag\` (304 on \`If-None-Match\`).
Every answer carries \`X-Request-Id\`; each operation lists its headers.

Errors: \`{"code", "message", "data": {"status", ...}}\`; the codes of each status are listed
with each operation.

Support: ${contact === '' ? 'Ask the operator who issued your token' : `Write to ${contact}`}, with ${SUPPORT_DETAILS}.

| Version | Date | Change |
| --- | --- | --- |
${API_RELEASES.map((release) => `| ${release.join(' | ')} |`).join('\n')}`

export const ApiIndex = Type.Object({
  name: Type.String(),
  version: Type.String({ description: 'Release of the specification this service implements' }),
  documentation: Type.Object({ openapi: Type.String(), docs: Type.String() }),
  support: Type.Object({
    contact: Nullable(Type.String(), {
      description: 'SUPPORT_CONTACT: an e-mail address or a URL; null when the operator set none'
    }),
    send: Type.String({ description: 'What to send with a support request' })
  }),
  operations: Type.Array(Type.Object({ method: Type.String(), path: Type.String(), summary: Type.String() })),
  datasets: DatasetsState
})
