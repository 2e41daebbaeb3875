// A real server under continuous requests while the operator imports and reloads datasets,
// breaks a file, sends SIGHUP and rotates a token: no request fails, and each change shows.
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { writeSitesFile } from '../../src/sites/export.ts'
import { site, tmpDataDir } from '../helper.ts'
import { admin, adminAsync, startServer } from '../run.ts'

const dir = tmpDataDir(t)
// INDEX_WORKER_MIN_MB=0: every file goes through the worker and its index snapshot, as 1M-site files do
const env = { DATA_DIR: dir, SANDBOX_SITE_COUNT: '2000', PARTNER_REFRESH_MS: '200', INDEX_WORKER_MIN_MB: '0' }
const created = admin(
  ['partners', 'create', '--name', 'Live', '--tier', 'growth', '--environment', 'production', '--json'], env)
let token = JSON.parse(created.stdout).token as string
admin(['partners', 'update', 'live', '--limit-minute', 'unlimited', '--limit-hour', 'unlimited',
  '--limit-day', 'unlimited'], env)
const server = await startServer(env)
t.teardown(() => server.stop('SIGKILL'))

const nearLondon = (prefix: string, n: number) =>
  Array.from({ length: n }, (_, i) =>
    site(`${prefix}-${String(i).padStart(4, '0')}`, i % 2 === 0 ? 4 : 7, 51.5 + i / 2000, -0.12 + i / 3000))
const ids = async (tok = token) => {
  const res = await fetch(`${server.url}/v1/sites?lat=51.5&lng=-0.12&radius=50&api_key=${tok}`)
  return { status: res.status, ids: res.status === 200 ? (await res.json() as { id: string }[]).map((s) => s.id) : [] }
}

// Continuous load: four clients, each sending its next request as soon as the last answered.
const statuses = new Map<number, number>()
/** the refused requests: which token they carried and when they were sent */
const refused: { token: string, sentAt: number }[] = []
const load = new AbortController()
let errors = 0
const client = async () => {
  while (!load.signal.aborted) {
    try {
      const used = token
      const sentAt = Date.now()
      const res = await fetch(`${server.url}/v1/sites?lat=51.5&lng=-0.12&radius=50`,
        { headers: { authorization: `Bearer ${used}` } })
      await res.arrayBuffer()
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
      if (res.status === 401) refused.push({ token: used, sentAt })
    } catch {
      errors++
    }
  }
}
const clients = [client(), client(), client(), client()]

t.test('the production dataset starts empty', async (t) => {
  t.same(await ids(), { status: 200, ids: [] })
})

t.test('import --reload under load: new sites visible right after', async (t) => {
  const file = join(dir, 'first.csv')
  await writeSitesFile(file, 'csv', nearLondon('first', 300))
  const r = await adminAsync(['datasets', 'import', '--dataset', 'production', '--file', file, '--reload'], env)
  t.equal(r.status, 0, r.stderr)
  t.match(r.stdout, /imported 300 sites/)
  t.match(r.stdout, /: reloaded\n {2}sandbox +2000 sites {2}built_at \S+\n {2}production +300 sites/)
  const after = await ids()
  t.equal(after.ids.length, 100)
  t.equal(after.ids[0], 'first-0000')
})

t.test('a corrupt file: reload refused, old data still served', async (t) => {
  writeFileSync(join(dir, 'production.db'), 'not a database at all')
  const r = await adminAsync(['datasets', 'reload'], env)
  t.equal(r.status, 1)
  t.match(r.stderr, /reload refused: .*production\.db: (file is not a database|cannot open)/)
  t.match(r.stderr, /\nerror: the reload was refused; the instances above keep serving their old datasets\n$/)
  t.equal((await ids()).ids[0], 'first-0000')
})

t.test('a missing file: reload refused, old data still served', async (t) => {
  rmSync(join(dir, 'production.db'))
  const r = await adminAsync(['datasets', 'reload', '--json'], env)
  t.equal(r.status, 1)
  const report = JSON.parse(r.stdout)
  t.equal(report.ok, false)
  t.match(report.instances[0].error, /production\.db: cannot open/)
  t.same(report.instances[0].datasets.map((d: { site_count: number }) => d.site_count), [2000, 300],
    'what is still served')
  t.equal((await ids()).ids[0], 'first-0000')
  const nowhere = join(dir, 'nowhere.csv')
  const missingInput = await adminAsync(['datasets', 'import', '--dataset', 'production', '--file', nowhere], env)
  t.equal(missingInput.status, 1)
  t.equal(missingInput.stderr, `error: no file at ${join(dir, 'nowhere.csv')}\n`)
})

t.test('SIGHUP reloads as well', async (t) => {
  const file = join(dir, 'second.ndjson')
  await writeSitesFile(file, 'ndjson', nearLondon('second', 50))
  const r = await adminAsync(['datasets', 'import', '--dataset', 'production', '--file', file], env)
  t.equal(r.status, 0, r.stderr)
  t.equal((await ids()).ids[0], 'first-0000', 'not served before the reload')
  server.child.kill('SIGHUP')
  let first: string | undefined
  for (let i = 0; i < 50 && first !== 'second-0000'; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    first = (await ids()).ids[0]
  }
  t.equal(first, 'second-0000')
})

let rotation = { old: '', startedAt: 0 }
t.test('a rotated token stops working within 5 s; the new one works', async (t) => {
  const old = token
  rotation = { old, startedAt: Date.now() }
  const r = await adminAsync(['partners', 'rotate', 'live', '--json'], env)
  t.equal(r.status, 0)
  const fresh = JSON.parse(r.stdout).token as string
  let status = 200
  const started = Date.now()
  while (Date.now() - started < 5000) {
    status = (await ids(old)).status
    if (status === 401) break
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  t.equal(status, 401, `old token refused after ${Date.now() - started} ms`)
  token = fresh
  t.equal((await ids(fresh)).status, 200)
})

t.test('under all of it, no request failed', async (t) => {
  load.abort()
  await Promise.all(clients)
  const total = [...statuses.values()].reduce((a, b) => a + b, 0)
  t.equal(errors, 0, 'no connection error')
  t.ok(total > 100, `${total} requests were answered during the changes`)
  const unexpected = [...statuses.keys()].filter((s) => s !== 200 && s !== 401)
  t.same(unexpected, [], `statuses seen: ${JSON.stringify(Object.fromEntries(statuses))}`)
  const unexplained = refused.filter((r) => r.token !== rotation.old || r.sentAt < rotation.startedAt)
  t.same(unexplained, [],
    `only requests sent with the old token after its rotation began were refused (${refused.length} were)`)
  t.equal(await server.stop('SIGTERM'), 0)
})
