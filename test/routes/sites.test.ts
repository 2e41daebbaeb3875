// /sites and /sites/nearest through inject on fixture files: every error code with its exact
// body, the order of checks, allow-list and category rules, datasets, radius, limits, shapes.
import t from 'tap'
import { buildApp, loggerOptions } from '../../src/app.ts'
import {
  TAG_ERROR, UNLIMITED, buildTestApp, logCapture, nextTurn, site, testConfig, tmpDataDir, writeFixture
} from '../helper.ts'

const KM_PER_DEG = 6371 * Math.PI / 180
const north = (km: number) => Math.round((51.5 + km / KM_PER_DEG) * 1000) / 1000

const sandbox = [
  site('sbx-hotel', 4, 51.5, -0.12, ['~fuel'], { name: 'The Savoy Helipad', region: 'EUR', country: 'GB' }),
  site('sbx-aero', 7, north(5), -0.12, ['~fuel', '~ppr']),
  site('sbx-reserved', 1, 51.5, -0.12),
  site('sbx-pub', 5, north(1), -0.12),
  site('sbx-estate', 8, north(2), -0.12),
  site('sbx-heliport', 9, north(3), -0.12),
  site('sbx-20km', 4, north(20), -0.12),
  site('sbx-30km', 4, north(30), -0.12),
  site('sbx-70km', 4, north(70), -0.12),
  site('sbx-80km', 4, north(80), -0.12)
]
const production = [
  site('prd-hotel', 4, 51.5, -0.12, ['~fuel'], { name: 'Production Hotel', region: 'EUR', country: 'FR' }),
  site('prd-aero', 7, north(4), -0.12)
]

const fixture = {
  sandbox,
  production,
  partners: [
    { name: 'Demo Tier', slug: 'demo', tier: 'demo' as const, environment: 'production' as const },
    {
      name: 'Live', slug: 'live', tier: 'growth' as const, environment: 'production' as const, categories: [4, 7, 9],
      limitOverrides: UNLIMITED
    },
    { name: 'Sandboxed', slug: 'sandboxed', tier: 'growth' as const, limitOverrides: UNLIMITED },
    {
      name: 'Others', slug: 'others', tier: 'scale' as const, categories: [1, 4, 8, 9], otherCategories: true,
      limitOverrides: UNLIMITED
    },
    {
      name: 'Capped', slug: 'capped', tier: 'growth' as const, radiusCapKm: 5, maxResults: 3,
      categories: [4, 5, 7, 8, 9], otherCategories: true, limitOverrides: UNLIMITED
    },
    { name: 'Suspended', slug: 'suspended', status: 'suspended' as const },
    { name: 'Pending', slug: 'pending', status: 'pending' as const }
  ]
}

const { app, tokens } = await buildTestApp(t, fixture)

const get = (path: string, headers: Record<string, string> = {}) => app.inject({ method: 'GET', url: path, headers })
const q = (slug: string, params: string) => `api_key=${encodeURIComponent(tokens[slug])}&${params}`
const ids = (body: string) => (JSON.parse(body) as { id: string }[]).map((r) => r.id)

const ENDPOINTS = ['/v1/sites', '/v1/sites/nearest']
const error = (code: string, status: number, message: string, extra: object = {}) =>
  ({ code, message, data: { status, ...extra } })
const MISSING_KEY = error('svc_partner_api_missing_key', 401,
  'An API key is required: send it as the api_key query parameter or an Authorization: Bearer header.')
const INVALID_KEY = error('svc_partner_api_invalid_key', 401, 'The API key is not recognised.')
const KEY_REPEATED = error('svc_partner_api_invalid_key', 401,
  'The API key could not be read: api_key was given more than once. Send it once.', { reason: 'api_key_repeated' })
const NOT_BEARER = error('svc_partner_api_invalid_key', 401,
  'The API key could not be read: an Authorization header must be Bearer followed by the key.',
  { reason: 'not_bearer' })
