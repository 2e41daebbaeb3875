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
  const before = await (await fetch(`${server.url}/v1/usage?api_key=${token}`)).json() as { windows: Record<string, { used: number, rows: number }> }
  t.same([before.windows.minute.used, before.windows.hour.used, before.windows.day.used], [30, 30, 30])

  t.equal(await server.stop('SIGTERM'), 0)
  const again = await startServer(env)
  t.teardown(() => again.stop('SIGKILL'))
  const after = await (await fetch(`${again.url}/v1/usage?api_key=${token}`)).json() as typeof before
  t.same([after.windows.minute.used, after.windows.day.used, after.windows.day.rows], [30, 30, before.windows.day.rows], 'a restart does not give a fresh day')
  const refused = await fetch(`${again.url}/v1/sites?lat=51.507&lng=-0.128&api_key=${token}`)
  t.equal(refused.status, 429, 'still limited after the restart')
  t.equal(await again.stop('SIGTERM'), 0)
})
