// /sites/by-tag and /sites/{id}: pages, totals, order, allow-list, feature switches, errors,
// and the two 500 codes.
import t from 'tap'
import { TAG_ERROR, UNLIMITED, buildTestApp, site } from '../helper.ts'

// 23 sites with ~fuel in categories 4, 7 and 9 (ids deliberately out of order), 3 with ~ppr.
const sandbox = [
  ...Array.from({ length: 23 },
    (_, i) => site(`f-${String(22 - i).padStart(2, '0')}`, [4, 7, 9][i % 3], 10 + i / 10, 20, ['~fuel'])),
  site('p-1', 4, 1, 1, ['~ppr']), site('p-2', 1, 1, 2, ['~ppr']), site('p-3', 8, 1, 3, ['~ppr', '~fuel-x'])
]
const production = [site('prod-1', 4, 5, 5, ['~fuel'], { name: 'Prod One', region: 'AFR', country: 'KE' })]
const { app, tokens } = await buildTestApp(t, {
  sandbox,
  production,
  partners: [
    { name: 'Demo', slug: 'demo', tier: 'demo', siteById: true, limitOverrides: UNLIMITED },
    { name: 'Growth', slug: 'growth', tier: 'growth', limitOverrides: UNLIMITED },
    {
      name: 'ById', slug: 'byid', tier: 'scale', siteById: true, categories: [4, 8], otherCategories: true,
      limitOverrides: UNLIMITED
    },
    { name: 'Live', slug: 'live', tier: 'growth', environment: 'production', siteById: true, limitOverrides: UNLIMITED }
  ]
})
const get = (slug: string, path: string) =>
  app.inject({ method: 'GET', url: `/v1${path}${path.includes('?') ? '&' : '?'}api_key=${tokens[slug]}` })
const body = async (slug: string, path: string) => JSON.parse((await get(slug, path)).body)
const fuelIds = sandbox.filter((s) => s.tags.includes('~fuel') && [4, 7].includes(s.category)).map((s) => s.id).sort()

t.test('by-tag: map-minimal records in id order, true totals, pages', async (t) => {
  const page = await body('growth', '/sites/by-tag?tag=~fuel&per_page=5')
  t.same(Object.keys(page), ['tag', 'page', 'per_page', 'total', 'total_pages', 'sites'])
  t.same([page.tag, page.page, page.per_page, page.total, page.total_pages], [
    '~fuel', 1, 5, fuelIds.length, Math.ceil(fuelIds.length / 5)
  ])
  t.same(page.sites.map((s: { id: string }) => s.id), fuelIds.slice(0, 5))
  const first = sandbox.find((s) => s.id === fuelIds[0])!
  t.same(page.sites[0], {
    id: first.id, category: String(first.category), latitude: first.latitude, longitude: first.longitude,
    helipaddy_link: `https://pilot.test/pad/${first.id}`
  })
  const all: string[] = []
  for (let p = 1; p <= page.total_pages; p++) {
    all.push(
      ...(await body('growth', `/sites/by-tag?tag=~fuel&per_page=5&page=${p}`)).sites.map((s: { id: string }) => s.id)
    )
  }
  t.same(all, fuelIds, 'the pages together hold every site once, in id order')
  const past = await body('growth', '/sites/by-tag?tag=~fuel&per_page=5&page=99')
  t.same([past.page, past.total, past.sites], [99, fuelIds.length, []], 'past the last page: empty, true totals')
})

t.test('by-tag: defaults and the 500 clamp', async (t) => {
  const page = await body('growth', '/sites/by-tag?tag=~fuel')
  t.same([page.page, page.per_page, page.sites.length], [1, 200, fuelIds.length])
  t.equal((await body('growth', '/sites/by-tag?tag=~fuel&per_page=100000')).per_page, 500)
  const none = await body('growth', '/sites/by-tag?tag=~nothing')
  t.same(none, { tag: '~nothing', page: 1, per_page: 200, total: 0, total_pages: 0, sites: [] })
})

t.test('by-tag: the allow-list applies (category 1 never, 8+ with other categories)', async (t) => {
  t.same((await body('growth', '/sites/by-tag?tag=~ppr')).sites.map((s: { id: string }) => s.id), ['p-1'])
  t.same((await body('byid', '/sites/by-tag?tag=~ppr')).sites.map((s: { id: string }) => s.id), ['p-1', 'p-3'])
  t.same((await body('live', '/sites/by-tag?tag=~fuel')).sites.map((s: { id: string }) => s.id), ['prod-1'],
    'production partner, production data')
  t.equal((await body('live', '/sites/by-tag?tag=~fuel&demo=true')).total, fuelIds.length, 'demo=true: sandbox')
})