const KEYS_DIFFER = error('svc_partner_api_invalid_key', 401,
  'The API key could not be read: two different keys were sent. Send one.', { reason: 'keys_differ' })
const INACTIVE = error('svc_partner_api_inactive_partner', 403, 'The partner account is not active. Contact support.')
/** The coordinates refused, each with its reason in data.params. */
const invalidCoordinates = (params: Record<string, string>) => error('svc_partner_api_invalid_coordinates', 400,
  'Latitude must be a number from -90 to 90 and longitude a number from -180 to 180.', { params })
const BAD_LAT = invalidCoordinates({ lat: 'lat must be a number from -90 to 90' })
const BAD_LNG = invalidCoordinates({ lng: 'lng must be a number from -180 to 180' })
const AMBIGUOUS = error('svc_partner_api_ambiguous_coordinates', 400,
  'Coordinates 0,0 are ambiguous. Use a real-world location.')
const NOT_PERMITTED = error('svc_partner_api_category_not_permitted', 403,
  'The category is not in the allow-list of this partner.')
const missing = (...params: string[]) =>
  error('rest_missing_callback_param', 400, `Missing parameter(s): ${params.join(', ')}.`, { params })
const invalid = (params: Record<string, string>) =>
  error('rest_invalid_param', 400, `Invalid parameter(s): ${Object.keys(params).join(', ')}.`, { params })

t.test('every error code of both endpoints, with its exact body', async (t) => {
  for (const endpoint of ENDPOINTS) {
    const cases: [string, number, object][] = [
      [`${endpoint}?lat=51.5&lng=-0.12`, 401, MISSING_KEY],
      [`${endpoint}?lat=51.5&lng=-0.12&api_key=`, 401, MISSING_KEY],
      [`${endpoint}?lat=51.5&lng=-0.12&api_key=lsp_wrong`, 401, INVALID_KEY],
      [`${endpoint}?${q('live', 'lat=51.5&lng=-0.12')}&api_key=${tokens.live}`, 401, KEY_REPEATED],
      [`${endpoint}?${q('suspended', 'lat=51.5&lng=-0.12')}`, 403, INACTIVE],
      [`${endpoint}?${q('pending', 'lat=51.5&lng=-0.12')}`, 403, INACTIVE],
      [`${endpoint}?${q('live', 'lng=-0.12')}`, 400, missing('lat')],
      [`${endpoint}?${q('live', 'radius=5')}`, 400, missing('lat', 'lng')],
      [`${endpoint}?${q('live', 'lat=91&lng=-0.12')}`, 400, BAD_LAT],
      [`${endpoint}?${q('live', 'lat=-90.0001&lng=-0.12')}`, 400, BAD_LAT],
      [`${endpoint}?${q('live', 'lat=51.5&lng=180.5')}`, 400, BAD_LNG],
      [`${endpoint}?${q('live', 'lat=NaN&lng=-0.12')}`, 400, BAD_LAT],
      [`${endpoint}?${q('live', 'lat=1e309&lng=-0.12')}`, 400, BAD_LAT],
      [`${endpoint}?${q('live', 'lat=0x10&lng=-0.12')}`, 400, BAD_LAT],
      [`${endpoint}?${q('live', 'lat=&lng=-0.12')}`, 400, BAD_LAT],
      [`${endpoint}?${q('live', 'lat=51.5&lat=51.6&lng=-0.12')}`, 400,
        invalidCoordinates({ lat: 'lat was given more than once' })],
      [`${endpoint}?${q('live', 'lat=0&lng=0')}`, 400, AMBIGUOUS],
      [`${endpoint}?${q('live', 'lat=-0.0&lng=0e5')}`, 400, AMBIGUOUS],
      [`${endpoint}?${q('live', 'lat=51.5&lng=-0.12&radius=0')}`, 400,
        invalid({ radius: 'radius must be a number greater than 0' })],
      [`${endpoint}?${q('live', 'lat=51.5&lng=-0.12&radius=-3')}`, 400,
        invalid({ radius: 'radius must be a number greater than 0' })],
      [`${endpoint}?${q('live', 'lat=51.5&lng=-0.12&radius=ten')}`, 400,
        invalid({ radius: 'radius must be a number greater than 0' })],
      [`${endpoint}?${q('live', 'lat=51.5&lng=-0.12&radius=5&radius=6')}`, 400,
        invalid({ radius: 'radius was given more than once' })],
      [`${endpoint}?${q('live', 'lat=51.5&lng=-0.12&category_id=4.5')}`, 400,
        invalid({ category_id: 'category_id must be an integer' })],
      [`${endpoint}?${q('live', 'lat=51.5&lng=-0.12&tag=fuel')}`, 400, invalid({ tag: TAG_ERROR })],
      [`${endpoint}?${q('live', 'lat=51.5&lng=-0.12&tag=~Fuel')}`, 400, invalid({ tag: TAG_ERROR })],
      [`${endpoint}?${q('live', 'lat=51.5&lng=-0.12&demo=yes')}`, 400,
        invalid({ demo: 'demo must be true, false, 1 or 0' })],
      [`${endpoint}?${q('live', 'lat=51.5&lng=-0.12&category_id=5')}`, 403, NOT_PERMITTED],
      [`${endpoint}?${q('live', 'lat=51.5&lng=-0.12&category_id=9')}`, 403, NOT_PERMITTED],
      [`${endpoint}?${q('others', 'lat=51.5&lng=-0.12&category_id=1')}`, 403, NOT_PERMITTED],
      // whole numbers, so well formed (CONTRACT 5: "category_id: an integer"), but no category served
      [`${endpoint}?${q('live', 'lat=51.5&lng=-0.12&category_id=0')}`, 403, NOT_PERMITTED],
      [`${endpoint}?${q('live', 'lat=51.5&lng=-0.12&category_id=-4')}`, 403, NOT_PERMITTED],
      [`${endpoint}?${q('live', 'lat=51.5&lng=-0.12&category_id=2147483648')}`, 403, NOT_PERMITTED]
    ]
    for (const [url, status, body] of cases) {
      const res = await get(url)
      t.equal(res.statusCode, status, url)
      t.same(JSON.parse(res.body), body, url)
      t.equal(res.headers['content-type'], 'application/json; charset=utf-8')
    }
  }
})

