// Hostile input, generated: thousands of random and malicious query strings, paths and methods
// against every endpoint. Whatever comes in: never a 5xx, a JSON body of the API's error shape
// with a documented code and a matching status, nothing echoed back at length, no token in a
// body, no CORS header; and every 200 body matches its response schema.
import t from 'tap'
import fc from 'fast-check'
import { Type, type TSchema } from '@sinclair/typebox'
import { Nullable } from '../../src/schemas/common.ts'
import { Value } from '@sinclair/typebox/value'
import { ERRORS, type ErrorCode } from '../../src/errors.ts'
import {
  BY_TAG_ERRORS, PARTNER_ERRORS, SEARCH_ERRORS, SITE_ERRORS, UNCOUNTED_ERRORS
} from '../../src/schemas/errors.ts'
import {
  NearestRecord, SiteFeatureCollection, SiteRecord, TagFeatureCollection, TagPage
} from '../../src/schemas/records.ts'
import { UsageReport } from '../../src/schemas/discovery.ts'
import { ApiIndex } from '../../src/schemas/api-info.ts'
import { UNLIMITED, buildTestApp, randomSites } from '../helper.ts'

const sandbox = randomSites('fuzz-sandbox', 400)
const production = randomSites('fuzz-production', 300, 'p')
const { app, tokens } = await buildTestApp(t, {
  sandbox,
  production,
  partners: [
    {
      name: 'Wide', slug: 'wide', tier: 'scale', environment: 'production', siteById: true,
      categories: [2, 3, 4, 5, 6, 7, 8, 9], otherCategories: true, limitOverrides: UNLIMITED
    },
    { name: 'Demo', slug: 'demo', tier: 'demo', limitOverrides: UNLIMITED },
    { name: 'Growth', slug: 'growth', tier: 'growth', limitOverrides: UNLIMITED }
  ]
})

interface Endpoint { path: string, ok: TSchema, geo?: TSchema, codes: ErrorCode[], base: Record<string, string> }
const ENDPOINTS: Endpoint[] = [
  {
    path: '/v1/sites', ok: Type.Array(SiteRecord), geo: SiteFeatureCollection, codes: SEARCH_ERRORS,
    base: { lat: '51.5', lng: '-0.12', radius: '50' }
  },
  {
    path: '/v1/sites/nearest', ok: Nullable(NearestRecord), codes: SEARCH_ERRORS,
    base: { lat: '48.85', lng: '2.35' }
  },
  {
    path: '/v1/sites/by-tag', ok: TagPage, geo: TagFeatureCollection, codes: BY_TAG_ERRORS,
    base: { tag: '~fuel', per_page: '20' }
  },
  { path: '/v1/sites/{id}', ok: Nullable(SiteRecord), codes: SITE_ERRORS, base: {} },
  { path: '/v1/usage', ok: UsageReport, codes: UNCOUNTED_ERRORS, base: { expand: 'telemetry' } }
]
const INDEX: Endpoint = { path: '/v1', ok: ApiIndex, codes: [], base: {} }
/** Answers any URL can get, whatever the route: an undecodable URL, and no route at all. */
const ANYWHERE: ErrorCode[] = ['rest_bad_request', 'rest_no_route']
const PARAMS = ['lat', 'lng', 'radius', 'category_id', 'tag', 'demo', 'page', 'per_page', 'expand', 'id', 'format']

