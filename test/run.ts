// Real processes for CLI and end-to-end tests: the same entry points an operator runs; and the
// CLI's main() in this process, for the many CLI tests that need no process of their own.
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { join } from 'node:path'
import { main } from '../scripts/admin.ts'
import { REPO_ROOT } from './helper.ts'
import { bare, childEnv, node } from './child.ts'

export { bare, childEnv, node }

/** childEnv with LOG_LEVEL info, then `env`. */
export const baseEnv = (env: Record<string, string>) => childEnv({ LOG_LEVEL: 'info', ...env })

/**
 * Node's arguments to run an entry point as a process: the build in dist/ when `npm test` has just made it
 * (TEST_BUILT=1), which starts without compiling, else the source through tsx (a test run on its own).
 */
export function entry (source: 'scripts/admin.ts' | 'src/server.ts'): string[] {
  return process.env.TEST_BUILT === '1'
    ? [join(REPO_ROOT, 'dist', source.replace(/\.ts$/, '.js'))]
    : ['--import', 'tsx', join(REPO_ROOT, source)]
}

export interface CliResult { status: number, stdout: string, stderr: string }

/** The CLI as a process; killed after `timeoutMs` (status -1 then). */
export function admin (args: string[], env: Record<string, string>, timeoutMs = 60_000): CliResult {
  const r = spawnSync(...node([...entry('scripts/admin.ts'), ...args]), {
    cwd: REPO_ROOT, env: baseEnv(env), encoding: 'utf8', timeout: timeoutMs
  })
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr }
}

/**
 * The CLI's main() in this process, with the environment a process of admin() would get: the
 * same parsing, output and exit code, without the second or more a process takes to start.
 */
export async function adminInProcess (args: string[], env: Record<string, string>): Promise<CliResult> {
  let stdout = ''
  let stderr = ''
  const status = await main(args, {
    env: baseEnv(env),
    stdout: { write: (text: string) => { stdout += text } },
    stderr: { write: (text: string) => { stderr += text } }
  })
  return { status, stdout, stderr }
}

/**
 * The CLI without blocking this process, so that a test can keep sending requests meanwhile;
 * killed after `timeoutMs` if given (status -1 then).
 */
export function adminAsync (args: string[], env: Record<string, string>, timeoutMs?: number): Promise<CliResult> {
  const child = spawn(...node([...entry('scripts/admin.ts'), ...args]),
    { cwd: REPO_ROOT, env: baseEnv(env) })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d) => { stdout += d })
  child.stderr.on('data', (d) => { stderr += d })
  const timer = timeoutMs === undefined ? undefined : setTimeout(() => child.kill('SIGKILL'), timeoutMs)
  return new Promise((resolve) => child.on('close', (code) => {
    clearTimeout(timer)
    resolve({ status: code ?? -1, stdout, stderr })
  }))
}

export interface Server {
  child: ChildProcessWithoutNullStreams
  url: string
  output: () => string
  stop (signal?: NodeJS.Signals): Promise<number | null>
}

/**
 * Starts the server (src/server.ts) and resolves once it listens (its log says where). `wrap` is a command
 * that runs the server as its last arguments (used to give it a file system of its own).
 */
export function startServer (
  env: Record<string, string>,
  timeoutMs = 60_000,
  options: { wrap?: string[], onSpawn?: (child: ChildProcessWithoutNullStreams) => void } = {}
): Promise<Server> {
  const [program, args] = node(entry('src/server.ts'))
  const command = [...(options.wrap ?? []), program, ...args]
  const child = spawn(command[0], command.slice(1), {
    cwd: REPO_ROOT, env: baseEnv({ PORT: '0', METRICS_PORT: '0', ...env })
  })
  options.onSpawn?.(child)
  let out = ''
  child.stdout.on('data', (d) => { out += d })
  child.stderr.on('data', (d) => { out += d })
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`server did not start:\n${out}`))
    }, timeoutMs)
    const check = () => {
      const m = /"msg":"Server listening at (http:\/\/[^"]+)"/.exec(out)
      if (!m) return
      clearTimeout(timer)
      child.stdout.off('data', check)
      resolve({
        child,
        url: m[1],
        output: () => out,
        stop (signal: NodeJS.Signals = 'SIGTERM') {
          if (child.exitCode === null) child.kill(signal)
          return exited
        }
      })
    }
    child.stdout.on('data', check)
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`server exited with ${code}:\n${out}`)) })
  })
}

/** Where a server started by startServer() serves /metrics (its log says, METRICS_PORT being 0). */
export const metricsUrlOf = (server: Server): string =>
  /"msg":"metrics listening at (http:\/\/127\.0\.0\.1:\d+\/metrics)"/.exec(server.output())![1]

/** Prometheus text → Map of `name{labels}` → value. */
export function parseMetrics (text: string): Map<string, number> {
  const values = new Map<string, number>()
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const at = line.lastIndexOf(' ')
    values.set(line.slice(0, at), Number(line.slice(at + 1)))
  }
  return values
}