t.test('checks run in the contract order', async (t) => {
  const cases: [string, object][] = [
    ['/v1/sites?radius=-1', MISSING_KEY], // auth before parameters
    [`/v1/sites?${q('suspended', 'radius=-1')}`, INACTIVE],
    [`/v1/sites?${q('live', 'lat=99&radius=-1')}`, missing('lng')], // missing before invalid
    [`/v1/sites?${q('live', 'lat=0&lng=abc&radius=-1')}`, BAD_LNG], // coordinates before ambiguity
    [`/v1/sites?${q('live', 'lat=0&lng=0&radius=-1')}`, AMBIGUOUS], // ambiguity before other malformed values
    [`/v1/sites?${q('live', 'lat=51.5&lng=-0.12&radius=-1&category_id=5')}`,
      invalid({ radius: 'radius must be a number greater than 0' })],
    [`/v1/sites?${q('live', 'lat=51.5&lng=-0.12&radius=-1&category_id=0')}`,
      invalid({ radius: 'radius must be a number greater than 0' })],
    [`/v1/sites?${q('live', 'lat=51.5&lng=-0.12&radius=-1&tag=x&demo=2')}`, invalid({
      radius: 'radius must be a number greater than 0', tag: TAG_ERROR, demo: 'demo must be true, false, 1 or 0'
    })]
  ]
  for (const [url, body] of cases) t.same(JSON.parse((await get(url)).body), body, url)
})

