// Which requests get an access line: every request but the operators' probes, unknown paths
// included (the 404 handler runs in the logged context), and none below info level.
import t, { type Test } from 'tap'
import { buildApp, loggerOptions } from '../../src/app.ts'
import { UNLIMITED, logCapture, nextTurn, site, testConfig, tmpDataDir, writeFixture } from '../helper.ts'

/** the partners' Authorization headers, for the data directory of the app under test */
let auth: Record<string, string> = {}
let small: Record<string, string> = {}
const nearest = '/v1/sites/nearest?lat=51.5&lng=-0.12'
/** the ETag of the nearest answer, for a 304 */
let etag = ''

/** [method, url, headers, status]: every request the service answers in a different way */
const requests: [string, string, () => Record<string, string>, number][] = [
  ['GET', nearest, () => auth, 200],
  ['GET', nearest, () => ({ ...auth, 'if-none-match': etag }), 304],
  ['GET', nearest, () => ({}), 401],
  ['GET', '/v1/sites?lat=91&lng=0', () => auth, 400],
  ['GET', '/v1/usage', () => auth, 200],
  ['GET', '/v1/categories', () => small, 200], // never counted
  ['GET', nearest, () => small, 200],
  ['GET', nearest, () => small, 200],
  ['GET', nearest, () => small, 429],
  ['GET', '/v1', () => ({}), 200],
  ['HEAD', '/v1', () => ({}), 200],
  ['GET', '/v1/openapi.json', () => ({}), 200],
  ['GET', '/docs/static/swagger-ui.css', () => ({}), 200],
  ['GET', '/docs/static/nope.css', () => ({}), 404], // the static plugin's own not-found (callNotFound)
  ['GET', '/healthz', () => ({}), 200],
  ['HEAD', '/healthz', () => ({}), 200],
  ['GET', '/readyz', () => ({}), 200],
  ['GET', '/nope', () => ({}), 404],
  ['GET', '/v1/nope', () => auth, 404],
  ['GET', '/healthz/nope', () => ({}), 404],
  ['POST', '/healthz', () => ({}), 404],
  ['DELETE', '/v1/sites', () => auth, 404]
]
const isProbe = (method: string, url: string) =>
  (method === 'GET' || method === 'HEAD') && (url === '/healthz' || url === '/readyz')

async function answer (t: Test, level: string) {
  const dir = tmpDataDir(t) // each app its own control.db: the limits start afresh
  const tokens = writeFixture(dir, {
    production: [site('prd-hotel', 4, 51.5, -0.12)],
    partners: [
      {
        name: 'Live', slug: 'live', tier: 'growth', environment: 'production', categories: [4],
        limitOverrides: UNLIMITED
      },
      {
        name: 'Small', slug: 'small', tier: 'growth', environment: 'production', categories: [4],
        limitOverrides: { minute: 2, hour: 'unlimited', day: 'unlimited' }
      }
    ]
  })
  auth = { authorization: `Bearer ${tokens.live}` }
  small = { authorization: `Bearer ${tokens.small}` }
  const { lines, stream } = logCapture()
  const config = testConfig(dir, { LOG_LEVEL: level })
  const app = await buildApp(config, { logger: { ...loggerOptions(config), stream } })
  try {
    etag = (await app.inject({ url: nearest, headers: auth })).headers.etag as string
    await nextTurn()
    lines.length = 0
    const ids: string[] = []
    for (const [method, url, headers, status] of requests) {
      const res = await app.inject({ method: method as 'GET', url, headers: headers() })
      if (res.statusCode !== status) throw new Error(`${method} ${url}: ${res.statusCode}, not ${status}`)
      ids.push(res.headers['x-request-id'] as string)
    }
    await nextTurn()
    return { ids, logged: lines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'request') }
  } finally {
    await app.close()
  }
}

t.test('info: one line for each request but the probes, in order, with its id and status', async (t) => {
  const { ids, logged } = await answer(t, 'info')
  const expected = requests.map(([method, url, , status], i) => ({ method, url, status, id: ids[i] }))
    .filter(({ method, url }) => !isProbe(method, url))
  t.equal(expected.length, 19)
  t.same(logged.map((l) => `${l.reqId} ${l.method} ${l.url} ${l.status}`),
    expected.map((e) => `${e.id} ${e.method} ${e.url} ${e.status}`))
  t.same(logged.filter((l) => l.partner !== undefined).map((l) => `${l.partner} ${l.status} ${l.cache ?? '-'}`),
    ['live 200 hit', 'live 304 hit', 'live 400 -', 'live 200 -',
      'small 200 miss', 'small 200 hit', 'small 200 hit', 'small 429 -'],
    'the partner (and the cache) named on its requests to the partner routes')
})

t.test('warn: no access line at all', async (t) => {
  t.same((await answer(t, 'warn')).logged, [])
})
