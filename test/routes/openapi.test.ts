// The OpenAPI document: valid OpenAPI 3.1 (checked by a validator against the official schema),
// every route in it with its parameters, responses and the exact error codes it can answer, the
// response headers of each status (checked against what the service sends), an example of each answer,
// the api_key security scheme, the specification's version; the docs page and the index.
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import t from 'tap'
import { Validator } from '@seriousme/openapi-schema-validator'
import { ERRORS, type ErrorCode } from '../../src/errors.ts'
import {
  AREA_ERRORS, BY_TAG_ERRORS, PARTNER_ERRORS, SEARCH_ERRORS, SITE_ERRORS, UNCOUNTED_ERRORS
} from '../../src/schemas/errors.ts'
import { UNLIMITED, buildTestApp, site } from '../helper.ts'

const { app, tokens } = await buildTestApp(t, {
  sandbox: [site('s-1', 4, 51.5, -0.12, ['~fuel']), site('s-2', 7, 52, 0)],
  production: [site('p-1', 4, 10, 10)],
  partners: [{ name: 'Demo', slug: 'demo' }]
})
const res = await app.inject('/v1/openapi.json')
const doc = res.json()
/** the content of an error answer in the document: the enum of its codes */
type ErrorContent = Record<string, { schema: { properties: { code: { enum: string[] } } } }>

t.test('served without a token, valid OpenAPI 3.1', async (t) => {
  t.equal(res.statusCode, 200)
  t.equal(res.headers['content-type'], 'application/json; charset=utf-8')
  t.equal(doc.openapi, '3.1.0')
  const result = await new Validator().validate(doc)
  t.same(result.errors ?? [], [], 'no validation errors')
  t.equal(result.valid, true)
  t.same((await app.inject('/docs/json')).json(), doc, 'the docs page renders the same document')
})

