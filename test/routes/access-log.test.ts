// Which requests get an access line: every request but the operators' probes, unknown paths
// included (the 404 handler runs in the logged context), and none below info level.
import t from 'tap'
import { buildApp, loggerOptions } from '../../src/app.ts'
import { UNLIMITED, logCapture, nextTurn, site, testConfig, tmpDataDir, writeFixture } from '../helper.ts'

const dir = tmpDataDir(t)
const tokens = writeFixture(dir, {
  production: [site('prd-hotel', 4, 51.5, -0.12)],
  partners: [{ name: 'Live', slug: 'live', tier: 'growth', environment: 'production', categories: [4], limitOverrides: UNLIMITED }]
})
const auth = { authorization: `Bearer ${tokens.live}` }

/** [method, url, headers, status]: every request the service answers in a different way */
const requests: [string, string, Record<string, string>, number][] = [
  ['GET', '/v1/sites/nearest?lat=51.5&lng=-0.12', auth, 200],
  ['GET', '/v1/sites/nearest?lat=51.5&lng=-0.12', {}, 401],
  ['GET', '/v1/sites?lat=91&lng=0', auth, 400],
  ['GET', '/v1/usage', auth, 200],
  ['GET', '/v1', {}, 200],
  ['GET', '/v1/openapi.json', {}, 200],
  ['GET', '/docs/static/swagger-ui.css', {}, 200],
  ['GET', '/healthz', {}, 200],
  ['GET', '/readyz', {}, 200],
  ['GET', '/v1/nope', auth, 404],
  ['GET', '/healthz/nope', {}, 404],
  ['POST', '/healthz', {}, 404],
  ['DELETE', '/v1/sites', auth, 404]
]
const probes = new Set(['GET /healthz', 'GET /readyz'])

async function answer (level: string) {
  const { lines, stream } = logCapture()
  const config = testConfig(dir, { LOG_LEVEL: level })
  const app = await buildApp(config, { logger: { ...loggerOptions(config), stream } })
  try {
    await nextTurn()
    lines.length = 0
    for (const [method, url, headers, status] of requests) {
      const res = await app.inject({ method: method as 'GET', url, headers })
      if (res.statusCode !== status) throw new Error(`${method} ${url}: ${res.statusCode}, not ${status}`)
    }
    await nextTurn()
    return lines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'request')
  } finally {
    await app.close()
  }
}

t.test('info: a line for each request but the probes, in order, with its status', async (t) => {
  const logged = await answer('info')
  t.same(logged.map((l) => `${l.method} ${l.url} ${l.status}`),
    requests.filter(([method, url]) => !probes.has(`${method} ${url}`)).map(([method, url, , status]) => `${method} ${url} ${status}`))
  t.same(logged.filter((l) => l.partner !== undefined).map((l) => `${l.partner} ${l.url}`),
    ['live /v1/sites/nearest?lat=51.5&lng=-0.12', 'live /v1/sites?lat=91&lng=0', 'live /v1/usage'],
    'the partner is named on its requests to the partner routes')
})

t.test('warn: no access line at all', async (t) => {
  t.same(await answer('warn'), [])
})
