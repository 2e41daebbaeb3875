// npm run bench: one command, one run. Builds a 1,000,000-site production dataset, starts the
// real service process on it and a bare Fastify hello-world (the ceiling) in another process, and
// drives both with autocannon from a third (-c 50, 10 s, 3 interleaved rounds, 10,000 distinct
// URLs per case). Prints medians, p50/p99 and each case's ratio to the ceiling of the same run,
// boot time and RSS, and writes bench/results.json (a partial run: bench/out/results-partial.json).
//   BENCH_SECONDS, BENCH_ROUNDS, BENCH_SITES, BENCH_CONNECTIONS change the run (for a quick look);
//   BENCH_CASES=a,b runs only the cases named a or b, or whose names contain them (and the ceiling);
//   BENCH_REUSE=1 keeps bench/data from the last run; BENCH_NO_IMPORT=1 skips the import figure;
//   BENCH_SHARED=0 skips the two instances sharing Redis;
//   BENCH_WARMUP (seconds, default 5) is the unmeasured run of each case before the rounds;
//   BENCH_BASELINE=<git ref> also builds that commit and runs its service beside this one, the two
//   alternating case by case (AB, then BA): a change's effect in one command (bench/out/ab-results.json).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, totalmem } from 'node:os'
import { join } from 'node:path'
import { PartnerStore, controlPath } from '../src/partners/store.ts'
import {
  BASELINE, COMMIT, DATA, DISTINCT, cpuUs, HELLO_ARGS, ONLY, ROOT, SITES, bareEnv, buildBaseline, currentBuild,
  freePort, isBare, log, median, runLoad, setUp, startService, stop, waitForHttp, writeOut, type Build, type Case
} from './setup.ts'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50)
const WARMUP = Number(process.env.BENCH_WARMUP ?? 5)

function rssKb (pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0)
}

// 1-2. Data: 1M production sites, four partners, each case's URLs; this checkout built (bench/setup.ts).
const { cases: CASES, buildSeconds } = setUp()

// 3. Processes: the service, compiled and started as `npm start` runs it (cache of 1,000 entries, so
// 10,000 cycling URLs always miss while a hot set of 100 always hits), and the ceiling (with the
// floors in its process, bench/floor.ts, given the floor cases' partners). The first boot on a new
// dataset file verifies it and writes its index snapshot; the second boot is measured.
const servicePort = await freePort()
const helloPort = await freePort()
const serviceUrl = `http://127.0.0.1:${servicePort}`
const metricsPort = await freePort()
/** Two boots: the first verifies the file and writes its index snapshot; the second is measured. */
const bootTwice = async (build: Build, port: number, env: Record<string, string> = {}) => {
  const first = await startService(build, port, env)
  await stop(first.child)
  return { first, second: await startService(build, port, env) }
}

/** The service's records' JSON at the end of the load (FRAGMENTS_MAX_MB): MB held, and chunks forgotten. */
async function recordFragments (): Promise<{ mb: number, chunks_forgotten: number }> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1])
  return {
    mb: Math.round(value('lsp_record_fragment_memory_bytes') / 2 ** 20),
    chunks_forgotten: value('lsp_record_fragment_chunks_forgotten_total')
  }
}

// With BENCH_BASELINE: that commit, built in a worktree of its own, on a copy of the same files.
let baseline: { child: ChildProcess, url: string, commit: string, bootMs: number } | undefined
if (BASELINE !== undefined) {
  const built = buildBaseline(BASELINE)
  const port = await freePort()
  const { second } = await bootTwice(built, port)
  baseline = { child: second.child, url: `http://127.0.0.1:${port}`, commit: built.commit, bootMs: second.ms }
  log(`baseline ${BASELINE} (${baseline.commit}) ready in ${Math.round(second.ms)} ms`)
}

const booted = await bootTwice(currentBuild(), servicePort, { METRICS_PORT: String(metricsPort) })
const { first, second: { child: service, ms: bootMs } } = booted
log(`first boot (verify, index, write snapshot) in ${Math.round(first.ms)} ms`)
log(`service ready in ${Math.round(bootMs)} ms`)
await new Promise((resolve) => setTimeout(resolve, 2000))
const rssRestKb = rssKb(service.pid!)
const hello = spawn(process.execPath, HELLO_ARGS, {
  cwd: ROOT,
  env: { ...process.env, ...bareEnv(CASES), PORT: String(helloPort) },
  stdio: ['ignore', 'ignore', 'inherit']
})
await waitForHttp(`http://127.0.0.1:${helloPort}/`, hello, 30_000)

