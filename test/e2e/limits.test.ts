// Rate limits on a real server process: 100 simultaneous requests over loopback at a limit of
// 30, and counters that survive a restart.
import t from 'tap'
import { tmpDataDir } from '../helper.ts'
import { admin, startServer } from '../run.ts'

t.test('exact under concurrency, and counters survive a restart', async (t) => {
  const dir = tmpDataDir(t)
  const env = { DATA_DIR: dir, SANDBOX_SITE_COUNT: '2000', NODE_ENV: 'production', COUNTER_SAVE_MS: '500' }
  const token = JSON.parse(admin(['partners', 'create', '--name', 'Crowd', '--json'], env).stdout).token as string
  const server = await startServer(env)
  t.teardown(() => server.stop('SIGKILL'))
  t.notOk(/lsp_/.test(server.output()), 'no demo partner and no token printed in production')

  const url = `${server.url}/v1/sites?lat=51.507&lng=-0.128&api_key=${token}`
  const statuses = await Promise.all(Array.from({ length: 100 }, async () => (await fetch(url)).status))
  t.same(statuses.filter((s) => s === 200).length, 30)
  t.same(statuses.filter((s) => s === 429).length, 70)
  const before = await (await fetch(`${server.url}/v1/usage?api_key=${token}`)).json() as
    { windows: Record<string, { used: number, rows: number }> }
  t.same([before.windows.minute.used, before.windows.hour.used, before.windows.day.used], [30, 30, 30])

  t.equal(await server.stop('SIGTERM'), 0)
  const again = await startServer(env)
  t.teardown(() => again.stop('SIGKILL'))
  const after = await (await fetch(`${again.url}/v1/usage?api_key=${token}`)).json() as typeof before
  t.same([after.windows.minute.used, after.windows.day.used, after.windows.day.rows], [30, 30, before.windows.day.rows],
    'a restart does not give a fresh day')
  const refused = await fetch(`${again.url}/v1/sites?lat=51.507&lng=-0.128&api_key=${token}`)
  t.equal(refused.status, 429, 'still limited after the restart')
  t.equal(await again.stop('SIGTERM'), 0)
})

t.test('a tighter limit set by the operator does not make the service forget what the day already holds', async (t) => {
  const dir = tmpDataDir(t)
  const env = { DATA_DIR: dir, SANDBOX_SITE_COUNT: '200', NODE_ENV: 'production', PARTNER_REFRESH_MS: '200' }
  const token = JSON.parse(admin(['partners', 'create', '--name', 'Heavy', '--json'], env).stdout).token as string
  const dayOnly = ['--limit-minute', 'unlimited', '--limit-hour', 'unlimited', '--limit-day', '100']
  t.equal(admin(['partners', 'update', 'heavy', ...dayOnly], env).status, 0)
  const server = await startServer(env)
  t.teardown(() => server.stop('SIGKILL'))
  const url = `${server.url}/v1/sites?lat=51.507&lng=-0.128&api_key=${token}`
  for (let i = 0; i < 100; i++) t.equal((await fetch(url)).status, 200)
  const full = await fetch(url)
  t.same([full.status, (await full.json()).data.window], [429, 'day'], 'the day is used up')

  // an hour limit of 2 allows at most 48 a day: that bound must not cut the day's 100 already accepted
  t.equal(admin(['partners', 'update', 'heavy', '--limit-hour', '2'], env).status, 0)
  const started = Date.now()
  let policy: string | null = null
  while (policy === null || !policy.includes('"hour";q=2')) {
    if (Date.now() - started > 5000) break
    await new Promise((resolve) => setTimeout(resolve, 100))
    policy = (await fetch(url)).headers.get('ratelimit-policy')
  }
  t.match(policy, /"hour";q=2;w=3600/, 'the new limit reached the service')
  const refused = await fetch(url)
  const body = await refused.json() as { data: { window: string, retry_after: number } }
  t.equal(refused.status, 429)
  t.equal(body.data.window, 'day', 'refused by the day, which frees up only tomorrow, not by the hour')
  t.ok(body.data.retry_after > 3600,
    `Retry-After ${body.data.retry_after} s: not an hour, after which the day would over-admit`)
  const usage = await (await fetch(`${server.url}/v1/usage?api_key=${token}`)).json() as
    { windows: Record<string, { used: number, remaining: number }> }
  t.same([usage.windows.day.used, usage.windows.day.remaining], [100, 0], '/usage still counts the day\'s 100')
  t.equal(await server.stop('SIGTERM'), 0)
})
