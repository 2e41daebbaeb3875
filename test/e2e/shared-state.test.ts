// Three real service processes sharing one real redis-server (STATE_URL): exact limits across
// them, the same /usage and telemetry on every instance; then Redis killed under load: no 5xx,
// /readyz degraded, each instance limiting alone with its share of each limit, the log saying so
// once; Redis back: ready again, and what was accepted alone is in the shared windows.
import t from 'tap'
import { readFileSync } from 'node:fs'
import { tmpDataDir } from '../helper.ts'
import { adminInProcess, startServer, type Server } from '../run.ts'
import { rowsRead, sleep, until } from '../latency.ts'
import { skippedWithoutRedis, startRedis } from '../redis.ts'

if (!skippedWithoutRedis(t)) {
  const redis = await startRedis(t)
  // a data directory each, as on three machines: the partners come from Redis alone
  const dirs = [tmpDataDir(t), tmpDataDir(t), tmpDataDir(t)]
  const dir = dirs[0]
  const env = { DATA_DIR: dir, SANDBOX_SITE_COUNT: '2000', NODE_ENV: 'production', STATE_URL: redis.url }
  // the CLI's main() in this process: the processes under test are the three instances
  const partner = async (name: string, ...update: string[]) => {
    const created = JSON.parse((await adminInProcess(['partners', 'create', '--name', name, '--json'], env)).stdout)
    const updated = update.length > 0 && await adminInProcess(['partners', 'update', created.slug, ...update], env)
    if (updated && updated.status !== 0) throw new Error(updated.stderr)
    return created.token as string
  }
  const crowd = await partner('Crowd') // demo tier: 30 a minute
  const steady = await partner('Steady',
    '--limit-minute', 'unlimited', '--limit-hour', 'unlimited', '--limit-day', 'unlimited')
  const alone = await partner('Alone', '--limit-hour', 'unlimited', '--limit-day', 'unlimited') // 30 a minute
  const servers: Server[] = []
  for (let i = 0; i < 3; i++) {
    const s = await startServer({ ...env, DATA_DIR: dirs[i] })
    t.teardown(() => s.stop('SIGKILL'))
    servers.push(s)
  }
  const readyz = async (s: Server) => (await fetch(`${s.url}/readyz`)).json()
  const sites = (s: Server, token: string) =>
    fetch(`${s.url}/v1/sites/nearest?lat=51.507&lng=-0.128`, { headers: { authorization: `Bearer ${token}` } })
  const usage = async (s: Server, token: string) =>
    (await fetch(`${s.url}/v1/usage?expand=telemetry&api_key=${token}`)).json()
  /** Whether every instance answers a search with `token` by `status`. */
  const allAnswer = async (token: string, status: number) =>
    (await Promise.all(servers.map(async (s) => (await sites(s, token)).status))).every((x) => x === status)

  t.test('three instances see each other', async (t) => {
    await until('every instance to count three',
      async () => (await Promise.all(servers.map(readyz))).every((r) => r.shared_state.instances === 3), 20_000)
    const r = await readyz(servers[0])
    t.equal(r.status, 'ready')
    t.same(r.shared_state, {
      backend: 'redis', connected: true, degraded_since: null, error: null, instances: 3, unavailable_answers: 0
    })
  })

  t.test('100 simultaneous requests over three instances at a limit of 30: exactly 30', async (t) => {
    const statuses = await Promise.all(
      Array.from({ length: 100 }, async (_, i) => (await sites(servers[i % 3], crowd)).status)
    )
    t.equal(statuses.filter((s) => s === 200).length, 30)
    t.equal(statuses.filter((s) => s === 429).length, 70)
    const reports = await Promise.all(servers.map((s) => usage(s, crowd)))
    for (const r of reports) {
      t.same([r.windows.minute.used, r.windows.minute.remaining, r.windows.day.used], [30, 0, 30],
        'the same windows on every instance')
    }
    // rows and events are recorded before each answer is sent, so all are there once all came back
    // (the figures are in the messages: a failure's diff may be cut from a CI log)
    const rows = reports.map((r) => r.windows.minute.rows)
    t.same(rows, [30, 30, 30], `rows of the 30 answers, one record each, on every instance: ${rows}`)
    const events = reports.map((r) => r.telemetry.events)
    t.same(events, [100, 100, 100], `one telemetry feed, every instance's events, on every instance: ${events}`)
  })

  t.test('Redis killed under load: no 5xx, degraded, limiting alone; back: merged', async (t) => {
    const stop = new AbortController()
    const seen = new Map<number, number>()
    const load = servers.map(async (s) => {
      while (!stop.signal.aborted) {
        try {
          const res = await sites(s, steady)
          seen.set(res.status, (seen.get(res.status) ?? 0) + 1)
          await res.arrayBuffer()
        } catch {
          seen.set(-1, (seen.get(-1) ?? 0) + 1)
        }
      }
    })
    // every instance has had an answer about the partner (none used): alone, each knows 30 are left
    // (without one it would count the windows as full: see the unit and redis-outage tests)
    for (const s of servers) t.equal((await usage(s, alone)).windows.minute.used, 0)
    await sleep(500)
    await redis.kill()
    await until('every instance to report degraded',
      async () => (await Promise.all(servers.map(readyz))).every((r) => r.status === 'degraded'), 20_000)
    const degraded = await readyz(servers[1])
    t.equal(degraded.shared_state.connected, false)
    t.match(degraded.shared_state.degraded_since, /^\d{4}-/)
    t.equal(degraded.shared_state.instances, 3)

    // alone, each instance admits its share of what is left: 30 / 3 = 10 a minute
    for (const s of servers) {
      const statuses: number[] = []
      for (let i = 0; i < 15; i++) statuses.push((await sites(s, alone)).status)
      t.same([statuses.filter((x) => x === 200).length, statuses.filter((x) => x === 429).length], [10, 5],
        'ten of fifteen admitted alone')
    }
    await sleep(500)
    stop.abort()
    await Promise.all(load)
    t.same([...seen.keys()].sort(), [200], `only 200s under load through the outage (${seen.get(200)} requests)`)
    for (const s of servers) {
      t.equal(s.output().match(/shared state \(Redis\) unavailable/g)?.length, 1, 'said once in the log')
    }

    await redis.start()
    await until('every instance to be ready again',
      async () => (await Promise.all(servers.map(readyz))).every((r) => r.status === 'ready'), 20_000)
    // the line is written before /readyz turns ready, but reaches this process through a pipe
    await until('every instance to log the recovery',
      async () => servers.every((s) => /shared state \(Redis\) available again/.test(s.output())), 20_000)
    for (const s of servers) t.match(s.output(), /shared state \(Redis\) available again/)
    const reports = await Promise.all(servers.map((s) => usage(s, alone)))
    for (const r of reports) {
      t.equal(r.windows.minute.used, 30, 'the 30 requests accepted alone are in the shared window')
    }
    t.equal((await sites(servers[0], alone)).status, 429, 'and the shared window is full')
  })

  t.test('a Redis that hangs (answers nothing): served on, degraded, ready again when it answers', async (t) => {
    redis.pause()
    const statuses: number[] = []
    for (const s of servers) for (let i = 0; i < 3; i++) statuses.push((await sites(s, steady)).status)
    t.same([...new Set(statuses)], [200],
      'every request answered while Redis hangs (each waits at most the 500 ms command timeout)')
    await until('every instance to report degraded',
      async () => (await Promise.all(servers.map(readyz))).every((r) => r.status === 'degraded'), 20_000)
    t.match((await readyz(servers[0])).shared_state.error, /timed? ?out/i)
    redis.resume()
    await until('every instance to be ready again',
      async () => (await Promise.all(servers.map(readyz))).every((r) => r.status === 'ready'), 20_000)
    t.pass('ready again')
  })

  t.test('the partners after Redis came back empty: put back from the instances\' copies', async (t) => {
    t.match(servers.map((s) => s.output()).join(''),
      /the shared state had lost the partners; put back from this instance's copy/)
    for (const s of servers) t.equal((await sites(s, steady)).status, 200, 'tokens still work everywhere')
  })

  /** The change reaches every instance within 5 s (the refresh runs each second): the ms it took. */
  const within5s = (what: string, check: () => Promise<boolean>) => until(what, check, 5_000)

  /** Partner rows each instance has read from Redis since it started. */
  const rowsReadEach = () => Promise.all(servers.map(rowsRead))

  // After Redis came back empty, each instance puts its copy back when it next looks, and the
  // others read those partners again: counted only once every put-back has been read.
  const settledRowsRead = async () => {
    let last = await rowsReadEach()
    for (let i = 0; i < 20; i++) {
      await sleep(1500)
      const now = await rowsReadEach()
      if (now.every((n, k) => n === last[k])) return now
      last = now
    }
    throw new Error('partner rows still being read after 30 s')
  }

  t.test('a suspension and a rotation made once reach every instance within 5 s', async (t) => {
    const before = await settledRowsRead()
    const suspended = await adminInProcess(['partners', 'update', 'steady', '--status', 'suspended'], env)
    t.equal(suspended.status, 0, suspended.stderr)
    const ms = await within5s('suspension everywhere', () => allAnswer(steady, 403))
    t.pass(`suspended everywhere after ${ms} ms`)
    t.same((await rowsReadEach()).map((n, i) => n - before[i]), [1, 1, 1], 'each instance read that partner alone')
    t.equal((await adminInProcess(['partners', 'update', 'steady', '--status', 'active'], env)).status, 0)
    await within5s('reactivation everywhere', () => allAnswer(steady, 200))
    const rotated = await adminInProcess(['partners', 'rotate', 'steady', '--json'], env)
    const fresh = JSON.parse(rotated.stdout).token as string
    await within5s('the old token refused and the new one served everywhere', async () =>
      (await Promise.all(servers.map(async (s) => [(await sites(s, steady)).status, (await sites(s, fresh)).status])))
        .every(([old, now]) => old === 401 && now === 200))
    t.pass('rotated everywhere')
  })

  t.test('partners export from control.db, import into Redis: the token works on every instance', async (t) => {
    const local = { ...env, STATE_URL: '' }
    const made = JSON.parse(
      (await adminInProcess(['partners', 'create', '--name', 'Moved', '--tier', 'growth', '--json'], local)).stdout
    )
    t.equal((await adminInProcess(['partners', 'show', 'moved'], env)).status, 1, 'not in Redis yet')
    const file = `${dir}/partners.json`
    const exported = await adminInProcess(['partners', 'export', '--file', file], local)
    t.equal(exported.status, 0, exported.stderr)
    t.notOk(readFileSync(file, 'utf8').includes(made.token), 'the export holds digests, not tokens')
    const imported = await adminInProcess(['partners', 'import', '--file', file, '--json'], env)
    t.equal(imported.status, 0, imported.stderr)
    t.same(JSON.parse(imported.stdout), { created: 1, replaced: 0 })
    await within5s('the imported partner served everywhere', () => allAnswer(made.token, 200))
    const again = await adminInProcess(['partners', 'import', '--file', file, '--json'], env)
    t.same(JSON.parse(again.stdout), { created: 0, replaced: 1 }, 'importing again replaces')
    const shown = JSON.parse((await adminInProcess(['partners', 'show', 'moved', '--json'], env)).stdout)
    t.same([shown.tier, shown.id], ['growth', made.id])
  })

  t.test('datasets reload --all reaches every instance; each reloads its own files', async (t) => {
    t.equal((await adminInProcess(['datasets', 'generate', '--dataset', 'sandbox', '--count', '500', '--seed', 'other'],
      { ...env, DATA_DIR: dirs[2] })).status, 0)
    const r = await adminInProcess(['datasets', 'reload', '--all', '--json'], env)
    t.equal(r.status, 0, r.stderr)
    const report = JSON.parse(r.stdout)
    t.equal(report.ok, true)
    t.equal(report.instances.length, 3)
    const counts = report.instances.map((i: { address: string, datasets: { dataset: string, site_count: number }[] }) =>
      [i.address, i.datasets.find((d) => d.dataset === 'sandbox')!.site_count])
    const expected = servers.map((s, i) => [new URL(s.url).host, i === 2 ? 500 : 2000])
    t.same(counts.sort(), expected.sort(), 'every instance answered, with what it now serves')
    t.equal((await readyz(servers[2])).datasets.sandbox.site_count, 500)
    const text = await adminInProcess(['datasets', 'reload', '--all'], env)
    t.equal(text.stdout.match(/: reloaded\n/g)?.length, 3)
    const without = await adminInProcess(['datasets', 'reload', '--all'], { ...env, STATE_URL: '' })
    t.equal(without.status, 2)
    t.match(without.stderr, /^error: --all asks the instances sharing STATE_URL/)
  })

  t.test('clean stops', async (t) => {
    for (const s of servers) t.equal(await s.stop('SIGTERM'), 0)
  })
}
