// A real redis-server for the tests of the shared state (STATE_URL): started on a free loopback
// port, stopped at teardown. Tests skip, loudly, only when redis-server cannot be started here.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { createServer } from 'node:net'

export interface RedisServer {
  url: string
  port: number
  /** kills the server (SIGKILL: as a crash would) */
  kill (): Promise<void>
  /** starts it again on the same port, empty */
  start (): Promise<void>
  /** SIGSTOP / SIGCONT: a Redis that hangs (connections open, no answers), and its return */
  pause (): void
  resume (): void
}

/** A loopback port free at the time asked (closed again before it is returned). */
export const freePort = () => new Promise<number>((resolve, reject) => {
  const server = createServer()
  server.listen(0, '127.0.0.1', () => {
    const { port } = server.address() as { port: number }
    server.close(() => resolve(port))
  })
  server.on('error', reject)
})

/** Why the shared-state tests cannot run here, or undefined when they can. */
export function redisMissing (): string | undefined {
  const r = spawnSync('redis-server', ['--version'], { encoding: 'utf8' })
  if (r.status === 0) return undefined
  return 'NO REDIS: redis-server is not installed (.ci/run installs Debian\'s redis-server); ' +
    'the shared-state tests are skipped'
}

/** Skips the whole test file, loudly, when redis-server is missing; true when it did. */
export function skippedWithoutRedis (
  t: { comment (...message: unknown[]): void, plan (n: number, reason?: string): void }
): boolean {
  const missing = redisMissing()
  if (!missing) return false
  t.comment(missing)
  t.plan(0, missing)
  return true
}

export async function startRedis (t: { teardown (fn: () => unknown): void }): Promise<RedisServer> {
  const port = await freePort()
  let child: ChildProcess | undefined
  const start = () => new Promise<void>((resolve, reject) => {
    const c = spawn('redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'no',
        '--enable-debug-command', 'local']) // DEBUG SLEEP: a Redis that stalls
    child = c
    let out = ''
    const timer = setTimeout(() => reject(new Error(`redis-server did not start:\n${out}`)), 10_000)
    c.stdout!.on('data', (d) => {
      out += d
      if (out.includes('Ready to accept connections')) { clearTimeout(timer); resolve() }
    })
    c.on('exit', (code) => { clearTimeout(timer); reject(new Error(`redis-server exited with ${code}:\n${out}`)) })
  })
  const kill = () => new Promise<void>((resolve) => {
    if (!child || child.exitCode !== null || child.signalCode !== null) return resolve()
    child.once('exit', () => resolve())
    child.kill('SIGKILL')
  })
  await start()
  t.teardown(kill)
  return {
    url: `redis://127.0.0.1:${port}/0`,
    port,
    kill,
    start,
    pause: () => child?.kill('SIGSTOP'),
    resume: () => child?.kill('SIGCONT')
  }
}