t.test('by-tag: errors', async (t) => {
  const cases: [string, string, number, object][] = [
    [
      'demo', '/sites/by-tag?tag=~fuel', 403,
      {
        code: 'svc_partner_api_feature_disabled',
        message: 'This endpoint is not open to the demo tier. Ask the operator for the growth or scale tier.',
        data: { status: 403, reason: 'tier' }
      }
    ],
    [
      'growth', '/sites/by-tag', 400,
      {
        code: 'rest_missing_callback_param', message: 'Missing parameter(s): tag.',
        data: { status: 400, params: ['tag'] }
      }
    ],
    [
      'growth', '/sites/by-tag?tag=fuel', 400,
      {
        code: 'rest_invalid_param', message: 'Invalid parameter(s): tag.',
        data: { status: 400, params: { tag: TAG_ERROR } }
      }
    ],
    [
      'growth', `/sites/by-tag?tag=~${'a'.repeat(64)}`, 400,
      {
        code: 'rest_invalid_param', message: 'Invalid parameter(s): tag.',
        data: { status: 400, params: { tag: TAG_ERROR } }
      }
    ],
    [
      'growth', '/sites/by-tag?tag=~fuel&page=0&per_page=x', 400,
      {
        code: 'rest_invalid_param', message: 'Invalid parameter(s): page, per_page.',
        data: {
          status: 400,
          params: { page: 'page must be an integer from 1', per_page: 'per_page must be an integer from 1' }
        }
      }
    ],
    [
      'growth', '/sites/by-tag?tag=~fuel&page=1.5', 400,
      {
        code: 'rest_invalid_param', message: 'Invalid parameter(s): page.',
        data: { status: 400, params: { page: 'page must be an integer from 1' } }
      }
    ]
  ]
  for (const [slug, path, status, expected] of cases) {
    const res = await get(slug, path)
    t.equal(res.statusCode, status, path)
    t.same(JSON.parse(res.body), expected, path)
  }
})

t.test('site by id: the record, null, feature switch, malformed ids', async (t) => {
  const record = await body('live', '/sites/prod-1')
  t.same(record, {
    id: 'prod-1', category: '4', name: 'Prod One', region: 'AFR', country: 'KE', latitude: 5, longitude: 5,
    helipaddy_link: 'https://pilot.test/pad/prod-1'
  })
  t.equal((await get('live', '/sites/f-01')).body, 'null', 'a sandbox id is unknown in production')
  t.equal((await body('live', '/sites/f-01?demo=1')).id, 'f-01')
  t.equal((await get('byid', '/sites/p-2')).body, 'null', 'category 1: outside every allow-list')
  t.equal((await body('byid', '/sites/p-3')).id, 'p-3')
  t.equal((await get('byid', '/sites/f-00')).body, 'null', 'category 9 is not in its list')
  t.equal((await get('byid', '/sites/nobody')).body, 'null')
  const disabled = {
    code: 'svc_partner_api_feature_disabled',
    message: 'This endpoint is not enabled for the partner. Ask the operator for the site-by-id approval.',
    data: { status: 403, reason: 'approval' }
  }
  const demoTier = {
    code: 'svc_partner_api_feature_disabled',
    message: 'This endpoint is not open to the demo tier. Ask the operator for the growth or scale tier.',
    data: { status: 403, reason: 'tier' }
  }
  t.same(await body('growth', '/sites/p-1'), disabled, 'site_by_id off')
  t.same(await body('demo', '/sites/p-1'), demoTier, 'the demo tier never, even with site_by_id on')
  const malformed = (reason: string) => ({
    code: 'rest_invalid_param', message: 'Invalid parameter(s): id.', data: { status: 400, params: { id: reason } }
  })
  // past 100 characters too, where Fastify's router would refuse the URL before the route's checks
  for (const id of ['a%2Fb', 'a.b', 'x'.repeat(65), 'x'.repeat(101), 'x'.repeat(5000), '%C3%A9t%C3%A9', 'a%20b']) {
    const res = await get('byid', `/sites/${id}`)
    const what = `${id.slice(0, 20)} (${id.length} characters)`
    t.equal(res.statusCode, 400, what)
    t.same(JSON.parse(res.body), malformed('id does not have the required format'), what)
  }
  const anonymous = await app.inject(`/v1/sites/${'x'.repeat(101)}`)
  t.equal(anonymous.statusCode, 401, 'an overlong id is no reason to skip the token check')
  t.equal(JSON.parse(anonymous.body).code, 'svc_partner_api_missing_key')
})

t.test('the two 500 codes: query failed and prepare failed, details hidden', async (t) => {
  const ds = app.datasets.get('sandbox')
  const saved = ds.byCategory
  ;(ds as { byCategory: unknown }).byCategory = null
  const failed = await get('growth', '/sites?lat=10&lng=20&radius=1')
  ;(ds as { byCategory: unknown }).byCategory = saved
  t.equal(failed.statusCode, 500)
  t.same(JSON.parse(failed.body), {
    code: 'svc_partner_api_query_failed', message: 'The query failed. Retry later; report persistent failures.',
    data: { status: 500 }
  })
  const registry = app.datasets as unknown as { current: Record<string, unknown> }
  const production = registry.current.production
  registry.current.production = undefined
  const unprepared = await get('live', '/sites?lat=10&lng=20&radius=2')
  registry.current.production = production
  t.equal(unprepared.statusCode, 500)
  t.same(JSON.parse(unprepared.body), {
    code: 'svc_partner_api_prepare_failed',
    message: 'The query could not be prepared. Retry later; report persistent failures.', data: { status: 500 }
  })
  t.equal((await get('live', '/sites?lat=10&lng=20&radius=2')).statusCode, 200, 'served again once the dataset is back')
})
