// A production install runs, with no compiler or test tool, by the Dockerfile's steps outside a
// container: a copy of the sources is packed as its build stage packs it (npm pack, whose prepare
// compiles), unpacked and installed as its runtime stage installs it (npm ci --omit=dev), then
// started by its CMD and answering its HEALTHCHECK, with a partner made by the CLI; npm start too.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, symlinkSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { REPO_ROOT, tmpDataDir } from '../helper.ts'
import { freePort } from '../redis.ts'
import { bare, baseEnv } from '../run.ts'

/** The last stage's instructions, each on one line (continuations joined), comments left out. */
function lastStage (dockerfile: string): { keyword: string, rest: string }[] {
  const lines = dockerfile.replace(/\\\n/g, ' ').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'))
  const instructions = lines.map((line) => {
    const [keyword, ...rest] = line.split(/\s+/)
    return { keyword: keyword.toUpperCase(), rest: rest.join(' ') }
  })
  return instructions.slice(instructions.map((i) => i.keyword).lastIndexOf('FROM'))
}

const stage = lastStage(readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8'))
const instruction = (keyword: string) => stage.find((i) => i.keyword === keyword)?.rest ?? ''
// exec form (a JSON array): node is the container's first process, and gets its signals
const cmd = JSON.parse(instruction('CMD')) as string[]
const healthcheck = JSON.parse(instruction('HEALTHCHECK').replace(/^(--\S+\s+)*CMD\s+/, '')) as string[]
const dataDirInImage = /\bDATA_DIR=(\S+)/.exec(instruction('ENV'))?.[1]

t.test('the Dockerfile\'s runtime stage', async (t) => {
  t.equal(cmd[0], 'node', 'CMD runs node itself, not npm or a shell')
  t.equal(healthcheck[0], 'node', 'HEALTHCHECK needs no curl')
  t.ok(instruction('USER') !== '' && !['root', '0'].includes(instruction('USER')), 'a user other than root')
  t.same(JSON.parse(instruction('VOLUME')), [dataDirInImage], 'DATA_DIR is a volume')
  t.match(stage.filter((i) => i.keyword === 'RUN').map((i) => i.rest).join('\n'), /npm ci --omit=dev/)
})

t.setTimeout(600_000)
const dir = tmpDataDir(t, 'lsp-production-')
const build = join(dir, 'build')
const app = join(dir, 'app')
const port = await freePort()
const env = baseEnv({
  NODE_ENV: 'production', DATA_DIR: join(dir, 'data'), PORT: String(port), METRICS_PORT: '0',
  SANDBOX_SITE_COUNT: '200', PARTNER_REFRESH_MS: '100'
})
// Every process as on a host, without tap's NODE_OPTIONS (test/child.ts)
const run = (command: string, args: string[], cwd: string) =>
  spawnSync(...bare(command, args), { cwd, env, encoding: 'utf8', timeout: 600_000 })

t.test('the build stage: the sources packed, compiled by prepare', async (t) => {
  // the build context: what git tracks or would (.gitignore leaves out node_modules, dist, data...)
  const files = run('git', ['ls-files', '--cached', '--others', '--exclude-standard', '-z'], REPO_ROOT)
  t.equal(files.status, 0, files.stderr)
  for (const file of files.stdout.split('\0').filter((f) => f && existsSync(join(REPO_ROOT, f)))) {
    mkdirSync(dirname(join(build, file)), { recursive: true })
    cpSync(join(REPO_ROOT, file), join(build, file))
  }
  t.notOk(existsSync(join(build, 'dist')), 'nothing built yet')
  symlinkSync(join(REPO_ROOT, 'node_modules'), join(build, 'node_modules')) // the stage's npm ci
  const packed = run('npm', ['pack', '--pack-destination', dir], build)
  t.equal(packed.status, 0, packed.stderr.split('\n').filter((l) => !l.startsWith('npm notice')).join('\n'))
  const tarball = join(dir, readdirSync(dir).find((name) => name.endsWith('.tgz'))!)
  mkdirSync(app)
  const unpacked = run('tar', ['-xzf', tarball, '-C', app, '--strip-components=1'], dir)
  t.equal(unpacked.status, 0, unpacked.stderr)
  cpSync(join(build, 'package-lock.json'), join(app, 'package-lock.json'))
  t.ok(existsSync(join(app, 'dist/src/server.js')), 'the compiled service')
  t.ok(existsSync(join(app, 'dist/scripts/admin.js')), 'the compiled CLI')
  t.notOk(existsSync(join(app, 'src')), 'no sources')
  t.notOk(existsSync(join(app, 'tsconfig.json')), 'nothing to compile them with')
})

t.test('the runtime stage: npm ci --omit=dev installs no compiler or test tool', async (t) => {
  // Without scripts, then what they would do: on a host, better-sqlite3's install script fetches its
  // prebuilt native module, which needs the internet this machine lacks (it would compile it instead, for
  // minutes); the module built for this checkout stands in for it. The package's own prepare runs as npm
  // would run it, and must keep dist/ without a compiler.
  const installed = run('npm', ['ci', '--omit=dev', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund'],
    app)
  t.equal(installed.status, 0, installed.stdout + installed.stderr)
  const native = 'node_modules/better-sqlite3/build/Release/better_sqlite3.node'
  mkdirSync(dirname(join(app, native)), { recursive: true })
  cpSync(join(REPO_ROOT, native), join(app, native))
  const prepared = run('npm', ['run', '-s', 'prepare'], app)
  t.equal(prepared.status, 0, prepared.stdout + prepared.stderr)
  t.ok(existsSync(join(app, 'dist/src/server.js')), 'prepare kept dist/')
  for (const name of ['typescript', 'tsx', 'tap', 'esbuild', 'eslint', 'dockerfile-utils']) {
    t.notOk(existsSync(join(app, 'node_modules', name)), `no ${name}`)
  }
  const lock = JSON.parse(readFileSync(join(app, 'node_modules/.package-lock.json'), 'utf8')) as
    { packages: Record<string, { dev?: boolean }> }
  t.same(Object.keys(lock.packages).filter((path) => lock.packages[path].dev), [], 'no dev dependency at all')
  t.ok(readdirSync(join(app, 'node_modules')).includes('better-sqlite3'), 'the dependencies')
})

/** Resolves with the output once the service says it listens; rejects if it exits first. */
function listening (child: ChildProcess, output: () => string): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not listening:\n${output()}`)), 60_000)
    const check = () => {
      if (!output().includes('"msg":"Server listening at')) return
      clearTimeout(timer)
      resolve()
    }
    child.stdout!.on('data', check)
    child.once('exit', (code) => { clearTimeout(timer); reject(new Error(`exited with ${code}:\n${output()}`)) })
  })
}

function started (command: string, args: string[], options: { detached?: boolean } = {}) {
  const child = spawn(...bare(command, args), { cwd: app, env, detached: options.detached })
  let out = ''
  child.stdout.on('data', (d) => { out += d })
  child.stderr.on('data', (d) => { out += d })
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  return { child, output: () => out, exited }
}

const waitFor = async (what: () => boolean | Promise<boolean>) => {
  for (let i = 0; i < 100; i++) {
    if (await what()) return true
    await sleep(100)
  }
  return false
}

t.test('the Dockerfile\'s CMD: healthy, serving a partner made by the CLI, closing on SIGTERM', async (t) => {
  const service = started(process.execPath, cmd.slice(1))
  t.teardown(() => { service.child.kill('SIGKILL') })
  await listening(service.child, service.output)

  const health = run(process.execPath, healthcheck.slice(1), app)
  t.equal(health.status, 0, `HEALTHCHECK: ${health.stderr}`)
  t.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200)

  const created = run('npm', ['run', '-s', 'admin', '--', 'partners', 'create', '--name', 'Acme', '--tier', 'growth',
    '--json'], app)
  t.equal(created.status, 0, created.stderr)
  const { token } = JSON.parse(created.stdout) as { token: string }
  const listed = run(process.execPath, [join(app, 'scripts/lsp-admin.js'), 'partners', 'list'], app)
  t.equal(listed.status, 0, listed.stderr)
  t.match(listed.stdout, /^acme +active +growth /m, 'the package\'s bin')

  let status = 0
  let body: unknown
  await waitFor(async () => {
    const res = await fetch(`http://127.0.0.1:${port}/v1/sites?lat=51.5&lng=-0.12`,
      { headers: { authorization: `Bearer ${token}` } })
    status = res.status
    body = await res.json()
    return status === 200
  })
  t.equal(status, 200, JSON.stringify(body))
  t.ok(Array.isArray(body), 'an array of sites')

  service.child.kill('SIGHUP')
  t.ok(await waitFor(() => service.output().includes('"msg":"datasets reloaded"')), 'SIGHUP reloads the datasets')
  service.child.kill('SIGTERM')
  t.equal(await service.exited, 0, 'exit 0')
  t.match(service.output(), /"signal":"SIGTERM","msg":"closing"/)
})

t.test('npm start: no compiling, and the whole process group stops on SIGTERM', async (t) => {
  const service = started('npm', ['start'], { detached: true })
  t.teardown(() => { try { process.kill(-service.child.pid!, 'SIGKILL') } catch {} })
  await listening(service.child, service.output)
  t.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200)
  const pid = Number(/"pid":(\d+)/.exec(service.output())![1])
  // as a terminal's Ctrl-C or a service manager's stop: every process of the group is signalled
  process.kill(-service.child.pid!, 'SIGTERM')
  await service.exited
  t.ok(await waitFor(() => !alive(pid)), 'the service has exited')
  t.match(service.output(), /"signal":"SIGTERM","msg":"closing"/)
})

function alive (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}
