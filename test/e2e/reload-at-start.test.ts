// `datasets reload` the moment a new instance answers HTTP, with the real server and the real CLI
// (its modules loaded ahead, so that it asks at once): an instance that answers has reported
// itself, in control.db and in the shared state, and is subscribed to reload requests.
import { spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import t from 'tap'
import { REPO_ROOT, tmpDataDir } from '../helper.ts'
import { freePort, skippedWithoutRedis, startRedis } from '../redis.ts'
import { baseEnv, entry, node } from '../run.ts'

/** The CLI, loaded and waiting for a line on stdin to run. */
function loadedCli (args: string[], env: Record<string, string>) {
  const child = spawn(...node(['--import', 'tsx', join(REPO_ROOT, 'test/fixtures/admin-on-input.mjs'), ...args]),
    { cwd: REPO_ROOT, env: baseEnv(env) })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d) => { stdout += d })
  child.stderr.on('data', (d) => { stderr += d })
  const ready = new Promise<void>((resolve, reject) => {
    child.stderr.on('data', () => { if (stderr.startsWith('ready\n')) resolve() })
    child.on('exit', () => reject(new Error(`the CLI stopped before it was ready: ${stderr}`)))
  })
  const done = new Promise<{ status: number | null, stdout: string, stderr: string }>((resolve) =>
    child.on('close', (status) => resolve({ status, stdout, stderr: stderr.replace(/^ready\n/, '') })))
  return { child, ready, done, run: () => child.stdin.end('run\n') }
}

const stop = (child: ChildProcess) => new Promise<void>((resolve) => {
  if (child.exitCode !== null || child.signalCode !== null) return resolve()
  child.once('exit', () => resolve())
  child.kill('SIGKILL')
})

t.test('datasets reload, with and without --all, as soon as /healthz answers', async (t) => {
  if (skippedWithoutRedis(t)) return
  const redis = await startRedis(t)
  const dir = tmpDataDir(t)
  const port = await freePort()
  const env = { DATA_DIR: dir, NODE_ENV: 'development', SANDBOX_SITE_COUNT: '2000', STATE_URL: redis.url }
  const all = loadedCli(['datasets', 'reload', '--all', '--json'], env)
  const local = loadedCli(['datasets', 'reload', '--json'], { ...env, STATE_URL: '' })
  t.teardown(() => stop(all.child))
  t.teardown(() => stop(local.child))
  await Promise.all([all.ready, local.ready])

  const server = spawn(...node(entry('src/server.ts')), {
    cwd: REPO_ROOT, env: baseEnv({ ...env, PORT: String(port), METRICS_PORT: '0' })
  })
  let output = ''
  server.stdout.on('data', (d) => { output += d })
  server.stderr.on('data', (d) => { output += d })
  t.teardown(() => stop(server))
  const deadline = Date.now() + 60_000
  for (;;) {
    const status = await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.status, () => 0)
    if (status === 200) break
    if (Date.now() > deadline || server.exitCode !== null) throw new Error(`the server did not answer:\n${output}`)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  all.run()
  local.run()
  const [shared, inControlDb] = await Promise.all([all.done, local.done])
  t.equal(shared.status, 0, `--all: ${shared.stderr}${shared.stdout}`)
  t.equal(inControlDb.status, 0, `without STATE_URL: ${inControlDb.stderr}${inControlDb.stdout}`)
  for (const report of [shared, inControlDb]) {
    const parsed = JSON.parse(report.stdout)
    t.equal(parsed.ok, true)
    t.equal(parsed.instances.length, 1, 'the one instance, reloaded')
    t.equal(parsed.instances[0].address, `127.0.0.1:${port}`)
  }
})