t.test('the token may come in an Authorization: Bearer header', async (t) => {
  const ok = await get('/v1/sites/nearest?lat=51.5&lng=-0.12', { authorization: `Bearer ${tokens.live}` })
  t.equal(ok.statusCode, 200)
  t.equal(JSON.parse(ok.body).id, 'prd-hotel')
  const bad = await get('/v1/sites/nearest?lat=51.5&lng=-0.12', { authorization: 'Basic abc' })
  t.same(JSON.parse(bad.body), NOT_BEARER)
  const both = await get(`/v1/sites/nearest?lat=51.5&lng=-0.12&api_key=${tokens.sandboxed}`, {
    authorization: `Bearer ${tokens.live}`
  })
  t.same(JSON.parse(both.body), KEYS_DIFFER, 'two different tokens are refused')
})

t.test('full records, field by field and byte for byte', async (t) => {
  const res = await get(`/v1/sites?${q('live', 'lat=51.5&lng=-0.12&radius=1')}`)
  t.equal(res.statusCode, 200)
  t.equal(res.body, '[{"id":"prd-hotel","category":"4","name":"Production Hotel","region":"EUR","country":"FR",' +
    '"latitude":51.5,"longitude":-0.12,"helipaddy_link":"https://pilot.test/pad/prd-hotel"}]')
})

t.test('nearest record, field by field, and null when nothing is in range', async (t) => {
  const res = await get(`/v1/sites/nearest?${q('sandboxed', `lat=${north(4)}&lng=-0.12&category_id=7`)}`)
  t.equal(res.statusCode, 200)
  const record = JSON.parse(res.body)
  t.same(Object.keys(record), ['id', 'category', 'name', 'latitude', 'longitude', 'distance_nm', 'helipaddy_link'])
  t.same(record, {
    id: 'sbx-aero', category: '7', name: 'Site sbx-aero', latitude: north(5), longitude: -0.12,
    distance_nm: Math.round(((north(5) - north(4)) * KM_PER_DEG / 1.852) * 1000) / 1000,
    helipaddy_link: 'https://pilot.test/pad/sbx-aero'
  })
  const none = await get(`/v1/sites/nearest?${q('sandboxed', 'lat=-45&lng=100')}`)
  t.equal(none.statusCode, 200)
  t.equal(none.body, 'null')
  t.equal(none.headers['content-type'], 'application/json; charset=utf-8')
})

t.test('allow-list: category 1 never, 8 and above only with other categories', async (t) => {
  const near = 'lat=51.5&lng=-0.12&radius=4'
  t.same(ids((await get(`/v1/sites?${q('sandboxed', near)}`)).body), ['sbx-hotel'], 'default allow-list 4,7')
  t.same(ids((await get(`/v1/sites?${q('others', near)}`)).body), ['sbx-hotel', 'sbx-estate', 'sbx-heliport'],
    '1 dropped, 8 and 9 allowed')
  t.same(ids((await get(`/v1/sites?${q('others', near + '&category_id=8')}`)).body), ['sbx-estate'])
  t.same(ids((await get(`/v1/sites?${q('live', 'lat=51.5&lng=-0.12&radius=10&demo=true')}`)).body),
    ['sbx-hotel', 'sbx-aero'], '9 is in the list but other categories are off')
})

t.test('datasets: environment, demo=true, and the demo tier', async (t) => {
  const near = 'lat=51.5&lng=-0.12&radius=4.5'
  t.same(ids((await get(`/v1/sites?${q('live', near)}`)).body), ['prd-hotel', 'prd-aero'],
    'production partner gets production')
  for (const flag of ['true', '1']) {
    t.same(ids((await get(`/v1/sites?${q('live', near + '&demo=' + flag)}`)).body), ['sbx-hotel'],
      `demo=${flag} gets sandbox`)
  }
  for (const flag of ['false', '0']) {
    t.same(ids((await get(`/v1/sites?${q('live', near + '&demo=' + flag)}`)).body), ['prd-hotel', 'prd-aero'],
      `demo=${flag}`)
  }
  t.same(ids((await get(`/v1/sites?${q('demo', near)}`)).body), ['sbx-hotel'],
    'demo tier in production environment gets sandbox')
  t.same(ids((await get(`/v1/sites?${q('demo', near + '&demo=false')}`)).body), ['sbx-hotel'],
    'demo tier cannot ask for production')
})