let rssPeakKb = rssRestKb
const sampler = setInterval(() => { rssPeakKb = Math.max(rssPeakKb, rssKb(service.pid!)) }, 250)

interface Run {
  rps: number, p50: number, p99: number, total: number, non2xx: number, errors: number, timeouts: number
  statusCodes: Record<string, { count: number }>
  /** at a fixed rate: the same answers timed from when the generator released their request */
  p50FromSend?: number, p99FromSend?: number
  /** at a fixed rate: answers to no request, and connections the server ended during the run */
  unsolicited?: number, closed?: number
  /** the load generator's CPU time over the run, µs */
  cpuUs: number
  /** the target process's CPU time over the run, µs (when its pid was given) */
  serverCpuUs?: number
}
/** A run's answers by status code. */
const statusCounts = (run: Run): Record<string, number> =>
  Object.fromEntries(Object.entries(run.statusCodes ?? {}).map(([k, v]) => [k, v.count]))
const perRequest = (us: number, run: Run) => Math.round((us / Math.max(1, run.total)) * 10) / 10
/** Where a case is answered: the bare process for the ceilings and floors, the service for the rest. */
interface Target { base: string, pid?: number }
const targetOf = (c: Case): Target =>
  isBare(c) ? { base: `http://127.0.0.1:${helloPort}`, pid: hello.pid } : { base: serviceUrl, pid: service.pid }
const baselineTarget = (): Target => ({ base: baseline!.url, pid: baseline!.child.pid })
async function load (
  c: Case, { base, pid }: Target = targetOf(c), connections = CONNECTIONS, jobName = 'job.json', seconds = SECONDS,
  overallRate?: number
): Promise<Run> {
  // the target's CPU (when its pid is known) from the generator's start to its end: the generator's
  // own start-up, while the target is idle, is in the window but costs the target nothing
  const before = pid === undefined ? 0 : cpuUs(pid)
  const run = await runLoad<Run>(c, { base, connections, seconds, rate: overallRate }, jobName)
  if (pid !== undefined) run.serverCpuUs = cpuUs(pid) - before
  return run
}

// 4. Warm-up (JIT, and the record fragments the service makes on first use), then rounds: every
// case once per round, the ceilings and floors first in each.
if (WARMUP > 0) {
  for (const c of CASES) await load(c, undefined, CONNECTIONS, 'job.json', WARMUP)
  log(`warmed up: ${WARMUP} s of each case, not measured`)
}
const runs = new Map<string, Run[]>(CASES.map((c) => [c.name, []]))
/** the baseline's runs, each taken next to the current build's run of the same round */
const baselineRuns = new Map<string, Run[]>(CASES.map((c) => [c.name, []]))
const logRun = (round: number, name: string, run: Run) =>
  log(`round ${round} ${name.padEnd(15)} ${Math.round(run.rps).toString().padStart(7)} req/s  ` +
    `p50 ${run.p50} ms  p99 ${run.p99} ms  CPU µs/request: server ${perRequest(run.serverCpuUs!, run)}, ` +
    `load generator ${perRequest(run.cpuUs, run)}  ${JSON.stringify(statusCounts(run))}`)
if (baseline !== undefined && WARMUP > 0) {
  for (const c of CASES) if (!isBare(c)) await load(c, baselineTarget(), CONNECTIONS, 'job.json', WARMUP)
}
for (let round = 1; round <= ROUNDS; round++) {
  for (const c of CASES) {
    if (baseline === undefined || isBare(c)) {
      const run = await load(c)
      runs.get(c.name)!.push(run)
      logRun(round, c.name, run)
      continue
    }
    // AB in odd rounds, BA in even ones: a drift of the machine falls on both alike
    const order = round % 2 === 1 ? ['current', 'baseline'] : ['baseline', 'current']
    for (const which of order) {
      const run = which === 'current' ? await load(c) : await load(c, baselineTarget())
      ;(which === 'current' ? runs : baselineRuns).get(c.name)!.push(run)
      logRun(round, `${c.name}${which === 'baseline' ? ' (B)' : ''}`, run)
    }
  }
}

