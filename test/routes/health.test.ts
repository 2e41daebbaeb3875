// /healthz and /readyz: no token, no partner data, exact bodies; control.db failures reported by
// the jobs show up in /readyz (the real disk-full and read-only cases run in e2e/control-db).
import t from 'tap'
import { buildTestApp, site } from '../helper.ts'

const { app, tokens } = await buildTestApp(t, {
  sandbox: [site('s-1', 4, 51, 0), site('s-2', 7, 52, 1)],
  production: [site('p-1', 4, 10, 10)],
  partners: [{ name: 'Demo', slug: 'demo' }]
})
const builtAt = (name: 'sandbox' | 'production') => app.datasets.get(name).builtAt

t.test('healthz: 200 without a token, nothing else in it', async (t) => {
  const res = await app.inject('/healthz')
  t.equal(res.statusCode, 200)
  t.same(res.json(), { status: 'ok' })
  t.equal(res.headers['cache-control'], 'no-store')
  t.equal(res.headers['content-type'], 'application/json; charset=utf-8')
  t.ok(res.headers['x-request-id'])
  t.notOk(res.headers['ratelimit'], 'not a partner request: no rate-limit state')
})

t.test('readyz: datasets and control.db', async (t) => {
  const res = await app.inject({ url: '/readyz', query: { api_key: tokens.demo } })
  t.equal(res.statusCode, 200)
  t.same(res.json(), {
    status: 'ready',
    datasets: {
      sandbox: { site_count: 2, built_at: builtAt('sandbox') },
      production: { site_count: 1, built_at: builtAt('production') }
    },
    control_db: { readable: true, writable: true, failures: [] },
    shared_state: { backend: 'embedded' }
  })
  t.notOk(res.body.includes(tokens.demo))
})

t.test('readyz: a failing control.db job makes it 503 with the reason, and recovers', async (t) => {
  app.controlDb.failed('counters', Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' }))
  let res = await app.inject('/readyz')
  t.equal(res.statusCode, 503)
  const body = res.json()
  t.equal(body.status, 'not_ready')
  t.same(body.control_db.readable, true)
  t.same(body.control_db.writable, false)
  t.equal(body.control_db.failures.length, 1)
  t.match(body.control_db.failures[0], {
    job: 'counters', error: 'database or disk is full', since: /^\d{4}-\d\d-\d\dT/,
    consequence: /saved once control.db takes writes again/
  })
  t.equal((await app.inject('/healthz')).statusCode, 200, 'liveness is not readiness')
  app.controlDb.failed('partners', new Error('disk I/O error'))
  res = await app.inject('/readyz')
  t.same([res.json().control_db.readable, res.json().control_db.failures.map((f: { job: string }) => f.job)],
    [false, ['counters', 'partners']])
  app.controlDb.succeeded('counters')
  app.controlDb.succeeded('partners')
  res = await app.inject('/readyz')
  t.equal(res.statusCode, 200)
  t.same(res.json().control_db, { readable: true, writable: true, failures: [] })
})

t.test('probes are GET only and live outside the API prefix', async (t) => {
  t.equal((await app.inject('/v1/healthz')).json().code, 'rest_no_route')
  const post = await app.inject({ method: 'POST', url: '/healthz' })
  t.equal(post.statusCode, 404)
  t.equal(post.json().code, 'rest_no_route')
})
