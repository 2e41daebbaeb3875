// The OpenAPI document: valid OpenAPI 3.1 (checked by a validator against the official schema),
// every route in it with its parameters, responses and the exact error codes it can answer,
// the api_key security scheme, the specification's version; the docs page and the index.
import t from 'tap'
import { Validator } from '@seriousme/openapi-schema-validator'
import { ERRORS, type ErrorCode } from '../../src/errors.ts'
import { PARTNER_ERRORS } from '../../src/schemas/errors.ts'
import { SEARCH_ERRORS } from '../../src/routes/sites.ts'
import { BY_TAG_ERRORS } from '../../src/routes/by-tag.ts'
import { SITE_ERRORS } from '../../src/routes/site-by-id.ts'
import { USAGE_ERRORS } from '../../src/routes/usage.ts'
import { buildTestApp, site } from '../helper.ts'

const { app, tokens } = await buildTestApp(t, {
  sandbox: [site('s-1', 4, 51.5, -0.12, ['~fuel']), site('s-2', 7, 52, 0)],
  production: [site('p-1', 4, 10, 10)],
  partners: [{ name: 'Demo', slug: 'demo' }]
})
const res = await app.inject('/v1/openapi.json')
const doc = res.json()

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
  const declared = app.declaredRoutes.filter((r) => !r.hidden && r.method !== 'HEAD').map((r) => `${r.method} ${r.url.replace(/:(\w+)/g, '{$1}')}`).sort()
  const documented = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`)).sort()
  t.same(documented, declared)
  t.same(declared, ['GET /v1', 'GET /v1/categories', 'GET /v1/sites', 'GET /v1/sites/by-tag', 'GET /v1/sites/nearest', 'GET /v1/sites/{id}', 'GET /v1/tags', 'GET /v1/usage'])
})

t.test('each partner operation: parameters, answers, exact error codes, security', async (t) => {
  const operations: [string, string, string[], ErrorCode[]][] = [
    ['/v1/sites', 'searchSites', ['lat', 'lng', 'radius', 'category_id', 'tag', 'demo', 'format'], SEARCH_ERRORS],
    ['/v1/sites/nearest', 'nearestSite', ['lat', 'lng', 'radius', 'category_id', 'tag', 'demo'], SEARCH_ERRORS],
    ['/v1/sites/by-tag', 'sitesByTag', ['tag', 'page', 'per_page', 'demo', 'format'], BY_TAG_ERRORS],
    ['/v1/sites/{id}', 'siteById', ['demo', 'id'], SITE_ERRORS],
    ['/v1/usage', 'usage', ['expand', 'demo'], USAGE_ERRORS],
    ['/v1/categories', 'categories', ['demo'], []],
    ['/v1/tags', 'tags', ['demo'], []]
  ]
  for (const [path, operationId, params, codes] of operations) {
    const op = doc.paths[path].get
    t.equal(op.operationId, operationId)
    t.same(op.parameters.map((p: { name: string }) => p.name), params, `${path} parameters`)
    const required = op.parameters.filter((p: { required: boolean }) => p.required).map((p: { name: string }) => p.name)
    t.same(required, { '/v1/sites/by-tag': ['tag'], '/v1/sites/{id}': ['id'], '/v1/usage': [], '/v1/categories': [], '/v1/tags': [] }[path as string] ?? ['lat', 'lng'], `${path}: only what has no default is required`)
    t.notOk(op.security, 'the document-wide security applies')
    const expected = [...new Set([...PARTNER_ERRORS, ...codes])]
    const documented: string[] = []
    for (const [status, response] of Object.entries(op.responses as Record<string, { content: Record<string, { schema: { properties: { code: { enum: string[] } } } }> }>)) {
      if (status === '200') continue
      const enumCodes = response.content['application/json'].schema.properties.code.enum
      for (const code of enumCodes) t.equal(ERRORS[code as ErrorCode].status, Number(status), `${path}: ${code} under ${status}`)
      documented.push(...enumCodes)
    }
    t.same(documented.sort(), expected.sort(), `${path}: every error code it can answer, and no other`)
  }
  t.same(Object.keys(doc.paths['/v1/sites'].get.responses['200'].content), ['application/json', 'application/geo+json'])
  t.same(doc.components.securitySchemes.api_key, { type: 'apiKey', in: 'query', name: 'api_key', description: 'The partner token' })
  t.same(doc.security, [{ api_key: [] }, { bearer: [] }])
  t.same(doc.paths['/v1'].get.security, [], '/v1 needs no token')
  t.equal(doc.paths['/healthz'], undefined, 'the operators\' probes are not in the partners\' document')
  t.equal(doc.paths['/readyz'], undefined)
  t.same(doc.servers, [{ url: '/', description: 'this service' }])
})

t.test('response headers of every partner operation', async (t) => {
  const RATE = ['RateLimit-Policy', 'RateLimit', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Used', 'X-RateLimit-Reset']
  const CACHE = ['ETag', 'Cache-Control', 'Vary']
  const expected: Record<string, string[]> = {
    '/v1/sites': [...RATE, ...CACHE],
    '/v1/sites/nearest': [...RATE, ...CACHE],
    '/v1/sites/by-tag': [...RATE, ...CACHE],
    '/v1/sites/{id}': [...RATE, ...CACHE],
    '/v1/categories': CACHE,
    '/v1/tags': CACHE,
    '/v1/usage': []
  }
  for (const [path, headers] of Object.entries(expected)) {
    const responses = doc.paths[path].get.responses
    t.same(Object.keys(responses['200'].headers).sort(), [...headers, 'X-Request-Id'].sort(), `${path} 200`)
    for (const [status, response] of Object.entries(responses as Record<string, { headers: Record<string, unknown> }>)) {
      if (status === '200') continue
      const want = status === '429' ? [...RATE, 'Retry-After', 'X-Request-Id'] : ['X-Request-Id']
      t.same(Object.keys(response.headers).sort(), want.sort(), `${path} ${status}`)
    }
  }
})

t.test('a real example of every answer: each valid against its schema, each error code its own', async (t) => {
  const { Ajv2020 } = await import('ajv/dist/2020.js')
  const ajv = new Ajv2020({ strict: false })
  let checked = 0
  for (const [path, ops] of Object.entries(doc.paths as Record<string, { get: { responses: Record<string, { content?: Record<string, { schema: object, example?: unknown, examples?: Record<string, { value: unknown }> }> }> } }>)) {
    if (path === '/v1') continue
    for (const [status, response] of Object.entries(ops.get.responses)) {
      for (const [type, media] of Object.entries(response.content ?? {})) {
        const examples = media.examples ? Object.entries(media.examples) : media.example !== undefined ? [['example', { value: media.example }] as const] : []
        t.ok(examples.length > 0, `${path} ${status} ${type} has an example`)
        const validate = ajv.compile(media.schema)
        for (const [name, example] of examples) {
          if (!validate(example.value)) t.fail(`${path} ${status} ${type} ${name}`, { errors: validate.errors })
          checked++
          if (status !== '200') {
            const body = example.value as { code: string, data: Record<string, unknown> }
            t.equal(body.code, name, `${path} ${status}: the example of ${name} is that code's`)
            t.equal(Object.hasOwn(body.data, 'window'), status === '429', `${path} ${name}: window only on 429`)
            t.equal(Object.hasOwn(body.data, 'retry_after'), status === '429')
          }
        }
      }
    }
  }
  t.ok(checked > 60, `${checked} examples checked`)
})