// The latency a partner sees on a service that is not saturated: the two main misses at a fixed
// rate of half their measured maximum: requests leave at that rate whatever the answers do
// (load.ts). The bare route at half its own maximum is the floor of the same measure: the
// load generator and the machine's two cores, with a server that does next to nothing.
const FIXED_RATE_CASES = ['hello-world', '/sites r=25', '/sites/nearest']
const fixedRate: {
  case: string, rate: number, rps: number, p50_ms: number, p99_ms: number
  p50_from_send_ms: number, p99_from_send_ms: number
  statuses: Record<string, number>, errors: number, unsolicited: number, connections_closed: number
}[] = []
for (const c of CASES.filter((x) => FIXED_RATE_CASES.includes(x.name))) {
  const rate = Math.floor(median(runs.get(c.name)!.map((r) => r.rps)) / 2)
  const run = await load(c, undefined, CONNECTIONS, 'job.json', SECONDS, rate)
  const statuses = statusCounts(run)
  const faults = {
    errors: run.errors + run.timeouts, unsolicited: run.unsolicited ?? 0, connections_closed: run.closed ?? 0
  }
  fixedRate.push({
    case: `${c.name} @ half rate`,
    rate,
    rps: Math.round(run.rps),
    p50_ms: run.p50,
    p99_ms: run.p99,
    p50_from_send_ms: run.p50FromSend!,
    p99_from_send_ms: run.p99FromSend!,
    statuses,
    ...faults
  })
  const faulted = Object.values(faults).some((n) => n > 0) ? ` ${JSON.stringify(faults)}` : ''
  log(`${c.name} at ${rate} req/s: p50 ${run.p50} ms, p99 ${run.p99} ms; ` +
    `from send p50 ${run.p50FromSend} ms, p99 ${run.p99FromSend} ms ` +
    `(${Math.round(run.rps)} req/s answered) ${JSON.stringify(statuses)}${faulted}`)
}
clearInterval(sampler)
const fragments = await recordFragments()
service.kill('SIGTERM')
hello.kill('SIGTERM')
baseline?.child.kill('SIGTERM')

// 5. Scale-out (docs/scaling.md): two service processes sharing a redis-server (STATE_URL), each
// driven by a load generator of its own with half the connections; their req/s add up. Skipped
// when redis-server is not installed or BENCH_SHARED=0.
interface SharedRow {
  case: string, instances: number, rps: number, p99_ms: number, ratio: number, single_process_rps: number | null
  statuses: Record<string, number>, rounds: number[]
}
const sharedRows: SharedRow[] = []
const hasRedis = spawnSync('redis-server', ['--version']).status === 0
if (process.env.BENCH_SHARED !== '0' && hasRedis) {
  const redisPort = await freePort()
  const redisArgs = ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no']
  const redis = spawn('redis-server', redisArgs, { stdio: 'ignore' })
  const stateUrl = `redis://127.0.0.1:${redisPort}/0`
  await new Promise((resolve) => setTimeout(resolve, 500))
  const { Redis } = await import('ioredis')
  const { RedisPartnerStore } = await import('../src/partners/redis-store.ts')
  const client = new Redis(stateUrl)
  const control = new PartnerStore(controlPath(DATA))
  await new RedisPartnerStore(client).importRows(control.exportRows())
  control.close()
  client.disconnect()
  const instances = await Promise.all([0, 1].map(async () => {
    const port = await freePort()
    const { child } = await startService(currentBuild(), port, { STATE_URL: stateUrl })
    return { child, url: `http://127.0.0.1:${port}` }
  }))
  await new Promise((resolve) => setTimeout(resolve, 2000)) // heartbeats: each sees the other
  const sharedCases = CASES.filter((c) => ['/sites r=25', '/sites/nearest', '429 path'].includes(c.name))
  interface SharedRun { rps: number, p99: number, statusCodes: Record<string, number> }
  const sharedRuns = new Map<string, SharedRun[]>(sharedCases.map((c) => [c.name, []]))
  for (let round = 1; round <= ROUNDS; round++) {
    for (const c of sharedCases) {
      const both = await Promise.all(instances.map((inst, i) =>
        load(c, { base: inst.url }, Math.ceil(CONNECTIONS / 2), `job-shared-${i}.json`)))
      const statusCodes: Record<string, number> = {}
      for (const r of both) {
        for (const [k, v] of Object.entries(r.statusCodes ?? {})) statusCodes[k] = (statusCodes[k] ?? 0) + v.count
      }
      const run = { rps: both.reduce((n, r) => n + r.rps, 0), p99: Math.max(...both.map((r) => r.p99)), statusCodes }
      sharedRuns.get(c.name)!.push(run)
      const rps = Math.round(run.rps).toString().padStart(7)
      log(`round ${round} ${c.name.padEnd(15)} 2 instances + Redis ${rps} req/s  p99 ${run.p99} ms  ` +
        JSON.stringify(statusCodes))
    }
  }
  await Promise.all(instances.map((inst) => stop(inst.child)))
  redis.kill('SIGTERM')
  const ceilingNow = median(runs.get('hello-world')!.map((r) => r.rps))
  for (const c of sharedCases) {
    const list = sharedRuns.get(c.name)!
    const rps = median(list.map((r) => r.rps))
    const single = runs.get(c.name)
    sharedRows.push({
      case: c.name,
      instances: 2,
      rps: Math.round(rps),
      p99_ms: median(list.map((r) => r.p99)),
      ratio: Math.round((rps / ceilingNow) * 1000) / 1000,
      single_process_rps: single ? Math.round(median(single.map((r) => r.rps))) : null,
      statuses: list[list.length - 1].statusCodes,
      rounds: list.map((r) => Math.round(r.rps))
    })
  }
} else if (!hasRedis) {
  log('redis-server not installed: the scale-out figures are skipped')
}

