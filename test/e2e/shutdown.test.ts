// A bug in a real server process: an uncaught exception or an unhandled rejection is logged and
// closes the service gracefully (requests answered are counted and saved), then exit 1; when the
// close cannot finish within SHUTDOWN_TIMEOUT_MS the counters are still saved.
import { spawn } from 'node:child_process'
import { connect } from 'node:net'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t, { type Test } from 'tap'
import { REPO_ROOT, tmpDataDir } from '../helper.ts'
import { admin, childEnv, entry, node } from '../run.ts'
import { setTimeout as sleep } from 'node:timers/promises'

/** The real src/server.ts, with the test-only module that fails on a line of stdin. */
async function start (t: Test, extra: Record<string, string>) {
  const dir = tmpDataDir(t)
  const env = {
    DATA_DIR: dir, SANDBOX_SITE_COUNT: '200', NODE_ENV: 'production', LOG_LEVEL: 'info', COUNTER_SAVE_MS: '5000',
    ...extra
  }
  const created = admin(['partners', 'create', '--name', 'Bug', '--tier', 'scale', '--json'], env)
  if (created.status !== 0) throw new Error(created.stderr)
  const token = JSON.parse(created.stdout).token as string
  const fixture = join(REPO_ROOT, 'test/fixtures/fail-on-input.mjs')
  const child = spawn(...node(['--import', fixture, ...entry('src/server.ts')]), {
    cwd: REPO_ROOT, env: childEnv({ ...env, PORT: '0', METRICS_PORT: '0' })
  })
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  let out = ''
  child.stdout.on('data', (d) => { out += d })
  child.stderr.on('data', (d) => { out += d })
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  for (let i = 0; i < 300 && !/Server listening at/.test(out); i++) await sleep(100)
  const url = /"msg":"Server listening at (http:\/\/[^"]+)"/.exec(out)?.[1]
  if (!url) throw new Error(`server did not start:\n${out}`)
  const saved = () => {
    const db = new Database(join(dir, 'control.db'), { readonly: true })
    try {
      return db.prepare('SELECT coalesce(sum(requests), 0) FROM rate_buckets').pluck().get()
    } finally {
      db.close()
    }
  }
  return { child, url, token, exited, saved, output: () => out }
}

const lines = (out: string) =>
  out.split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { level: number, msg: string, err?: { message: string }, signal?: string })

/** `n` partner requests, one after another: their statuses. */
const answered = async (server: { url: string, token: string }, n: number) => {
  const statuses: number[] = []
  for (let i = 0; i < n; i++) {
    statuses.push((await fetch(`${server.url}/v1/sites/nearest?lat=51.5&lng=-0.1&api_key=${server.token}`)).status)
  }
  return statuses
}

/** A request whose body never comes: it holds a graceful close open. */
async function holdClose (server: { url: string }) {
  const socket = connect(Number(new URL(server.url).port), '127.0.0.1')
  await new Promise((resolve) => socket.once('connect', resolve))
  socket.on('error', () => {})
  socket.write('GET /v1/sites?lat=1&lng=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc')
  await sleep(200)
  return socket
}

t.test('an uncaught exception is logged, the service closes gracefully, exit 1', async (t) => {
  const server = await start(t, {})
  t.same(await answered(server, 4), Array(4).fill(200))
  server.child.stdin.write('throw\n')
  t.equal(await server.exited, 1, 'exit 1')
  const fatal = lines(server.output()).filter((l) => l.level === 60)
  t.same(fatal.map((l) => [l.msg, l.err?.message]), [['uncaught error; closing', 'boom: uncaught']],
    'the error is logged once, at fatal')
  t.equal(server.saved(), 4, 'the close saved the counters of the requests answered')
})

t.test('an unhandled rejection closes too; ' +
  'a close held past SHUTDOWN_TIMEOUT_MS still saves the counters', async (t) => {
  const server = await start(t, { SHUTDOWN_TIMEOUT_MS: '1000' })
  t.same(await answered(server, 3), Array(3).fill(200))
  const socket = await holdClose(server)
  server.child.stdin.write('reject\n')
  t.equal(await server.exited, 1, 'exit 1')
  socket.destroy()
  const logged = lines(server.output()).filter((l) => l.level >= 50).map((l) => [l.level, l.msg, l.err?.message])
  t.same(logged,
    [[60, 'uncaught error; closing', 'boom: unhandled'], [50, 'graceful close timed out; exiting', undefined]])
  t.equal(server.saved(), 3, 'the counters were saved before the forced exit')
})

t.test('a second SIGTERM while a close is held exits at once, the counters saved', async (t) => {
  const server = await start(t, { SHUTDOWN_TIMEOUT_MS: '60000' })
  t.same(await answered(server, 2), Array(2).fill(200))
  const socket = await holdClose(server)
  server.child.kill('SIGTERM')
  await sleep(300)
  server.child.kill('SIGTERM')
  t.equal(await server.exited, 1, 'exit 1')
  socket.destroy()
  const closing = lines(server.output()).filter((l) => l.msg.includes('clos') || l.level >= 50)
  t.same(closing.map((l) => [l.level, l.msg, l.signal]),
    [[30, 'closing', 'SIGTERM'], [50, 'second signal while closing; exiting', 'SIGTERM']])
  t.equal(server.saved(), 2, 'the counters were saved before the exit')
})