t.test('radius: default 25 km, clamped at the partner cap', async (t) => {
  const base = 'lat=51.5&lng=-0.12&category_id=4'
  t.same(ids((await get(`/v1/sites?${q('sandboxed', base)}`)).body), ['sbx-hotel', 'sbx-20km'], 'default 25 km')
  t.same(ids((await get(`/v1/sites?${q('sandboxed', base + '&radius=40')}`)).body),
    ['sbx-hotel', 'sbx-20km', 'sbx-30km'])
  t.same(ids((await get(`/v1/sites?${q('sandboxed', base + '&radius=5000')}`)).body),
    ['sbx-hotel', 'sbx-20km', 'sbx-30km', 'sbx-70km'], 'clamped at 75 km')
  t.same(ids((await get(`/v1/sites?${q('capped', 'lat=51.5&lng=-0.12&radius=75')}`)).body),
    ['sbx-hotel', 'sbx-pub', 'sbx-estate'], 'cap 5 km and at most 3 results')
  const from11 = `lat=${north(11)}&lng=-0.12&radius=75`
  t.equal(JSON.parse((await get(`/v1/sites/nearest?${q('capped', from11)}`)).body), null,
    'nearest is clamped too: the closest site is 6 km away')
  t.equal(JSON.parse((await get(`/v1/sites/nearest?${q('sandboxed', from11)}`)).body).id, 'sbx-aero',
    'uncapped, it is found')
})

