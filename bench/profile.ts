// npm run bench:profile: where each request's CPU time goes, kernel included, by owner (the search,
// the collector, Node's HTTP server, the kernel's socket send, ...: bench/perf-owners.ts), in µs
// a request, for the bare route and the service side by side, and how many threads the machine
// wakes a request. `perf record -g` samples the answering process at 2,000 Hz under the bench's
// load (bench/load.ts, 50 connections); processes start with --perf-basic-prof so that JIT
// code has names. CPU time, not wall clock: V8's own profiler charges a wait for a core to the call
// that was running. Needs `perf` (Debian: linux-perf) and
// leave to use it (root, or kernel.perf_event_paranoid ≤ 1 and tracefs for the wake-ups).
//   BENCH_CASES, BENCH_SITES, BENCH_REUSE as for npm run bench (default: both bare routes, cached
//   nearest, cached /sites, the 429 path, nearest, /sites r=25); BENCH_SECONDS (8) recorded after
//   BENCH_WARMUP (5) seconds of the case's load. Writes bench/out/profile.json.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { rmSync } from 'node:fs'
import { cpus } from 'node:os'
import { join } from 'node:path'
import {
  COMMIT, DATA, HELLO_ARGS, ONLY, cpuUs, ROOT, bareEnv, currentBuild, freePort, isBare, log, runLoad, selectCases,
  setUp, startService, stop, waitForHttp, writeOut, type Case
} from './setup.ts'
import { samplesByOwner } from './perf-owners.ts'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 8)
const WARMUP = Number(process.env.BENCH_WARMUP ?? 5)
const HZ = 2000
const DEFAULT_CASES = [
  'hello-world', 'hello-world 19kB', 'cached nearest', 'cached /sites', '429 path', '/sites/nearest', '/sites r=25'
]

if (spawnSync('perf', ['--version']).status !== 0) {
  log('perf is not installed (Debian: apt-get install linux-perf)')
  process.exit(1)
}

const { cases: all } = setUp()
const only = ONLY ?? DEFAULT_CASES
// the bare cases only when named (selectCases keeps them always)
const cases = selectCases(all, only).filter((c) => !isBare(c) || only.includes(c.name))

// the service as npm start runs it, and the bare route's process, both naming their JIT code for
// perf (/tmp/perf-<pid>.map; V8's own log, which the flag also opens, to /dev/null), and
// interpreted functions as frames of their own rather than as the interpreter's
const PERF_FLAGS = [
  '--perf-basic-prof', '--interpreted-frames-native-stack', '--no-logfile-per-isolate', '--logfile=/dev/null'
]
const build = currentBuild()
build.args = [...PERF_FLAGS, ...build.args]
const servicePort = await freePort()
const service = (await startService(build, servicePort)).child
const helloPort = await freePort()
const hello = spawn(process.execPath, [...PERF_FLAGS, ...HELLO_ARGS], {
  cwd: ROOT, env: { ...process.env, ...bareEnv(all), PORT: String(helloPort) }, stdio: ['ignore', 'ignore', 'inherit']
})
await waitForHttp(`http://127.0.0.1:${helloPort}/`, hello, 30_000)

/** The case's load for `seconds` (bench/load.ts); resolves with its requests a second. */
const load = async (c: Case, port: number, seconds: number) => {
  const job = { base: `http://127.0.0.1:${port}`, connections: 50, seconds }
  return (await runLoad<{ rps: number }>(c, job, 'profile-job.json')).rps
}

/**
 * Threads woken on the whole machine over `seconds` (the sched_wakeup tracepoint, perf's own
 * included; undefined where perf may not read it). On loopback a response that finds its client
 * asleep wakes it from within the server's send, at the server's cost.
 */
function wakeupsOver (seconds: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const args = ['stat', '-x,', '-a', '-e', 'sched:sched_wakeup', '--', 'sleep', String(seconds)]
    const child = spawn('perf', args, { stdio: ['ignore', 'ignore', 'pipe'] })
    let err = ''
    child.stderr.on('data', (d) => { err += d })
    child.on('close', () => {
      const count = Number(/^(\d+),,sched:sched_wakeup/m.exec(err)?.[1])
      resolve(Number.isFinite(count) ? count : undefined)
    })
  })
}