// 6. The 1M-row CSV import, in a process of its own (time and peak RSS).
let importFigures = { seconds: 0, maxRssKb: 0, sites: 0 }
if (process.env.BENCH_NO_IMPORT !== '1') {
  const csv = join(DATA, 'sites.csv')
  const exportArgs = ['datasets', 'export', '--dataset', 'production', '--file', csv]
  spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts/admin.ts'), ...exportArgs],
    { cwd: ROOT, env: { ...process.env, DATA_DIR: DATA } })
  const importArgs = ['--import', 'tsx', join(ROOT, 'bench/import.ts'), csv, join(DATA, 'imported.db')]
  const imported = spawnSync(process.execPath, importArgs, { cwd: ROOT, encoding: 'utf8' })
  importFigures = JSON.parse(imported.stdout)
  rmSync(join(DATA, 'imported.db'), { force: true })
}

const ceiling = median(runs.get('hello-world')!.map((r) => r.rps))
const rows = CASES.map((c) => {
  const list = runs.get(c.name)!
  const rps = median(list.map((r) => r.rps))
  return {
    case: c.name,
    note: c.note,
    rps: Math.round(rps),
    p50_ms: median(list.map((r) => r.p50)),
    p99_ms: median(list.map((r) => r.p99)),
    ratio: Math.round((rps / ceiling) * 1000) / 1000,
    // CPU time per request of the process answering and of the load generator (medians of the
    // rounds): where the two cores went.
    server_cpu_us_per_request: median(list.map((r) => perRequest(r.serverCpuUs!, r))),
    load_generator_cpu_us_per_request: median(list.map((r) => perRequest(r.cpuUs, r))),
    statuses: statusCounts(list[list.length - 1]),
    errors: list.reduce((n, r) => n + r.errors + r.timeouts, 0),
    rounds: list.map((r) => Math.round(r.rps))
  }
})
const results = {
  date: new Date().toISOString(),
  command: 'npm run bench',
  machine: {
    cpus: cpus().length, cpu: cpus()[0]?.model, memory_gb: Math.round(totalmem() / 2 ** 30), node: process.version
  },
  commit: COMMIT,
  settings: {
    sites: SITES,
    connections: CONNECTIONS,
    seconds: SECONDS,
    rounds: ROUNDS,
    warmup_seconds: WARMUP,
    distinct_urls: DISTINCT,
    service_cache_entries: 1000,
    service_log_level: 'info'
  },
  dataset_build_seconds: Math.round(buildSeconds * 10) / 10,
  boot_ms: Math.round(bootMs),
  first_boot_ms: Math.round(first.ms),
  rss_rest_mb: Math.round(rssRestKb / 1024),
  rss_load_mb: Math.round(rssPeakKb / 1024),
  record_fragments: fragments,
  import_1m_csv: {
    seconds: importFigures.seconds, peak_rss_mb: Math.round(importFigures.maxRssKb / 1024), sites: importFigures.sites
  },
  cases: rows,
  fixed_rate: fixedRate,
  shared_state_2_instances: sharedRows
}
// Only a full run with the standard settings is the record; a partial look goes beside it.
const full = !ONLY && BASELINE === undefined && SECONDS === 10 && ROUNDS === 3 && SITES === 1_000_000 &&
  CONNECTIONS === 50 && process.env.BENCH_NO_IMPORT !== '1'
const resultsFile = full ? join(ROOT, 'bench/results.json') : writeOut('results-partial.json', results)
if (full) writeFileSync(resultsFile, JSON.stringify(results, null, 2) + '\n')
log(`figures written to ${resultsFile}`)

/** A table's line: each cell padded to its width (a negative width pads on the right), then the rest. */
const line = (cells: Array<[string | number, number]>, rest = '') =>
  cells.map(([v, w]) => w < 0 ? String(v).padEnd(-w) : String(v).padStart(w)).join(' ') + rest