t.test('a radius of half the globe or more holds every site, the antipode included', async (t) => {
  // The CLI allows caps up to 20038 km, above half the circumference on this sphere (20015.09 km).
  const { app, tokens } = await buildTestApp(t, {
    sandbox: [site('here', 4, 10, 20), site('antipode', 7, -8, -160), site('east', 4, 0, 110)],
    partners: [{ name: 'World', slug: 'world', tier: 'growth', radiusCapKm: 20038, limitOverrides: UNLIMITED }]
  })
  const get = async (url: string) => {
    const res = await app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${tokens.world}` } })
    t.equal(res.statusCode, 200, url)
    return JSON.parse(res.body)
  }
  for (const radius of ['20016', '20038']) {
    t.same((await get(`/v1/sites?lat=8&lng=20&radius=${radius}`)).map((r: { id: string }) => r.id),
      ['here', 'east', 'antipode'], `radius ${radius}`)
  }
  const nearest = await get('/v1/sites/nearest?lat=8&lng=20&radius=20038&category_id=7')
  t.same(nearest && [nearest.id, nearest.distance_nm], ['antipode', 10807.282],
    'half the circumference, in nautical miles')
})

t.test('tag filter', async (t) => {
  t.same(ids((await get(`/v1/sites?${q('sandboxed', 'lat=51.5&lng=-0.12&radius=10&tag=~fuel')}`)).body),
    ['sbx-hotel', 'sbx-aero'])
  t.same(ids((await get(`/v1/sites?${q('sandboxed', 'lat=51.5&lng=-0.12&radius=10&tag=~ppr')}`)).body), ['sbx-aero'])
  t.same(ids((await get(`/v1/sites?${q('sandboxed', 'lat=51.5&lng=-0.12&radius=10&tag=~unknown')}`)).body), [])
})

t.test('unknown parameters are ignored', async (t) => {
  const res = await get(`/v1/sites?${q('sandboxed', 'lat=51.5&lng=-0.12&radius=1&foo=bar&page=x')}`)
  t.same(ids(res.body), ['sbx-hotel'])
})

t.test('unknown paths and methods: rest_no_route, with or without a token', async (t) => {
  const body = error('rest_no_route', 404, 'No route was found matching the URL and request method.')
  for (const [method, url] of [
    ['GET', '/v1/nope'], ['GET', `/v1/nope?api_key=${tokens.live}`], ['POST', '/v1/sites'], ['GET', '/'],
    ['DELETE', '/v1/sites/nearest']
  ] as const) {
    const res = await app.inject({ method, url })
    t.equal(res.statusCode, 404, `${method} ${url}`)
    t.same(JSON.parse(res.body), body)
    t.equal(res.headers['cache-control'], 'no-store', 'no cache is to keep an error')
    t.notOk(res.body.includes(tokens.live))
  }
})

t.test('every response has X-Request-Id; a sane incoming one is kept', async (t) => {
  for (const url of ['/v1/sites', '/v1/nope', `/v1/sites?${q('live', 'lat=51.5&lng=-0.12')}`]) {
    const res = await get(url)
    t.match(res.headers['x-request-id'], /^[0-9a-f-]{36}$/, url)
  }
  t.equal((await get('/v1/sites', { 'x-request-id': 'partner-abc.123' })).headers['x-request-id'], 'partner-abc.123')
  t.match((await get('/v1/sites', { 'x-request-id': 'bad id with spaces' })).headers['x-request-id'], /^[0-9a-f-]{36}$/)
})

t.test('no CORS headers', async (t) => {
  const res = await get(`/v1/sites?${q('live', 'lat=51.5&lng=-0.12')}`, { origin: 'https://evil.example' })
  t.equal(res.statusCode, 200)
  t.notOk(Object.keys(res.headers).some((h) => h.startsWith('access-control-')))
})

t.test('the request log never shows a token', async (t) => {
  const { lines, stream } = logCapture()
  const dir = tmpDataDir(t)
  const logTokens = writeFixture(dir, {
    sandbox, production, partners: [{ name: 'L', slug: 'l' }, { name: 'S', slug: 's', status: 'suspended' }]
  })
  const config = testConfig(dir, { LOG_LEVEL: 'info' })
  const logged = await buildApp(config, { logger: { ...loggerOptions(config), stream } })
  t.teardown(() => logged.close())
  const secret = logTokens.l
  const urls = [
    `/v1/sites?lat=51.5&lng=-0.12&api_key=${secret}`,
    `/v1/sites?api%5Fkey=${secret}&lat=51.5&lng=-0.12`,
    `/v1/sites?lat=91&lng=0&api_key=${secret}`,
    `/v1/nope?api_key=${secret}`,
    `/v1/sites?lat=51.5&lng=-0.12&api_key=${logTokens.s}`,
    `/v1/sites?lat=51.5&lng=-0.12&API_KEY=${secret}&token=${secret}`
  ]
  for (const url of urls) await logged.inject({ method: 'GET', url })
  await logged.inject({
    method: 'GET', url: '/v1/sites?lat=51.5&lng=-0.12', headers: { authorization: `Bearer ${secret}` }
  })
  await nextTurn()
  const log = lines.join('')
  t.ok(lines.filter((l) => l.includes('"msg":"request"')).length >= urls.length, 'every request was logged')
  t.ok(log.includes('api_key=[REDACTED]'))
  t.notOk(log.includes(secret), 'token absent from every line')
  t.notOk(log.includes(logTokens.s))
  t.notOk(log.includes(secret.slice(4, 20)), 'not even a part of it')
})

t.test('a URL the router cannot decode: rest_bad_request, and the token is not echoed', async (t) => {
  for (const url of ['/v1/%zz', `/v1/sites/%zz?api_key=${tokens.live}`, '/v1/sites/%E0%A4%A']) {
    const res = await get(url)
    t.equal(res.statusCode, 400, url)
    t.same(JSON.parse(res.body), error('rest_bad_request', 400, 'The request is malformed.'))
    t.notOk(res.body.includes(tokens.live))
    t.match(res.headers['x-request-id'], /^[0-9a-f-]{36}$/)
    t.equal(res.headers['cache-control'], 'no-store', url)
  }
})