t.test('every route is in it, and nothing else', async (t) => {
  const declared = app.declaredRoutes.filter((r) => !r.hidden && r.method !== 'HEAD')
    .map((r) => `${r.method} ${r.url.replace(/:(\w+)/g, '{$1}')}`)
    .sort()
  const documented = Object.entries(doc.paths as Record<string, Record<string, unknown>>)
    .flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`))
    .sort()
  t.same(documented, declared)
  t.same(declared, [
    'GET /v1', 'GET /v1/categories', 'GET /v1/sites', 'GET /v1/sites/along-route', 'GET /v1/sites/by-bbox',
    'GET /v1/sites/by-tag', 'GET /v1/sites/nearest', 'GET /v1/sites/{id}', 'GET /v1/tags', 'GET /v1/usage'
  ])
})

t.test('each partner operation: parameters, answers, exact error codes, security', async (t) => {
  const operations: [string, string, string[], ErrorCode[]][] = [
    ['/v1/sites', 'searchSites', ['lat', 'lng', 'radius', 'category_id', 'tag', 'demo', 'format'], SEARCH_ERRORS],
    ['/v1/sites/nearest', 'nearestSite', ['lat', 'lng', 'radius', 'category_id', 'tag', 'demo'], SEARCH_ERRORS],
    ['/v1/sites/by-tag', 'sitesByTag', ['tag', 'page', 'per_page', 'demo', 'format'], BY_TAG_ERRORS],
    [
      '/v1/sites/along-route', 'sitesAlongRoute', ['path', 'radius', 'category_id', 'tag', 'demo', 'format'],
      AREA_ERRORS
    ],
    [
      '/v1/sites/by-bbox', 'sitesByBbox', ['bbox', 'page', 'per_page', 'category_id', 'tag', 'demo', 'format'],
      AREA_ERRORS
    ],
    ['/v1/sites/{id}', 'siteById', ['demo', 'id'], SITE_ERRORS],
    ['/v1/usage', 'usage', ['expand', 'demo'], UNCOUNTED_ERRORS],
    ['/v1/categories', 'categories', ['demo'], ['rest_invalid_param']],
    ['/v1/tags', 'tags', ['demo'], ['rest_invalid_param']]
  ]
  for (const [path, operationId, params, codes] of operations) {
    const op = doc.paths[path].get
    t.equal(op.operationId, operationId)
    t.same(op.parameters.map((p: { name: string }) => p.name), params, `${path} parameters`)
    const required = op.parameters.filter((p: { required: boolean }) => p.required).map((p: { name: string }) => p.name)
    const requiredOf: Record<string, string[]> = {
      '/v1/sites/by-tag': ['tag'], '/v1/sites/along-route': ['path'], '/v1/sites/by-bbox': ['bbox'],
      '/v1/sites/{id}': ['id'], '/v1/usage': [], '/v1/categories': [], '/v1/tags': []
    }
    t.same(required, requiredOf[path as string] ?? ['lat', 'lng'], `${path}: only what has no default is required`)
    t.notOk(op.security, 'the document-wide security applies')
    const expected = [...new Set([...PARTNER_ERRORS, ...codes])]
    const documented: string[] = []
    for (const [status, response] of Object.entries(op.responses as Record<string, { content: ErrorContent }>)) {
      if (status === '200' || status === '304') continue
      const enumCodes = response.content['application/json'].schema.properties.code.enum
      for (const code of enumCodes) {
        t.equal(ERRORS[code as ErrorCode].status, Number(status), `${path}: ${code} under ${status}`)
      }
      documented.push(...enumCodes)
    }
    t.same(documented.sort(), expected.sort(), `${path}: every error code it can answer, and no other`)
  }
  t.same(Object.keys(doc.paths['/v1/sites'].get.responses['200'].content), ['application/json', 'application/geo+json'])
  t.same(doc.components.securitySchemes.api_key, {
    type: 'apiKey', in: 'query', name: 'api_key', description: 'The partner token'
  })
  t.same(doc.security, [{ api_key: [] }, { bearer: [] }])
  t.same(doc.paths['/v1'].get.security, [], '/v1 needs no token')
  t.equal(doc.paths['/healthz'], undefined, 'the operators\' probes are not in the partners\' document')
  t.equal(doc.paths['/readyz'], undefined)
  t.same(doc.servers, [{ url: '/', description: 'this service' }])
})

// The headers of each documented operation, by status: `rate` the six rate-limit headers (`rate!`
// required), `fresh` ETag, Cache-Control and Vary (required), `vary` Vary alone (required),
// `no-store` Cache-Control (required), `retry` Retry-After (required); X-Request-Id (required) on
// every answer.
/** The headers of the searches; by-tag and by-id answer 403 only before the limiter (the endpoint is closed). */
const SEARCH = {
  200: 'rate fresh', 304: 'rate fresh', 400: 'rate no-store', 401: 'no-store', 403: 'rate no-store',
  429: 'rate! retry no-store', 500: 'rate no-store', 503: 'retry no-store'
}
const LOOKUP = { ...SEARCH, 403: 'no-store' }
const HEADERS: Record<string, Record<string, string>> = {
  '/v1/sites': SEARCH,
  '/v1/sites/nearest': SEARCH,
  '/v1/sites/by-tag': LOOKUP,
  '/v1/sites/along-route': SEARCH,
  '/v1/sites/by-bbox': SEARCH,
  '/v1/sites/{id}': LOOKUP,
  '/v1/categories': { 200: 'fresh', 304: 'fresh', 400: 'no-store', 401: 'no-store', 403: 'no-store', 500: 'no-store' },
  '/v1/tags': { 200: 'fresh', 304: 'fresh', 400: 'no-store', 401: 'no-store', 403: 'no-store', 500: 'no-store' },
  '/v1/usage': { 200: 'vary no-store', 400: 'no-store', 401: 'no-store', 403: 'no-store', 500: 'no-store' },
  '/v1': { 200: '' }
}
const RATE = [
  'RateLimit-Policy', 'RateLimit', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Used', 'X-RateLimit-Reset'
]

/** name → required, as the document should have them */
function expectedHeaders (spec: string): Record<string, boolean> {
  const headers: Record<string, boolean> = { 'X-Request-Id': true }
  for (const part of spec.split(' ').filter(Boolean)) {
    if (part === 'rate' || part === 'rate!') for (const name of RATE) headers[name] = part === 'rate!'
    if (part === 'fresh') Object.assign(headers, { ETag: true, 'Cache-Control': true, Vary: true })
    if (part === 'vary') headers.Vary = true
    if (part === 'no-store') headers['Cache-Control'] = true
    if (part === 'retry') headers['Retry-After'] = true
  }
  return headers
}

type DocHeaders = Record<string, { required?: boolean, description: string, schema: { type: string } }>

t.test('response headers of every operation, by status', async (t) => {
  for (const [path, statuses] of Object.entries(HEADERS)) {
    const responses = doc.paths[path].get.responses as Record<string, { headers: DocHeaders }>
    t.same(Object.keys(responses).sort(), Object.keys(statuses).sort(), `${path}: its statuses`)
    for (const [status, spec] of Object.entries(statuses)) {
      const documented = Object.fromEntries(
        Object.entries(responses[status].headers).map(([name, h]) => [name, h.required === true])
      )
      t.same(documented, expectedHeaders(spec), `${path} ${status}`)
    }
  }
  const sites = doc.paths['/v1/sites'].get.responses
  t.equal(sites['200'].headers['Cache-Control'].description,
    'private, max-age=60: the answer may be reused for that many seconds, by this caller only')
  t.equal(sites['400'].headers['Cache-Control'].description, 'no-store: an error is not to be kept')
  t.match(sites['403'].headers.RateLimit.description, new RegExp(
    'Sent only with svc_partner_api_category_not_permitted \\(refused after the request was counted\\), ' +
    'and when at least one of the partner\'s windows is limited\\.$'))
  t.match(sites['200'].headers.RateLimit.description, /Sent when at least one of the partner's windows is limited\.$/)
  t.equal(sites['304'].content, undefined, '304: no body')
  t.same(sites['429'].headers['Retry-After'].schema, { type: 'integer' })
})

t.test('the service sends the headers and codes the document says, by operation and status', async (t) => {
  const { app, tokens } = await buildTestApp(t, {
    sandbox: [site('s-1', 4, 51.5, -0.12, ['~fuel']), site('s-2', 7, 52, 0)],
    partners: [
      { name: 'Full', slug: 'full', tier: 'growth', siteById: true },
      { name: 'Demo', slug: 'demo', tier: 'demo' },
      { name: 'Free', slug: 'free', tier: 'growth', siteById: true, limitOverrides: UNLIMITED },
      { name: 'Tight', slug: 'tight', tier: 'growth', siteById: true, limitOverrides: { minute: 1 } },
      { name: 'Paused', slug: 'paused', tier: 'growth', siteById: true, status: 'suspended' }
    ]
  })
  // per operation: its URL and query, a malformed query, and the extra refusals it has
  const operations: Record<string, { url: string, bad: string, more?: string[] }> = {
    '/v1/sites': {
      url: '/v1/sites?lat=51.5&lng=-0.12', bad: '/v1/sites?lat=abc&lng=-0.12',
      more: ['/v1/sites?lng=-0.12', '/v1/sites?lat=51.5&lng=-0.12&category_id=99']
    },
    '/v1/sites/nearest': {
      url: '/v1/sites/nearest?lat=51.5&lng=-0.12', bad: '/v1/sites/nearest?lat=0&lng=0',
      more: ['/v1/sites/nearest?lat=51.5&lng=-0.12&category_id=99']
    },
    '/v1/sites/by-tag': { url: '/v1/sites/by-tag?tag=~fuel', bad: '/v1/sites/by-tag?tag=fuel' },
    '/v1/sites/along-route': {
      url: '/v1/sites/along-route?path=51.5,-0.12|52,0', bad: '/v1/sites/along-route?path=51.5',
      more: ['/v1/sites/along-route?path=95,1|52,0', '/v1/sites/along-route?path=51.5,-0.12|52,0&category_id=99']
    },
    '/v1/sites/by-bbox': {
      url: '/v1/sites/by-bbox?bbox=-1,51,1,53', bad: '/v1/sites/by-bbox?bbox=-1,51,1',
      more: ['/v1/sites/by-bbox?bbox=0,0,0,0', '/v1/sites/by-bbox?bbox=-1,51,1,53&category_id=99']
    },
    '/v1/sites/{id}': { url: '/v1/sites/s-1', bad: '/v1/sites/s.1' },
    '/v1/usage': { url: '/v1/usage', bad: '/v1/usage?expand=all' },
    '/v1/categories': { url: '/v1/categories', bad: '/v1/categories?demo=maybe' },
    '/v1/tags': { url: '/v1/tags', bad: '/v1/tags?demo=maybe' }
  }
  const known = new Map(Object.keys(expectedHeaders('rate fresh retry')).map((name) => [name.toLowerCase(), name]))
  const withKey = (url: string, slug: string) => `${url}${url.includes('?') ? '&' : '?'}api_key=${tokens[slug]}`
  t.equal((await app.inject(withKey('/v1/sites/s-2', 'tight'))).statusCode, 200,
    'the tight partner\'s one request of the minute')
  for (const [path, op] of Object.entries(operations)) {
    const responses = doc.paths[path].get.responses as Record<string, { headers: DocHeaders, content?: ErrorContent }>
    const seen = new Map<string, Set<string>>()
    const check = async (label: string, url: string, headers: Record<string, string> = {}) => {
      const res = await app.inject({ url, headers })
      const status = String(res.statusCode)
      const documented = responses[status]
      if (!documented) throw new Error(`${path} ${label}: ${status} is not documented`)
      if (status !== '200' && status !== '304') {
        t.ok(documented.content!['application/json'].schema.properties.code.enum.includes(res.json().code),
          `${path} ${label}: ${res.json().code} documented under ${status}`)
      }
      const sent = Object.keys(res.headers).filter((name) => known.has(name)).map((name) => known.get(name)!)
      t.same(sent.filter((name) => !documented.headers[name]), [],
        `${path} ${label} (${status}): every header sent is documented`)
      t.same(
        Object.keys(documented.headers).filter((name) => documented.headers[name].required && !sent.includes(name)), [],
        `${path} ${label} (${status}): every required header is sent`
      )
      seen.set(status, new Set([...seen.get(status) ?? [], ...sent]))
      return res
    }
    const ok = await check('full', withKey(op.url, 'full'))
    if (ok.headers.etag) {
      await check('If-None-Match', withKey(op.url, 'full'), { 'if-none-match': String(ok.headers.etag) })
    }
    await check('malformed', withKey(op.bad, 'full'))
    for (const url of op.more ?? []) await check(url, withKey(url, 'full'))
    await check('no token', op.url)
    await check('unknown token', `${op.url}${op.url.includes('?') ? '&' : '?'}api_key=lsp_nope`)
    await check('suspended', withKey(op.url, 'paused'))
    await check('demo tier', withKey(op.url, 'demo'))
    await check('unlimited', withKey(op.url, 'free'))
    await check('over the limit', withKey(op.url, 'tight'))
    // every status but 500 and 503 was answered (a 503 needs a shared state that cannot be read: see
    // test/e2e/redis-outage.test.ts); each of them sent, across its answers, every header documented for it
    t.same([...seen.keys()].sort(), Object.keys(responses).filter((s) => s !== '500' && s !== '503').sort(),
      `${path}: each documented status seen but 500 and 503`)
    for (const [status, names] of seen) {
      t.same([...names].sort(), Object.keys(responses[status].headers).sort(),
        `${path} ${status}: each documented header seen`)
    }
  }
})

t.test('a real example of every answer: each valid against its schema, each error code its own', async (t) => {
  const { Ajv2020 } = await import('ajv/dist/2020.js')
  const ajv = new Ajv2020({ strict: false })
  let checked = 0
  type Media = Record<string, { schema: object, example?: unknown, examples?: Record<string, { value: unknown }> }>
  for (const [path, ops] of Object.entries(
    doc.paths as Record<string, { get: { responses: Record<string, { content?: Media }> } }>
  )) {
    if (path === '/v1') continue
    for (const [status, response] of Object.entries(ops.get.responses)) {
      for (const [type, media] of Object.entries(response.content ?? {})) {
        const examples = media.examples
          ? Object.entries(media.examples)
          : media.example !== undefined
            ? [
                ['example', { value: media.example }] as const
              ]
            : []
        t.ok(examples.length > 0, `${path} ${status} ${type} has an example`)
        const validate = ajv.compile(media.schema)
        for (const [name, example] of examples) {
          if (!validate(example.value)) t.fail(`${path} ${status} ${type} ${name}`, { errors: validate.errors })
          checked++
          if (status !== '200') {
            const body = example.value as { code: string, data: Record<string, unknown> }
            t.equal(body.code, name, `${path} ${status}: the example of ${name} is that code's`)
            t.equal(Object.hasOwn(body.data, 'window'), status === '429', `${path} ${name}: window only on 429`)
            t.equal(Object.hasOwn(body.data, 'retry_after'), status === '429' || status === '503')
          }
        }
      }
    }
  }
  t.ok(checked > 60, `${checked} examples checked`)
})