const HOSTILE = [
  '', ' ', 'NaN', '-NaN', 'nan', '1e309', '-1e309', '1e-400', 'Infinity', '-Infinity', '0x1A', '0b1', '0o7', '1_000',
  ' 5', '5 ', '+5', '05', '5.', '.5', '1e2', '-0', '0', '0.0', '00', '-', '+', '.', 'e', '1e', '1,5', '٣', '５', '½',
  '🚁', '\u0000', '\u202e', '%', '%%', '%2', '%zz', '%00', '%2F', '..%2F..%2Fetc%2Fpasswd', '%2e%2e', '%C0%AF',
  '%E0%A4%A', '%FF', 'true', 'false', 'TRUE', 'yes', 'null', 'undefined', '[]', '{}', '[1]', '{"a":1}', '__proto__',
  'constructor', 'toString', '~', '~~', '~fuel', '~FUEL', '~a b', `~${'a'.repeat(63)}`, `~${'a'.repeat(64)}`,
  'A'.repeat(64), 'A'.repeat(65), 'A'.repeat(5000), '9'.repeat(400), `1.${'1'.repeat(400)}`, '90', '90.0000001',
  '-90', '180', '180.0000001', '-180', 'geojson', 'json', 'GEOJSON', 'geojson ', '2147483647', '2147483648',
  '-2147483649', '9007199254740993', '1', '2', '4', '7', '8', '500', '501', '0.000001', '-1'
]
const value = fc.oneof(
  { weight: 5, arbitrary: fc.constantFrom(...HOSTILE) },
  { weight: 2, arbitrary: fc.double().map(String) },
  { weight: 2, arbitrary: fc.double({ min: -200, max: 200, noNaN: true }).map((v) => v.toFixed(3)) },
  { weight: 2, arbitrary: fc.integer().map(String) },
  { weight: 2, arbitrary: fc.string({ maxLength: 30 }) },
  { weight: 2, arbitrary: fc.fullUnicodeString({ maxLength: 30 }) },
  { weight: 1, arbitrary: fc.string({ minLength: 2000, maxLength: 20000 }) }
)
const key = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...PARAMS) },
  {
    weight: 1,
    arbitrary: fc.constantFrom('lat[]', 'lat[0]', 'lat.x', 'LAT', 'api_key', '__proto__', 'constructor', '', '=', '&')
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 12 }) }
)
/** How a key or value goes into the URL: encoded, or left raw apart from what would break the URL itself. */
const encoder = fc.constantFrom(
  (s: string) => encodeURIComponent(s),
  (s: string) => s.replace(/[\s#?&=\u0080-\uffff]/gu, (c) => encodeURIComponent(c)),
  (s: string) => s.replace(/[\s#]/g, (c) => encodeURIComponent(c))
)
const mutation = fc.oneof(
  fc.record({ op: fc.constant('set' as const), key, value }),
  fc.record({ op: fc.constant('add' as const), key, value }), // a second value: the parameter given twice
  fc.record({ op: fc.constant('drop' as const), key: fc.constantFrom(...PARAMS) }),
  fc.record({ op: fc.constant('origin' as const) }), // lat=0&lng=0, in any spelling of zero
  fc.record({
    op: fc.constant('set' as const), key: fc.constant('category_id'), value: fc.constantFrom('1', '3', '4', '8', '99')
  })
)
const siteId = fc.oneof(
  fc.constantFrom(sandbox[0].id, production[0].id, production[1].id),
  fc.constantFrom(...HOSTILE).filter((s) => s !== ''),
  fc.string({ minLength: 1, maxLength: 80 }),
  fc.fullUnicodeString({ minLength: 1, maxLength: 20 }),
  fc.constantFrom('a%2Fb', '%2F', '..%2F..', 'a/b', 'a%252Fb', 'x?y', 'x%3Fapi_key%3Dz', '%20', 'a b')
)
interface Auth { header?: string, query?: string }
const auth: fc.Arbitrary<Auth> = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom('wide', 'growth', 'demo').map((slug): Auth => ({ header: tokens[slug] })) },
  { weight: 1, arbitrary: fc.constantFrom<Auth>({}, { query: '' }, { header: '' }, { query: 'lsp_unknown' }) },
  { weight: 1, arbitrary: value.map((v): Auth => ({ query: v })) }
)
const request = fc.record({
  endpoint: fc.constantFrom(...ENDPOINTS),
  method: fc.oneof({ weight: 15, arbitrary: fc.constant('GET') },
    { weight: 5, arbitrary: fc.constantFrom('POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH') }),
  mutations: fc.array(mutation, { maxLength: 6 }),
  id: siteId,
  encodeKey: encoder,
  encodeValue: encoder,
  auth
})

const allTokens = Object.values(tokens)

/** The endpoint a URL really reaches: the URL is normalised first (`/v1/sites/.` is /v1/sites). */
function reached (url: string): Endpoint | undefined {
  let path = new URL(url, 'http://x').pathname
  if (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1)
  if (path === '/v1') return INDEX
  const exact = ENDPOINTS.find((e) => e.path === path)
  if (exact) return exact
  return /^\/v1\/sites\/[^/]*$/.test(path) ? ENDPOINTS[3] : undefined
}

t.test('random and hostile requests: documented answers only', async (t) => {
  const seen = new Map<string, number>()
  await fc.assert(fc.asyncProperty(request, async (r) => {
    const pairs: [string, string][] = Object.entries(r.endpoint.base)
    for (const m of r.mutations) {
      if (m.op === 'origin') {
        pairs.splice(0, pairs.length, ...pairs.filter(([k]) => k !== 'lat' && k !== 'lng'),
          ['lat', '0'], ['lng', '-0.0'])
      } else if (m.op === 'drop') pairs.splice(0, pairs.length, ...pairs.filter(([k]) => k !== m.key))
      else if (m.op === 'set') pairs.splice(0, pairs.length, ...pairs.filter(([k]) => k !== m.key), [m.key, m.value])
      else pairs.push([m.key, m.value])
    }
    if (r.auth.query !== undefined) pairs.push(['api_key', r.auth.query])
    const path = r.endpoint.path.replace('{id}', r.encodeValue(r.id))
    const query = pairs.map(([k, v]) => `${r.encodeKey(k)}=${r.encodeValue(v)}`).join('&')
    const url = query ? `${path}?${query}` : path
    const res = await app.inject({
      method: r.method as 'GET',
      url,
      headers: r.auth.header !== undefined ? { authorization: `Bearer ${r.auth.header}` } : {}
    })
    const where = `${r.method} ${url.slice(0, 300)} -> ${res.statusCode} ${res.body.slice(0, 300)}`
    if (res.statusCode >= 500) throw new Error(`5xx: ${where}`)
    const geo = res.headers['content-type'] === 'application/geo+json; charset=utf-8'
    if (res.headers['content-type'] !== 'application/json; charset=utf-8' && !(geo && res.statusCode === 200)) {
      throw new Error(`content-type ${res.headers['content-type']}: ${where}`)
    }
    if (!res.headers['x-request-id']) throw new Error(`no X-Request-Id: ${where}`)
    if (Object.keys(res.headers).some((h) => h.startsWith('access-control-'))) throw new Error(`CORS header: ${where}`)
    if (allTokens.some((tok) => res.body.includes(tok))) throw new Error(`token in the body: ${where}`)
    const body = res.json()
    const endpoint = reached(url)
    if (res.statusCode === 200) {
      if (!endpoint) throw new Error(`200 from no endpoint: ${where}`)
      const schema = geo ? endpoint.geo : endpoint.ok
      if (!schema) throw new Error(`GeoJSON from ${endpoint.path}: ${where}`)
      if (!Value.Check(schema, body)) {
        const errors = [...Value.Errors(schema, body)].slice(0, 3).map((e) => `${e.path} ${e.message}`).join('; ')
        throw new Error(`200 body off its schema: ${errors}: ${where}`)
      }
      seen.set('200', (seen.get('200') ?? 0) + 1)
      return
    }
    const code = body.code as ErrorCode
    if (JSON.stringify(Object.keys(body)) !== '["code","message","data"]') throw new Error(`error body keys: ${where}`)
    const documented = r.method === 'GET' && endpoint ? [...PARTNER_ERRORS, ...endpoint.codes, ...ANYWHERE] : ANYWHERE
    if (!documented.includes(code)) throw new Error(`undocumented code ${code} for ${endpoint?.path}: ${where}`)
    if (body.data.status !== res.statusCode) throw new Error(`data.status ${body.data.status}: ${where}`)
    if (code !== 'rest_bad_request' && ERRORS[code].status !== res.statusCode) {
      throw new Error(`status of ${code}: ${where}`)
    }
    if (typeof body.message !== 'string' || body.message.length === 0) throw new Error(`message: ${where}`)
    if (res.body.length > 1000) throw new Error(`error body of ${res.body.length} bytes (input echoed?): ${where}`)
    if (code === 'rest_missing_callback_param' &&
      !(Array.isArray(body.data.params) && body.data.params.every((p: string) => PARAMS.includes(p)))) {
      throw new Error(`params: ${where}`)
    }
    if (code === 'rest_invalid_param' &&
      !Object.entries(body.data.params).every(([k, v]) => PARAMS.includes(k) && typeof v === 'string')) {
      throw new Error(`params: ${where}`)
    }
    seen.set(code, (seen.get(code) ?? 0) + 1)
  }), { numRuns: 4000, seed: Number(process.env.FUZZ_SEED ?? 20261121) })

  // the generator must reach every layer, or the property proves little
  for (const code of [
    '200', 'rest_no_route', 'rest_invalid_param', 'rest_missing_callback_param', 'svc_partner_api_invalid_coordinates',
    'svc_partner_api_ambiguous_coordinates', 'svc_partner_api_invalid_key', 'svc_partner_api_missing_key',
    'svc_partner_api_feature_disabled', 'svc_partner_api_category_not_permitted'
  ]) {
    t.ok((seen.get(code) ?? 0) > 0, `reached ${code} (${seen.get(code) ?? 0} times)`)
  }
  t.comment(JSON.stringify(Object.fromEntries(seen)))
})
