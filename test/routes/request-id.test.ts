// A caller's X-Request-Id is logged and echoed: one that holds a token (ours by its prefix, or a
// partner's of any shape) is replaced by a fresh id, so that the token reaches no log line.
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t from 'tap'
import { buildApp, loggerOptions } from '../../src/app.ts'
import { tokenDigest } from '../../src/partners/tokens.ts'
import { UNLIMITED, logCapture, nextTurn, site, testConfig, tmpDataDir, writeFixture } from '../helper.ts'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const LEGACY_TOKEN = 'legacy-Token-7Qm2xR9vK4pL8sW3' // imported from an older system: not our shape

const { lines, stream, clear } = logCapture()
const dir = tmpDataDir(t)
const tokens = writeFixture(dir, {
  production: [site('prd-hotel', 4, 51.5, -0.12)],
  partners: [
    {
      name: 'Live', slug: 'live', tier: 'growth', environment: 'production', categories: [4], limitOverrides: UNLIMITED
    },
    {
      name: 'Legacy', slug: 'legacy', tier: 'growth', environment: 'production', categories: [4],
      limitOverrides: UNLIMITED
    }
  ]
})
const db = new Database(join(dir, 'control.db'))
db.prepare('UPDATE partners SET token_sha256 = ? WHERE slug = ?').run(tokenDigest(LEGACY_TOKEN), 'legacy')
db.close()
const config = testConfig(dir, { LOG_LEVEL: 'info' })
const app = await buildApp(config, { logger: { ...loggerOptions(config), stream } })
t.teardown(() => app.close())

const search = '/v1/sites/nearest?lat=51.5&lng=-0.12'

t.test('the legacy token works as a token (the fixture is what the test needs)', async (t) => {
  const res = await app.inject({ url: search, headers: { authorization: `Bearer ${LEGACY_TOKEN}` } })
  t.equal(res.statusCode, 200)
  t.equal(JSON.parse(res.body).id, 'prd-hotel')
})

t.test('a request id that holds a token is neither echoed nor logged', async (t) => {
  const cases: [string, string][] = [
    ['a partner token', tokens.live],
    ['a token of our shape that no partner has', `lsp_${'A'.repeat(43)}`],
    ['our prefix inside a longer id', `trace.lsp_${'x'.repeat(20)}`],
    ['a partner token of another shape', LEGACY_TOKEN]
  ]
  for (const [what, id] of cases) {
    await nextTurn() // the access lines of the requests before
    clear()
    for (const url of [search, `${search}&api_key=${tokens.live}`, '/v1/nope', '/healthz']) {
      const res = await app.inject({ url, headers: { 'x-request-id': id } })
      t.match(res.headers['x-request-id'], UUID, `${what}, ${url}: a fresh id`)
    }
    await nextTurn()
    t.equal(lines.filter((l) => l.includes('"msg":"request"')).length, 3,
      `${what}: three access lines (probes are not logged)`)
    t.notOk(lines.some((l) => l.includes(id)), `${what}: in no log line`)
  }
})

t.test('an ordinary request id is still kept, echoed and logged', async (t) => {
  await nextTurn()
  clear()
  const res = await app.inject({
    url: `${search}&api_key=${tokens.live}`, headers: { 'x-request-id': 'partner-abc.123' }
  })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['x-request-id'], 'partner-abc.123')
  await nextTurn()
  t.equal(lines.filter((l) => l.includes('"reqId":"partner-abc.123"')).length, 1)
  t.equal(
    (await app.inject({ url: search, headers: { 'x-request-id': 'LSP_is-not-a-token' } })).headers['x-request-id'],
    'LSP_is-not-a-token'
  )
})