t.test('the specification version and its history', async (t) => {
  t.equal(doc.info.version, '1.3')
  t.match(doc.info.description, '| 1.3 | 2026-11-28 | Added /sites/along-route')
  t.match(doc.info.description,
    '| 1.2.6 | 2026-02-18 | Added /sites/by-tag (paginated, map-minimal) and the optional tag filter on /sites. |')
  t.match(doc.info.description, '| 1.0 | 2025-11-05 |')
})

t.test('GET /v1: the index', async (t) => {
  const index = await app.inject('/v1')
  t.equal(index.statusCode, 200)
  t.same(index.json(), {
    name: 'Landing-Site Partner API',
    version: '1.3',
    documentation: { openapi: '/v1/openapi.json', docs: '/docs' },
    support: {
      contact: null,
      send: 'your partner id (partner.id in GET /v1/usage), the time of the request in UTC, the answer\'s ' +
        'X-Request-Id, the request, and the answer\'s status, headers and body; never your token'
    },
    operations: [
      { method: 'GET', path: '/v1/sites', summary: 'Sites near a point, nearest first' },
      { method: 'GET', path: '/v1/sites/nearest', summary: 'The nearest site within the radius, or null' },
      { method: 'GET', path: '/v1/sites/by-tag', summary: 'Sites of one tag, map-minimal, in id order, paginated' },
      {
        method: 'GET', path: '/v1/sites/along-route',
        summary: 'Sites within a corridor along a flight route, in the order they are passed'
      },
      {
        method: 'GET', path: '/v1/sites/by-bbox', summary: 'Sites in a map\'s box, map-minimal, in id order, paginated'
      },
      {
        method: 'GET', path: '/v1/sites/{id}',
        summary: 'One site by id, or null when it is unknown or outside the allow-list'
      },
      {
        method: 'GET', path: '/v1/usage',
        summary: 'Usage report: the three windows, and telemetry with expand=telemetry'
      },
      { method: 'GET', path: '/v1/categories', summary: 'The categories this partner may use, with their names' },
      {
        method: 'GET', path: '/v1/tags',
        summary: 'The tags of this partner\'s dataset, with their site counts within its categories'
      }
    ],
    datasets: {
      sandbox: { site_count: 2, built_at: app.datasets.get('sandbox').builtAt },
      production: { site_count: 1, built_at: app.datasets.get('production').builtAt }
    }
  })
  t.equal((await app.inject('/v1/')).statusCode, 200, 'with a trailing slash too')
  t.notOk(index.body.includes(tokens.demo))
})