t.test('the specification version and its history', async (t) => {
  t.equal(doc.info.version, '1.2.6')
  t.match(doc.info.description, '| 1.2.6 | 2026-02-18 | Added /sites/by-tag (paginated, map-minimal) and the optional tag filter on /sites. |')
  t.match(doc.info.description, '| 1.0 | 2025-11-05 |')
})

t.test('GET /v1: the index', async (t) => {
  const index = await app.inject('/v1')
  t.equal(index.statusCode, 200)
  t.same(index.json(), {
    name: 'Landing-Site Partner API',
    version: '1.2.6',
    documentation: { openapi: '/v1/openapi.json', docs: '/docs' },
    operations: [
      { method: 'GET', path: '/v1/sites', summary: 'Sites near a point, nearest first' },
      { method: 'GET', path: '/v1/sites/nearest', summary: 'The nearest site within the radius, or null' },
      { method: 'GET', path: '/v1/sites/by-tag', summary: 'Sites of one tag, map-minimal, in id order, paginated' },
      { method: 'GET', path: '/v1/sites/{id}', summary: 'One site by id, or null when it is unknown or outside the allow-list' },
      { method: 'GET', path: '/v1/usage', summary: 'Usage report: the three windows, and telemetry with expand=telemetry' },
      { method: 'GET', path: '/v1/categories', summary: 'The categories this partner may use, with their names' },
      { method: 'GET', path: '/v1/tags', summary: 'The tags of this partner\'s dataset, with their site counts within its categories' }
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