const table = [
  line([['case', -16], ['req/s', 8], ['ratio', 6], ['p50 ms', 7], ['p99 ms', 7], ['CPU µs/req', 10], ['generator', 9]],
    '  statuses'),
  ...rows.map((r) => line([
    [r.case, -16], [r.rps, 8], [r.ratio.toFixed(3), 6], [r.p50_ms, 7], [r.p99_ms, 7], [r.server_cpu_us_per_request, 10],
    [r.load_generator_cpu_us_per_request, 9]
  ], `  ${JSON.stringify(r.statuses)}`)),
  '',
  ...(sharedRows.length > 0
    ? ['', 'two instances sharing Redis (STATE_URL), same machine:', ...sharedRows.map((r) => line([
        [r.case, -16], [r.rps, 8], [r.ratio.toFixed(3), 6], ['-', 7], [r.p99_ms, 7], ['-', 10], ['-', 9]
      ], `  ${JSON.stringify(r.statuses)}  (one process: ${r.single_process_rps} req/s)`))]
    : []),
  '',
  `boot with ${SITES.toLocaleString('en')} sites: ${results.boot_ms} ms ` +
    `(first boot on a new file, verifying and writing the index snapshot: ${results.first_boot_ms} ms)`,
  `RSS at rest ${results.rss_rest_mb} MB, under load ${results.rss_load_mb} MB; the records' JSON ${fragments.mb} MB ` +
    `at the end, ${fragments.chunks_forgotten} chunks forgotten (FRAGMENTS_MAX_MB)`,
  `import of a ${importFigures.sites.toLocaleString('en')}-row CSV: ${importFigures.seconds} s, ` +
    `peak RSS ${results.import_1m_csv.peak_rss_mb} MB`,
  `machine: ${results.machine.cpus} x ${results.machine.cpu}, ${results.machine.memory_gb} GiB, ` +
    `Node ${results.machine.node}`
]
if (fixedRate.length > 0) {
  table.splice(table.length - 4, 0,
    'at half the measured maximum rate (timed from when due; from when the generator released it):',
    ...fixedRate.map((r) => `${r.case.padEnd(28)} ${String(r.rate).padStart(6)} req/s asked, ${r.rps} answered: ` +
      `p50 ${r.p50_ms} ms, p99 ${r.p99_ms} ms; ${r.p50_from_send_ms} ms, ${r.p99_from_send_ms} ms  ` +
      JSON.stringify(r.statuses)),
    '')
}
process.stdout.write(table.join('\n') + '\n')

if (baseline !== undefined) {
  // Each round's pair of runs side by side: the ratio of the pair, then the median of the pairs.
  const ab = CASES.filter((c) => !isBare(c)).map((c) => {
    const a = baselineRuns.get(c.name)!
    const b = runs.get(c.name)!
    const cpuA = a.map((r) => perRequest(r.serverCpuUs!, r))
    const cpuB = b.map((r) => perRequest(r.serverCpuUs!, r))
    const pairs = a.map((r, i) => Math.round((b[i].rps / r.rps) * 1000) / 1000)
    const cpuPairs = cpuA.map((x, i) => Math.round((cpuB[i] / x) * 1000) / 1000)
    return {
      case: c.name,
      baseline_rps: a.map((r) => Math.round(r.rps)),
      current_rps: b.map((r) => Math.round(r.rps)),
      rps_ratio_pairs: pairs,
      rps_ratio_median: median(pairs),
      cpu_us_per_request: { baseline: cpuA, current: cpuB },
      cpu_ratio_pairs: cpuPairs,
      cpu_ratio_median: median(cpuPairs)
    }
  })
  const abFile = writeOut('ab-results.json', {
    date: results.date,
    machine: results.machine,
    current: COMMIT,
    baseline: `${BASELINE} (${baseline.commit})`,
    boot_ms: { baseline: Math.round(baseline.bootMs), current: Math.round(bootMs) },
    settings: results.settings,
    cases: ab
  })
  process.stdout.write([
    '',
    `A/B: current ${COMMIT} against ${BASELINE} (${baseline.commit}), alternating; ratios current / baseline ` +
      '(req/s higher is better, CPU lower is better)',
    line([['case', -20], ['req/s ratio', 11], ['pairs', -24], ['CPU/req ratio', 13]], '  pairs'),
    ...ab.map((r) => line([
      [r.case, -20], [r.rps_ratio_median.toFixed(3), 11], [r.rps_ratio_pairs.join(' '), -24],
      [r.cpu_ratio_median.toFixed(3), 13]
    ], `  ${r.cpu_ratio_pairs.join(' ')}`)),
    `boot: baseline ${Math.round(baseline.bootMs)} ms, current ${Math.round(bootMs)} ms`,
    `written to ${abFile}`
  ].join('\n') + '\n')
}