t.test('the docs page is served locally', async (t) => {
  const page = await app.inject('/docs')
  t.equal(page.statusCode, 200)
  t.match(page.body, /swagger-ui/)
  for (const asset of ['swagger-ui-bundle.js', 'swagger-ui.css', 'swagger-initializer.js']) {
    const a = await app.inject(`/docs/static/${asset}`)
    t.equal(a.statusCode, 200, asset)
  }
  t.notMatch(page.body, /https?:\/\/(?!127\.0\.0\.1|localhost)[a-z]/i, 'no external asset')
})

t.test('the document and the docs page are compressed when asked; ' +
  'the partner routes are left to their own rules', async (t) => {
  const plain = res.rawPayload
  t.equal(res.headers.vary, 'accept-encoding', 'a shared cache keeps the forms apart, the plain one too')
  t.equal(res.headers['content-encoding'], undefined)
  const decoders = { gzip: gunzipSync, br: brotliDecompressSync }
  for (const encoding of ['gzip', 'br'] as const) {
    const r = await app.inject({ url: '/v1/openapi.json', headers: { 'accept-encoding': encoding } })
    t.same([
      r.statusCode, r.headers['content-encoding'], r.headers['content-type'], r.headers.vary, r.headers['cache-control']
    ],
    [200, encoding, 'application/json; charset=utf-8', 'accept-encoding', 'public, max-age=300'], encoding)
    t.ok(r.rawPayload.length < plain.length / 10, `${encoding}: ${r.rawPayload.length} bytes of ${plain.length}`)
    t.same(decoders[encoding](r.rawPayload), plain, `${encoding}: the same document`)
    const bundle = await app.inject({
      url: '/docs/static/swagger-ui-bundle.js', headers: { 'accept-encoding': encoding }
    })
    const asIs = await app.inject('/docs/static/swagger-ui-bundle.js')
    t.same([bundle.statusCode, bundle.headers['content-encoding'], asIs.headers['content-encoding']],
      [200, encoding, undefined])
    t.same(decoders[encoding](bundle.rawPayload), asIs.rawPayload,
      `${encoding}: the page's script, ${bundle.rawPayload.length} bytes of ${asIs.rawPayload.length}`)
  }
  const index = await app.inject({ url: '/v1/', headers: { 'accept-encoding': 'gzip' } })
  t.ok(index.rawPayload.length >= 1024, 'the index is large enough to be compressed')
  t.equal(index.headers['content-encoding'], undefined, 'but it is outside the docs\' context')
})

