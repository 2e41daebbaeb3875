// What the API is, for its OpenAPI document and its index: its releases and how to call it.

/** The API's releases, newest first (CHANGELOG.md lists them too). */
const API_RELEASES = [
  {
    version: '1.3',
    date: '2026-11-28',
    change: 'Added /sites/along-route (sites along a flight route) and /sites/by-bbox (sites in a map\'s box, ' +
      'paginated), /categories and /tags, gzip and br compression, demo= on /usage, and data.reason on ' +
      'invalid_key and feature_disabled.'
  },
  {
    version: '1.2.6',
    date: '2026-02-18',
    change: 'Added /sites/by-tag (paginated, map-minimal) and the optional tag filter on /sites.'
  },
  { version: '1.2.1', date: '2026-01-24', change: 'Coordinates are stated to be obscured and approximate.' },
  { version: '1.2', date: '2026-01-17', change: '/sites/{id} requires explicit partner approval.' },
  { version: '1.1', date: '2026-01-17', change: 'Added /sites/{id}.' },
  {
    version: '1.0',
    date: '2025-11-05',
    change: 'Added /sites/nearest with distance in nautical miles; improved caching isolation.'
  }
]
export const API_VERSION = API_RELEASES[0].version

/** What a partner sends with a support request; never the token. */
export const SUPPORT_DETAILS = 'your partner id (partner.id in GET /v1/usage), the time of the request in UTC, ' +
  'the answer\'s X-Request-Id, the request, and the answer\'s status, headers and body; never your token'

/** Where partners ask for support: SUPPORT_CONTACT, or the operator who issued the token. */
const supportText = (contact: string) =>
  `${contact === '' ? 'Ask the operator who issued your token' : `Write to ${contact}`}, with ${SUPPORT_DETAILS}.`

/** The document's description: how to call, what every answer carries, support, the releases. */
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

Support: ${supportText(contact)}

| Version | Date | Change |
| --- | --- | --- |
${API_RELEASES.map((r) => `| ${r.version} | ${r.date} | ${r.change} |`).join('\n')}`
