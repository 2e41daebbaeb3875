// Three real service processes sharing one real redis-server (STATE_URL): exact limits across
// them, the same /usage and telemetry on every instance; then Redis killed under load: no 5xx,
// /readyz degraded, each instance limiting alone with its share of each limit, the log saying so
// once; Redis back: ready again, and what was accepted alone is in the shared windows.
import t from 'tap'
import { tmpDataDir } from '../helper.ts'
import { admin, startServer, type Server } from '../run.ts'
import { redisMissing, startRedis } from '../redis.ts'

const missing = redisMissing()
if (missing) {
  t.comment(missing)
  t.plan(0, missing)
} else {
  const redis = await startRedis(t)
  const dir = tmpDataDir(t)
  const env = { DATA_DIR: dir, SANDBOX_SITE_COUNT: '2000', NODE_ENV: 'production', STATE_URL: redis.url }
  const partner = (name: string, ...update: string[]) => {
    const created = JSON.parse(admin(['partners', 'create', '--name', name, '--json'], env).stdout)
    if (update.length > 0) admin(['partners', 'update', created.slug, ...update], env)
    return created.token as string
  }
  const crowd = partner('Crowd') // demo tier: 30 a minute
  const steady = partner('Steady', '--limit-minute', 'unlimited', '--limit-hour', 'unlimited', '--limit-day', 'unlimited')
  const alone = partner('Alone', '--limit-hour', 'unlimited', '--limit-day', 'unlimited') // 30 a minute
  const servers: Server[] = []
  for (let i = 0; i < 3; i++) {
    const s = await startServer(env)
    t.teardown(() => s.stop('SIGKILL'))
    servers.push(s)
  }
  const readyz = async (s: Server) => (await fetch(`${s.url}/readyz`)).json()
  const until = async (what: string, check: () => Promise<boolean>) => {
    const deadline = Date.now() + 20_000
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
  const sites = (s: Server, token: string) => fetch(`${s.url}/v1/sites/nearest?lat=51.507&lng=-0.128`, { headers: { authorization: `Bearer ${token}` } })
  const usage = async (s: Server, token: string) => (await fetch(`${s.url}/v1/usage?expand=telemetry&api_key=${token}`)).json()

  t.test('three instances see each other', async (t) => {
    await until('every instance to count three', async () => (await Promise.all(servers.map(readyz))).every((r) => r.shared_state.instances === 3))
    const r = await readyz(servers[0])
    t.equal(r.status, 'ready')
    t.same(r.shared_state, { backend: 'redis', connected: true, degraded_since: null, error: null, instances: 3 })
  })

  t.test('100 simultaneous requests over three instances at a limit of 30: exactly 30', async (t) => {
    const statuses = await Promise.all(Array.from({ length: 100 }, async (_, i) => (await sites(servers[i % 3], crowd)).status))
    t.equal(statuses.filter((s) => s === 200).length, 30)
    t.equal(statuses.filter((s) => s === 429).length, 70)
    const reports = await Promise.all(servers.map((s) => usage(s, crowd)))
    for (const r of reports) {
      t.same([r.windows.minute.used, r.windows.minute.remaining, r.windows.day.used], [30, 0, 30], 'the same windows on every instance')
      t.equal(r.windows.minute.rows, reports[0].windows.minute.rows)
      t.equal(r.telemetry.events, 100, 'one telemetry feed: every instance\'s events')
    }
    t.equal(reports[0].windows.minute.rows, 30, 'rows of the 30 answers, one record each')
  })

  t.test('Redis killed under load: no 5xx, degraded, limiting alone; back: merged', async (t) => {
    let stop = false
    const seen = new Map<number, number>()
    const load = servers.map(async (s) => {
      while (!stop) {
        try {
          const res = await sites(s, steady)
          seen.set(res.status, (seen.get(res.status) ?? 0) + 1)
          await res.arrayBuffer()
        } catch {
          seen.set(-1, (seen.get(-1) ?? 0) + 1)
        }
      }
    })
    await new Promise((resolve) => setTimeout(resolve, 500))
    await redis.kill()
    await until('every instance to report degraded', async () => (await Promise.all(servers.map(readyz))).every((r) => r.status === 'degraded'))
    const degraded = await readyz(servers[1])
    t.equal(degraded.shared_state.connected, false)
    t.match(degraded.shared_state.degraded_since, /^\d{4}-/)
    t.equal(degraded.shared_state.instances, 3)

    // alone, each instance admits its share: 30 / 3 = 10 a minute
    for (const s of servers) {
      const statuses: number[] = []
      for (let i = 0; i < 15; i++) statuses.push((await sites(s, alone)).status)
      t.same([statuses.filter((x) => x === 200).length, statuses.filter((x) => x === 429).length], [10, 5], 'ten of fifteen admitted alone')
    }
    await new Promise((resolve) => setTimeout(resolve, 500))
    stop = true
    await Promise.all(load)
    t.same([...seen.keys()].sort(), [200], `only 200s under load through the outage (${seen.get(200)} requests)`)
    for (const s of servers) {
      t.equal(s.output().match(/shared state \(Redis\) unavailable/g)?.length, 1, 'said once in the log')
    }

    await redis.start()
    await until('every instance to be ready again', async () => (await Promise.all(servers.map(readyz))).every((r) => r.status === 'ready'))
    for (const s of servers) t.match(s.output(), /shared state \(Redis\) available again/)
    const reports = await Promise.all(servers.map((s) => usage(s, alone)))
    for (const r of reports) t.equal(r.windows.minute.used, 30, 'the 30 requests accepted alone are in the shared window')
    t.equal((await sites(servers[0], alone)).status, 429, 'and the shared window is full')
  })

  t.test('clean stops', async (t) => {
    for (const s of servers) t.equal(await s.stop('SIGTERM'), 0)
  })
}