interface Profile {
  case: string, rps: number, cpuUsPerRequest: number, wakeupsPerRequest?: number, owners: Record<string, number>
}
const profiles: Profile[] = []
for (const c of cases) {
  const target: ChildProcess = isBare(c) ? hello : service
  const port = isBare(c) ? helloPort : servicePort
  await load(c, port, WARMUP)
  const running = load(c, port, SECONDS + 2)
  await new Promise((resolve) => setTimeout(resolve, 1000))
  const data = join(DATA, 'perf.data')
  const wakeups = wakeupsOver(SECONDS)
  const before = cpuUs(target.pid!)
  const started = performance.now()
  const record = ['record', '-q', '--no-buildid', '-F', String(HZ), '-g', '-o', data, '-p', String(target.pid)]
  spawnSync('perf', [...record, '--', 'sleep', String(SECONDS)], { stdio: 'inherit' })
  const cpu = cpuUs(target.pid!) - before
  const elapsed = (performance.now() - started) / 1000
  const rps = await running
  const woken = await wakeups
  const script = spawnSync('perf', ['script', '-i', data, '-F', 'comm,tid,ip,sym,dso'], {
    encoding: 'utf8', maxBuffer: 1 << 30
  }).stdout
  const counts = samplesByOwner(script)
  const samples = [...counts.values()].reduce((a, b) => a + b, 0)
  // the owners' shares of the samples, applied to the CPU time /proc counted over the same seconds
  const perRequest = cpu / (rps * elapsed)
  const owners = Object.fromEntries([...counts].sort((a, b) => b[1] - a[1])
    .map(([owner, n]) => [owner, Math.round(perRequest * n / samples * 100) / 100]))
  const wakeupsPerRequest = woken === undefined ? undefined : Math.round(woken / (rps * SECONDS) * 100) / 100
  const cpuUsPerRequest = Math.round(perRequest * 10) / 10
  profiles.push({ case: c.name, rps: Math.round(rps), cpuUsPerRequest, wakeupsPerRequest, owners })
  log(`${c.name}: ${Math.round(rps)} req/s, ${perRequest.toFixed(1)} µs of CPU a request, ${samples} samples, ` +
    `${wakeupsPerRequest ?? '?'} wake-ups a request`)
}
await stop(service)
await stop(hello)
for (const child of [service, hello]) rmSync(`/tmp/perf-${child.pid}.map`, { force: true })

// a table: owners down, cases across, µs a request
const largest = (owner: string) => Math.max(...profiles.map((p) => p.owners[owner] ?? 0))
const names = [...new Set(profiles.flatMap((p) => Object.keys(p.owners)))].sort((a, b) => largest(b) - largest(a))
const width = Math.max(...names.map((n) => n.length))
const column = Math.max(10, ...profiles.map((p) => p.case.length)) + 2
const cell = (v: number | undefined) => (v === undefined ? '-' : v.toFixed(2)).padStart(column)
const row = (label: string, cells: string[]) => process.stdout.write(`${label.padEnd(width)}${cells.join('')}\n`)
row('µs of CPU a request', profiles.map((p) => p.case.padStart(column)))
row('all (from /proc)', profiles.map((p) => cell(p.cpuUsPerRequest)))
row('threads woken a request (whole machine)', profiles.map((p) => cell(p.wakeupsPerRequest)))
for (const n of names) row(n, profiles.map((p) => cell(p.owners[n])))
const machine = `${cpus().length} x ${cpus()[0]?.model.trim()}, Node ${process.version}`
process.stdout.write(`${machine}, ${COMMIT}\n`)
const file = writeOut('profile.json', {
  date: new Date().toISOString(),
  command: 'npm run bench:profile',
  machine,
  commit: COMMIT,
  seconds: SECONDS,
  hz: HZ,
  profiles
})
log(`written to ${file}`)
