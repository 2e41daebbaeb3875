// Stops and crashes of real processes. SIGTERM under load: every request the server accepted is
// answered in full and counted, and the counters saved at close equal what the clients received.
// A connection that never finishes its request cannot hold the close past SHUTDOWN_TIMEOUT_MS.
// SIGKILL: at most the last 5 s of counts are lost. An import killed half-way or cut short
// leaves the old file serving and nothing behind. Every case restarts cleanly. A dataset file
// lost after the first boot stops the next start, naming the file.
import t, { type Test } from 'tap'
import { createHash } from 'node:crypto'
import { connect } from 'node:net'
import { existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { spawn, spawnSync } from 'node:child_process'
import Database from 'better-sqlite3'
import { REPO_ROOT, tmpDataDir } from '../helper.ts'
import { adminInProcess, childEnv, entry, node, startServer, type Server } from '../run.ts'
import { setTimeout as sleep } from 'node:timers/promises'

// the partner through the CLI's main() in this process: the processes under test are the servers
async function setup (t: Test, extra: Record<string, string> = {}) {
  const dir = tmpDataDir(t)
  const env = { DATA_DIR: dir, SANDBOX_SITE_COUNT: '5000', NODE_ENV: 'production', ...extra }
  const created = JSON.parse((await adminInProcess(['partners', 'create', '--name', 'Load', '--tier', 'scale',
    '--json'], env)).stdout)
  const r = await adminInProcess(['partners', 'update', created.slug, '--limit-minute', 'unlimited',
    '--limit-hour', 'unlimited', '--limit-day', 'unlimited'], env)
  if (r.status !== 0) throw new Error(r.stderr)
  return { dir, env, token: created.token as string }
}

const used = async (server: Server, token: string) =>
  (await (await fetch(`${server.url}/v1/usage?api_key=${token}`)).json()).windows.day.used as number

t.test('SIGTERM under load: requests in flight answered in full, counters saved exactly', async (t) => {
  const { env, token } = await setup(t, { COUNTER_SAVE_MS: '5000' })
  const server = await startServer(env)
  t.teardown(() => server.stop('SIGKILL'))
  let received = 0
  const bad: string[] = []
  let signalled = false
  const client = async (n: number) => {
    for (let i = 0; ; i++) {
      let res: Response
      const lat = (45 + ((n * 97 + i) % 200) / 20).toFixed(3)
      const lng = (2 + (i % 50) / 10).toFixed(3)
      try {
        res = await fetch(`${server.url}/v1/sites?lat=${lat}&lng=${lng}&radius=75`,
          { headers: { authorization: `Bearer ${token}` } })
      } catch (err) {
        // the server stopped taking connections: the end, once the signal was sent
        if (!signalled) bad.push(`before the signal: ${(err as Error).message}`)
        return
      }
      try {
        const body = await res.json()
        if (res.status !== 200 || !Array.isArray(body)) bad.push(`${res.status} ${JSON.stringify(body).slice(0, 200)}`)
        else received++
      } catch (err) {
        bad.push(`a cut answer: ${(err as Error).message}`)
      }
    }
  }
  const clients = Array.from({ length: 8 }, (_, n) => client(n))
  await sleep(1500)
  signalled = true
  const code = await server.stop('SIGTERM')
  await Promise.all(clients)
  t.equal(code, 0, 'exit 0')
  t.same(bad, [], 'no refused, failed or cut answer')
  t.ok(received > 100, `${received} answers received under load`)
  t.match(server.output(), /"signal":"SIGTERM","msg":"closing"/)

  const again = await startServer(env)
  t.teardown(() => again.stop('SIGKILL'))
  t.equal(await used(again, token), received, 'the counters saved at close hold exactly the requests answered')
  t.equal((await fetch(`${again.url}/readyz`)).status, 200, 'restarts cleanly')
  t.equal(await again.stop('SIGTERM'), 0)
})

t.test('a request that never finishes cannot hold the close past SHUTDOWN_TIMEOUT_MS', async (t) => {
  const { env, token } = await setup(t, { SHUTDOWN_TIMEOUT_MS: '1000', COUNTER_SAVE_MS: '5000' })
  const server = await startServer(env)
  t.teardown(() => server.stop('SIGKILL'))
  for (let i = 0; i < 9; i++) {
    await (await fetch(`${server.url}/v1/sites/nearest?lat=51.5&lng=-0.1&api_key=${token}`)).arrayBuffer()
  }
  const { port } = new URL(server.url)
  const socket = connect(Number(port), '127.0.0.1')
  await new Promise((resolve) => socket.once('connect', resolve))
  // a request whose body never comes: the server is busy with it, not idle
  socket.write('GET /v1/sites?lat=1&lng=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc')
  socket.on('error', () => {})
  await sleep(200)
  const code = await server.stop('SIGTERM')
  socket.destroy()
  t.equal(code, 1, 'exit 1: the close did not finish')
  t.match(server.output(), /"msg":"graceful close timed out; exiting"/)
  const again = await startServer(env)
  t.teardown(() => again.stop('SIGKILL'))
  t.equal(await used(again, token), 9, 'the counters were saved before the forced exit')
  t.equal(await again.stop('SIGTERM'), 0)
})

t.test('SIGKILL loses at most the last 5 s of counts and restarts cleanly', async (t) => {
  const { env, token } = await setup(t, { COUNTER_SAVE_MS: '2000' })
  const server = await startServer(env)
  t.teardown(() => server.stop('SIGKILL'))
  const hit = async (n: number) => {
    for (let i = 0; i < n; i++) {
      t.equal((await fetch(`${server.url}/v1/sites/nearest?lat=51.5&lng=-0.1&api_key=${token}`)).status, 200)
    }
  }
  await hit(20)
  await sleep(5_500)
  await hit(7)
  t.equal(await server.stop('SIGKILL'), null, 'killed')
  const again = await startServer(env)
  t.teardown(() => again.stop('SIGKILL'))
  const after = await used(again, token)
  t.ok(after >= 20 && after <= 27, `${after} of 27 counted after the crash: the 20 older than 5 s are all there`)
  const ready = await (await fetch(`${again.url}/readyz`)).json()
  t.same([ready.status, ready.control_db.writable], ['ready', true], 'restarts cleanly')
  t.equal(await again.stop('SIGTERM'), 0)
})

const digest = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex')

t.test('imports cut short or killed half-way leave the old file serving, and nothing behind', async (t) => {
  const { dir, env } = await setup(t)
  const production = join(dir, 'production.db')
  const lines = ['id,category,name,region,country,latitude,longitude,tags']
  for (let i = 0; i < 300_000; i++) {
    lines.push(
      `s${i},4,Site ${i},EUR,GB,${(50 + (i % 1000) / 1000).toFixed(3)},${(-1 + (i % 997) / 1000).toFixed(3)},~fuel`
    )
  }
  const csv = join(dir, 'big.csv')
  writeFileSync(csv, lines.join('\n') + '\n')
  t.equal((await adminInProcess(['datasets', 'import', '--dataset', 'production', '--file', csv], env)).status, 0)
  const before = digest(production)

  // a file cut in the middle of a row
  const cut = join(dir, 'cut.csv')
  writeFileSync(cut, lines.slice(0, 1001).join('\n') + '\ns1000,4,Site 1000,EU')
  const r = await adminInProcess(['datasets', 'import', '--dataset', 'production', '--file', cut], env)
  t.equal(r.status, 1)
  t.match(r.stderr, /^line 1002: /m, 'names the cut line')
  const geo = join(dir, 'cut.geojson')
  writeFileSync(geo, '{"type":"FeatureCollection","features":[{"type":"Feature",' +
    '"geometry":{"type":"Point","coordinates":[1,2]},"properties":{"id":"a","categ')
  const g = await adminInProcess(['datasets', 'import', '--dataset', 'production', '--file', geo], env)
  t.equal(g.status, 1)
  t.match(g.stderr, /feature 1: .*cut short/)
  t.equal(digest(production), before, 'the old file is untouched')

  // killed while writing its new file
  const child = spawn(...node([
    ...entry('scripts/admin.ts'), 'datasets', 'import', '--dataset', 'production', '--file', csv
  ]), {
    cwd: REPO_ROOT, env: childEnv(env)
  })
  // its temporary file, and the rollback journal beside it while a transaction is open
  const leftovers = () => readdirSync(dir).filter((f) => f.startsWith('.production.db.'))
  const tmp = () => leftovers().filter((f) => f.endsWith('.tmp'))
  for (let i = 0; i < 600 && !leftovers().some((f) => f.endsWith('.tmp-journal')); i++) await sleep(10)
  t.equal(tmp().length, 1, 'the import is writing its new file')
  child.kill('SIGKILL')
  await new Promise((resolve) => child.on('exit', resolve))
  t.equal(digest(production), before, 'the old file is untouched')
  t.equal(tmp().length, 1, 'the dead import left its temporary file')
  t.same(leftovers().filter((f) => !/^\.production\.db\.\d+\.\d+\.tmp(-journal)?$/.test(f)), [],
    'and perhaps its journal, nothing else')

  const server = await startServer(env)
  t.teardown(() => server.stop('SIGKILL'))
  const ready = await (await fetch(`${server.url}/readyz`)).json()
  t.equal(ready.datasets.production.site_count, 300_000, 'the old file serves')
  t.equal(await server.stop('SIGTERM'), 0)
  t.equal((await adminInProcess(['datasets', 'import', '--dataset', 'production', '--file', csv], env)).status, 0)
  t.same(leftovers(), [], 'the next import removed what the dead one left, journal included')
})

t.test('a dataset file lost after the first boot: ' +
  'the service refuses to start and says which and what to do', async (t) => {
  const { dir, env } = await setup(t) // partners made with the CLI first: the server's first boot is still to come
  const server = await startServer(env)
  t.teardown(() => server.stop('SIGKILL'))
  t.match(server.output(), /"msg":"created missing data file"/, 'the first boot created the datasets')
  t.equal(await server.stop('SIGTERM'), 0)
  const firstBootAt = () => { // undefined without the record
    const db = new Database(join(dir, 'control.db'), { readonly: true })
    try {
      return db.prepare("SELECT value FROM data_dir WHERE key = 'first_boot_at'").pluck().get()
    } catch {
      return undefined
    } finally {
      db.close()
    }
  }
  const since = firstBootAt()

  rmSync(join(dir, 'production.db'))
  const start = () => spawnSync(...node(entry('src/server.ts')), {
    cwd: REPO_ROOT, env: childEnv({ ...env, PORT: '0', METRICS_PORT: '0' }), encoding: 'utf8', timeout: 30_000
  })
  const refused = start()
  t.same([refused.status, refused.stdout, refused.stderr], [1, '',
    `start-up failed: ${join(dir, 'production.db')} is missing, and this is not the first boot of this DATA_DIR ` +
    `(that was at ${since}), so no empty or generated dataset replaces it: import it ` +
    '(`npm run admin -- datasets import --dataset production --file FILE`) or restore it from a backup, ' +
    'then start again\n'])
  t.notOk(existsSync(join(dir, 'production.db')), 'no empty dataset made')

  const csv = join(dir, 'sites.csv')
  writeFileSync(csv, 'id,category,name,region,country,latitude,longitude,tags\np1,4,Back,EUR,GB,51.5,-0.1,\n')
  t.equal((await adminInProcess(['datasets', 'import', '--dataset', 'production', '--file', csv], env)).status, 0)
  const again = await startServer(env)
  t.teardown(() => again.stop('SIGKILL'))
  const ready = await (await fetch(`${again.url}/readyz`)).json()
  t.same([ready.status, ready.datasets.production.site_count], ['ready', 1], 'once imported, it starts and serves it')
  t.notMatch(again.output(), /created missing data file/)
  t.equal(await again.stop('SIGTERM'), 0)
})

t.test('a control.db that is not a database: the service and the CLI name it, and leave it as it was', async (t) => {
  const dir = tmpDataDir(t)
  const control = join(dir, 'control.db')
  writeFileSync(control, 'the partners were here\n'.repeat(100))
  const before = readFileSync(control)
  const refused = spawnSync(...node(entry('src/server.ts')), {
    cwd: REPO_ROOT, env: childEnv({ DATA_DIR: dir, SANDBOX_SITE_COUNT: '100', PORT: '0', METRICS_PORT: '0' }),
    encoding: 'utf8', timeout: 30_000
  })
  t.same([refused.status, refused.stdout, refused.stderr],
    [1, '', `start-up failed: ${control} cannot be used: file is not a database\n`])
  const listed = await adminInProcess(['partners', 'list'], { DATA_DIR: dir })
  t.same([listed.status, listed.stdout, listed.stderr],
    [1, '', `error: ${control} cannot be used: file is not a database\n`])
  t.same(readFileSync(control), before, 'the file is untouched')
  t.same(readdirSync(dir).sort(), ['control.db'], 'and nothing was made beside it')
})