t.test('a HEAD of the docs describes what its GET sends, encoding included', async (t) => {
  const urls = ['/docs', '/docs/json', '/docs/static/swagger-ui.css', '/docs/static/swagger-initializer.js',
    '/v1/openapi.json']
  for (const url of urls) {
    for (const encoding of ['br', 'gzip', 'identity']) {
      const headers = { 'accept-encoding': encoding }
      const get = await app.inject({ url, headers })
      const head = await app.inject({ method: 'HEAD', url, headers })
      const described = ({ statusCode, headers }: typeof get) =>
        [statusCode, headers['content-encoding'], headers['content-length'], headers.vary, headers['content-type']]
      t.same(described(head), described(get), `${url}, ${encoding}`)
      t.equal(head.rawPayload.length, 0, `${url}, ${encoding}: no body`)
    }
  }
})

t.test('SUPPORT_CONTACT: in GET /v1, the document\'s contact and its description', async (t) => {
  const { app } = await buildTestApp(t, {}, { SUPPORT_CONTACT: 'partners@example.com' })
  t.equal((await app.inject('/v1')).json().support.contact, 'partners@example.com')
  const doc = (await app.inject('/v1/openapi.json')).json()
  t.same(doc.info.contact, { name: 'Support', email: 'partners@example.com' })
  t.match(doc.info.description, 'Support: Write to partners@example.com, with your partner id')
  const web = (await buildTestApp(t, {}, { SUPPORT_CONTACT: 'https://example.com/help' })).app
  t.same((await web.inject('/v1/openapi.json')).json().info.contact,
    { name: 'Support', url: 'https://example.com/help' })
  const none = (await (await buildTestApp(t, {})).app.inject('/v1/openapi.json')).json()
  t.equal(none.info.contact, undefined)
  t.match(none.info.description, 'Support: Ask the operator who issued your token, with your partner id')
})
