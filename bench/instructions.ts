// npm run bench:instructions: the instructions each request costs, counted by valgrind's callgrind.
// Time on a shared machine moves too much for a change of a few µs to show in req/s; instructions
// executed (user space: the kernel's TCP send is not counted) depend on the load only through work
// done per second, and hardly on which x86-64 CPU runs them.
//
// Each process (this build's service, a baseline's with BENCH_BASELINE, and the bare Fastify route)
// runs under `valgrind --tool=callgrind` with counting off. A case's requests go over a few
// keep-alive connections, opened for the case: first BENCH_WARMUP_REQUESTS unmeasured (JIT, record
// fragments made on first use), then one window left out and BENCH_WINDOWS counted, each the next
// BENCH_REQUESTS of the case's URLs (callgrind_control: zero, on, off, dump): a miss case's windows
// never repeat a URL the cache (1,000 entries) still holds, and the cache's hits and misses over
// a case's counted windows are read from the service's /metrics and written beside its counts. A
// window counts the whole process, the collector's and compiler's threads included; the figure
// is the median window, and the median outside V8's compilers and collector ("steady"), whose
// turns depend on timing. Work done per second rather than per request weighs far more per request
// under valgrind's slowness, so the service's timers run at their longest intervals. The baseline
// runs at the same time as the current build, so both see the same load.
//   BENCH_BASELINE=<git ref>, BENCH_CASES, BENCH_SITES, BENCH_REUSE as for npm run bench;
//   BENCH_REQUESTS (1000), BENCH_WINDOWS (5), BENCH_WARMUP_REQUESTS (15000), BENCH_CONNECTIONS (4);
//   BENCH_IDLE_SECONDS (0): the processes sit idle this long after they answer, before the first
//   case (a service after a quiet spell: Node's nextTick, src/http/tick-shape.ts);
//   BENCH_NODE_FLAGS replaces the services' Node flags under valgrind (--no-concurrent-recompilation);
//   BENCH_PROFILE=1 also names where the instructions go (JIT code through --perf-basic-prof's map);
//   BENCH_KEEP_DUMPS=1 keeps callgrind's dumps (bench/data/callgrind-*); BENCH_VALGRIND_ARGS adds
//   callgrind options (say --separate-callers4='*Runtime_DefineKeyedOwnPropertyInLiteral*' to see
//   who reaches a runtime function through V8's CEntry trampoline).
// Writes bench/out/instructions.json with every setting at its default, else
// bench/out/instructions-partial.json.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { once } from 'node:events'
import { cpus } from 'node:os'
import { join } from 'node:path'
import { AnswerFramer, requestBytes } from './http.ts'
import {
  BASELINE, COMMIT, DATA, HELLO_ARGS, ONLY, ROOT, SERVICE_ENV, SITES, bareEnv, buildBaseline, caseHeaders, currentBuild,
  freePort, isBare, log, median, setUp, startService, stop, waitForHttp, writeOut, type Build, type Case
} from './setup.ts'

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 1000)
const WINDOWS = Number(process.env.BENCH_WINDOWS ?? 5)
const WARMUP = Number(process.env.BENCH_WARMUP_REQUESTS ?? 15000)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 4)
const IDLE_SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 0)
const PROFILE = process.env.BENCH_PROFILE === '1'
const KEEP_DUMPS = process.env.BENCH_KEEP_DUMPS === '1'
const VALGRIND_ARGS = (process.env.BENCH_VALGRIND_ARGS ?? '').split(' ').filter(Boolean)
/**
 * Optimising compilations on the main thread, where they happen at the same request in every run
 * (the helper thread gets its turns from valgrind's scheduler, at no fixed point).
 */
const NODE_FLAGS = (process.env.BENCH_NODE_FLAGS ?? '--no-concurrent-recompilation').split(' ').filter(Boolean)
/** V8's optimising compiler and deoptimiser: when it runs depends on valgrind's thread scheduling and on feedback. */
const COMPILER_PARTS = [
  'compiler::', 'maglev::', 'baseline::', 'Pipeline', 'Compiler::', 'OptimizingCompileDispatcher', 'Deoptimizer',
  'TurbofanCompilationJob', 'OptimizedCompilationInfo', 'AstTyper', 'CodeGenerator', 'interpreter::BytecodeGenerator',
  'Parser', 'Zone::', 'ZoneList'
]
const COMPILER_FUNCTION = new RegExp(`v8::internal::(${COMPILER_PARTS.join('|')})`)
/** The collector's own functions in V8 (marking, scavenging, sweeping, compaction), for its share. */
const GC_PARTS = [
  'Heap', 'Marking', 'ConcurrentMarking', 'MarkCompact', String.raw`Mark\w*Visitor`, 'Scaveng', 'Sweeper', 'Evacuat',
  'IncrementalMarking', 'MinorMarkCompact', 'MemoryAllocator', 'Page::', 'MemoryChunk', 'RememberedSet', 'SlotSet',
  'TypedSlot'
]
const GC_FUNCTION = new RegExp([
  String.raw`v8::internal::(\w+::)*(${GC_PARTS.join('|')})`, 'heap::base::', 'cppgc::',
  'v8::internal::BodyDescriptorBase::Iterate', 'MemoryChunkData'
].join('|'))

if (spawnSync('valgrind', ['--version']).status !== 0 || spawnSync('callgrind_control', ['--version']).status !== 0) {
  log('valgrind (with callgrind_control) is not installed: apt-get install valgrind')
  process.exit(1)
}

const { cases: CASES } = setUp()

interface Counted {
  name: string, commit: string, child: ChildProcess, url: string, outDir: string, dumps: number
  connections: Connections, metricsUrl?: string
}
const children: ChildProcess[] = []
process.on('exit', () => { for (const child of children) child.kill('SIGKILL') })

/** A process under callgrind with counting off until asked; its dumps go to a directory of its own. */
async function underCallgrind (
  name: string, commit: string, args: string[], cwd: string, env: Record<string, string>
): Promise<Counted> {
  const port = await freePort()
  const outDir = join(DATA, `callgrind-${name.replace(/\W+/g, '-')}`)
  rmSync(outDir, { recursive: true, force: true })
  mkdirSync(outDir, { recursive: true })
  const callgrind = [
    '--tool=callgrind', '--instr-atstart=no', '--smc-check=all-non-file',
    `--callgrind-out-file=${join(outDir, 'callgrind.out')}`, ...VALGRIND_ARGS
  ]
  const profiling = PROFILE ? ['--perf-basic-prof', '--no-logfile-per-isolate', '--logfile=/dev/null'] : []
  const child = spawn('valgrind', [...callgrind, process.execPath, ...NODE_FLAGS, ...profiling, ...args], {
    cwd, env: { ...process.env, ...env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe']
  })
  children.push(child)
  let stderr = ''
  child.stderr!.on('data', (d) => { stderr = (stderr + d).slice(-4000) })
  const url = `http://127.0.0.1:${port}`
  try {
    await waitForHttp(`${url}/`, child, 600_000)
  } catch (error) {
    log(stderr)
    throw error
  }
  log(`${name} answering under callgrind (pid ${child.pid})`)
  const metricsUrl = env.METRICS_PORT === undefined ? undefined : `http://127.0.0.1:${env.METRICS_PORT}/metrics`
  return { name, commit, child, url, outDir, dumps: 0, connections: new Connections(url), metricsUrl }
}

/**
 * Keep-alive connections to a target, opened for a case and used for its warm-up and its windows:
 * new connections in a window make V8 deoptimise and reoptimise Node's socket code (new maps),
 * which inflates the next few windows. (Opened once for all cases, they would be closed by the
 * service's keep-alive timeout while other cases run.)
 */
class Connections {
  private readonly sockets: Socket[] = []
  constructor (private readonly url: string) {}

  async open () {
    this.close()
    const { hostname, port } = new URL(this.url)
    for (let i = 0; i < CONNECTIONS; i++) {
      const socket = connect(Number(port), hostname)
      await once(socket, 'connect')
      this.sockets.push(socket)
    }
  }

  /** Sends paths[from, from + count) (cycling), one request at a time on each connection. */
  replay (c: Case, from: number, count: number): Promise<Record<string, number>> {
    const requests = requestBytes(this.url, c.paths, caseHeaders(c))
    const statuses: Record<string, number> = {}
    let next = from
    const end = from + count
    const run = (socket: Socket) => new Promise<void>((resolve, reject) => {
      const finish = (error?: Error) => {
        socket.off('data', onData)
        socket.off('error', finish)
        socket.off('close', onClose)
        if (error) reject(error)
        else resolve()
      }
      const onClose = () => finish(new Error('the connection closed'))
      const send = () => {
        if (next >= end) finish()
        else socket.write(requests[next++ % requests.length])
      }
      const framer = new AnswerFramer((status) => {
        statuses[status] = (statuses[status] ?? 0) + 1
        send()
      })
      const onData = (data: Buffer) => {
        try {
          framer.push(data)
        } catch (error) {
          finish(error as Error)
        }
      }
      socket.on('data', onData)
      socket.on('error', finish)
      socket.on('close', onClose)
      send()
    })
    return Promise.all(this.sockets.map(run)).then(() => statuses)
  }

  close () { for (const socket of this.sockets.splice(0)) socket.destroy() }
}

const control = (target: Counted, ...args: string[]) => {
  const done = spawnSync('callgrind_control', [...args, String(target.child.pid)], { encoding: 'utf8' })
  if (done.status !== 0) throw new Error(`callgrind_control ${args.join(' ')}: ${done.stderr}`)
}

/** The next dump's file and its total, once callgrind has finished writing it. */
async function nextDump (target: Counted): Promise<{ file: string, total: number }> {
  target.dumps += 1
  const file = join(target.outDir, `callgrind.out.${target.dumps}`)
  for (let i = 0; i < 600; i++) {
    const total = existsSync(file) ? /^totals: (\d+)/m.exec(readFileSync(file, 'latin1')) : null
    if (total) return { file, total: Number(total[1]) }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`no callgrind dump at ${file}`)
}

interface CacheLookups { hit: number, miss: number }
/**
 * The service's answer-cache lookups so far (lsp_cache_lookups_total), read outside the counted
 * windows; undefined for a build without the metric (an older baseline: no metrics server, or
 * no such counter), a series not yet printed counted as 0.
 */
async function cacheLookups (target: Counted): Promise<CacheLookups | undefined> {
  if (target.metricsUrl === undefined) return undefined
  let text: string
  try {
    text = await (await fetch(target.metricsUrl)).text()
  } catch {
    return undefined
  }
  if (!/^# TYPE lsp_cache_lookups_total /m.test(text)) return undefined
  const count = (result: string) =>
    Number(new RegExp(`^lsp_cache_lookups_total\\{result="${result}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0)
  return { hit: count('hit'), miss: count('miss') }
}

interface Window {
  instructions: number, gc: number, compiler: number, statuses: Record<string, number>, functions: FunctionCount[]
}
async function countWindow (target: Counted, c: Case, from: number): Promise<Window> {
  control(target, '--zero')
  control(target, '--instr=on')
  const statuses = await target.connections.replay(c, from, REQUESTS)
  control(target, '--instr=off')
  control(target, '--dump')
  const { file, total } = await nextDump(target)
  const counts = functions(file)
  let gc = 0
  let compiler = 0
  for (const f of counts) {
    if (GC_FUNCTION.test(f.name)) gc += f.ir
    else if (COMPILER_FUNCTION.test(f.name)) compiler += f.ir
  }
  return { instructions: total, gc, compiler, statuses, functions: counts }
}

interface FunctionCount { ir: number, name: string }
/** Exclusive instructions per function of a dump (callgrind_annotate, every function). */
function functions (file: string): FunctionCount[] {
  const out = spawnSync('callgrind_annotate', ['--threshold=100', '--inclusive=no', file], {
    encoding: 'utf8', maxBuffer: 1 << 28
  }).stdout
  const rows: FunctionCount[] = []
  for (const line of out.split('\n')) {
    const m = /^\s*([\d,]+) \([^)]*\)\s+(.*)$/.exec(line)
    if (m && !m[2].includes('PROGRAM TOTALS')) rows.push({ ir: Number(m[1].replace(/,/g, '')), name: m[2] })
  }
  return rows
}

/**
 * JIT code's names from the process's perf map (--perf-basic-prof), in the order written. Code space
 * is used again after a collection, so an address may be covered by several entries: the last is the
 * code that ran (the first, taken before, named a hit's code after functions long gone).
 */
function perfMap (pid: number): (address: number) => string | undefined {
  const file = `/tmp/perf-${pid}.map`
  const entries = existsSync(file)
    ? readFileSync(file, 'utf8').split('\n').filter(Boolean).map((line) => {
      const [start, size, ...name] = line.split(' ')
      return { start: parseInt(start, 16), end: parseInt(start, 16) + parseInt(size, 16), name: name.join(' ') }
    })
    : []
  return (address) => {
    for (let i = entries.length - 1; i >= 0; i--) {
      if (entries[i].start <= address && address < entries[i].end) return entries[i].name
    }
    return undefined
  }
}

const UNNAMED = 'JIT code (not in the perf map)'
/**
 * Who a function belongs to, for the profile's summary: JavaScript by package or service folder,
 * native code by library.
 */
function groupOf (label: string): string {
  if (GC_FUNCTION.test(label)) return 'garbage collector'
  if (COMPILER_FUNCTION.test(label)) return 'V8 compilers'
  if (label.startsWith('JS:')) {
    const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(label)
    if (pkg) return `JS: ${pkg[1]}`
    const own = /\/dist\/((?:src|plugins)\/[^/:]+)/.exec(label)
    if (own) return `JS: service ${own[1].replace(/\.js$/, '')}`
    if (/ node:/.test(label)) return 'JS: Node core (http, net, streams, events)'
    return 'JS: other'
  }
  if (label.startsWith('RegExp:')) return 'regular expressions (V8 code)'
  if (label === UNNAMED) return 'JIT code missing from the perf map'
  if (/^Builtins_|v8::/.test(label)) return 'V8 builtins and runtime (ICs, strings, JSON, hashing)'
  if (/sha\d*_block|EVP_|OPENSSL|CRYPTO_/i.test(label)) return 'OpenSSL (token digest, ETag)'
  if (/sqlite3/i.test(label)) return 'SQLite'
  if (/libc\.so|ld-linux/.test(label)) return 'libc (memcpy, malloc)'
  if (/^(node::|uv_|llhttp|napi_)/.test(label)) return 'Node native (libuv, llhttp, bindings)'
  return 'other native code'
}

/**
 * Where a window's instructions went: functions by exclusive count (JIT code named from the perf
 * map), and by owner.
 */
function profileOf (target: Counted, counts: FunctionCount[], requests: number) {
  const lookup = perfMap(target.child.pid!)
  const byName = new Map<string, number>()
  const byGroup = new Map<string, number>()
  const groupOfLabel = new Map<string, string>()
  for (const { ir, name } of counts) {
    const jit = /^\?\?\?:0x([0-9a-f]+) \[\?\?\?\]$/.exec(name)
    const label = jit
      ? (lookup(parseInt(jit[1], 16)) ?? UNNAMED)
      : name.replace(/^\?\?\?:/, '').replace(/\(.*\)( const)?( \[.*\])?$/, '').slice(0, 140)
    byName.set(label, (byName.get(label) ?? 0) + ir)
    const group = groupOf(jit ? label : name.replace(/^\?\?\?:/, ''))
    byGroup.set(group, (byGroup.get(group) ?? 0) + ir)
    groupOfLabel.set(label, group)
  }
  const perRequest = (entries: Map<string, number>, n: number) =>
    [...entries].sort((a, b) => b[1] - a[1]).slice(0, n)
      .map(([name, ir]) => ({ name, per_request: Math.round(ir / requests) }))
  const functionsOf = (group: string) => new Map([...byName].filter(([label]) => groupOfLabel.get(label) === group))
  return {
    groups: perRequest(byGroup, 30).map((g) => ({ ...g, top: perRequest(functionsOf(g.name), 3) })),
    functions: perRequest(byName, 40)
  }
}

// The processes: the bare route, this build's service and, with BENCH_BASELINE, that commit's.
// Each service boots once normally first, so the one under callgrind reads an index snapshot.
const builds: Build[] = [currentBuild(), ...(BASELINE === undefined ? [] : [buildBaseline(BASELINE)])]
for (const b of builds) await stop((await startService(b, await freePort())).child)
// Work done per second, not per request (partner refresh, counter saves), at its longest interval:
// under valgrind a second holds far fewer requests than outside it.
const SLOW_TIMERS = { PARTNER_REFRESH_MS: '5000', COUNTER_SAVE_MS: '5000' }
// METRICS_PORT: the cache's hits and misses are read from /metrics around a case's counted windows
const services = await Promise.all(builds.map(async (b) => underCallgrind(b.label, b.commit, b.args, b.cwd, {
  ...SERVICE_ENV, ...SLOW_TIMERS, DATA_DIR: b.dataDir, METRICS_PORT: String(await freePort())
})))
const hello = await underCallgrind('bare route', COMMIT, HELLO_ARGS, ROOT, bareEnv(CASES))
if (IDLE_SECONDS > 0) {
  log(`idle for ${IDLE_SECONDS} s...`)
  await new Promise((resolve) => setTimeout(resolve, IDLE_SECONDS * 1000))
}

const fmt = (n: number) => n.toLocaleString('en')
interface Row {
  case: string, build: string, commit: string, per_request: number, windows: number[], gc_per_request: number
  compiler_per_request: number, steady_per_request: number, steady_windows: number[], statuses: Record<string, number>
  cache?: CacheLookups, profile?: ReturnType<typeof profileOf>
}
const rows: Row[] = []
for (const c of CASES) {
  const targets = isBare(c) ? [hello] : services
  await Promise.all(targets.map(async (t) => {
    await t.connections.open()
    await t.connections.replay(c, 0, WARMUP)
  }))
  const windows = await Promise.all(targets.map(async (t) => {
    // one more window than asked, the first left out: in the service the first window after
    // counting starts costs more than the others
    const list: Window[] = []
    let before: CacheLookups | undefined
    for (let w = 0; w <= WINDOWS; w++) {
      if (w === 1) before = await cacheLookups(t)
      list.push(await countWindow(t, c, WARMUP + w * REQUESTS))
    }
    // the counted windows' answer-cache lookups (none for the bare route, which has no cache)
    const after = await cacheLookups(t)
    const cache = before && after && { hit: after.hit - before.hit, miss: after.miss - before.miss }
    return { list: list.slice(1), cache }
  }))
  targets.forEach((t, i) => {
    const { list, cache } = windows[i]
    const perRequest = (count: (w: Window) => number) => list.map((w) => Math.round(count(w) / REQUESTS))
    const all = perRequest((w) => w.instructions)
    const steady = perRequest((w) => w.instructions - w.gc - w.compiler)
    const row: Row = {
      case: c.name,
      build: t.name,
      commit: t.commit,
      per_request: Math.round(median(all)),
      windows: all,
      gc_per_request: Math.round(median(perRequest((w) => w.gc))),
      compiler_per_request: Math.round(median(perRequest((w) => w.compiler))),
      steady_per_request: Math.round(median(steady)),
      steady_windows: steady,
      statuses: list[list.length - 1].statuses,
      cache
    }
    // the profile of the window with the median count
    const middle = [...list].sort((a, b) => a.instructions - b.instructions)[(list.length - 1) >> 1]
    if (PROFILE) row.profile = profileOf(t, middle.functions, REQUESTS)
    rows.push(row)
    const cacheNote = row.cache ? `  cache hits ${row.cache.hit}, misses ${row.cache.miss}` : ''
    log(`${c.name.padEnd(20)} ${row.build.padEnd(10)} ${fmt(row.per_request).padStart(10)} instructions/request  ` +
      `windows ${all.map(fmt).join(' ')}  collector ${fmt(row.gc_per_request)}  ` +
      `compiler ${fmt(row.compiler_per_request)}  ` +
      `steady ${row.steady_windows.map(fmt).join(' ')}  ${JSON.stringify(row.statuses)}${cacheNote}`)
    if (row.profile) {
      for (const p of row.profile.groups) {
        const top = p.top.map((f) => `${f.name.slice(0, 60)} ${fmt(f.per_request)}`).join('; ')
        log(`    ${fmt(p.per_request).padStart(9)}  ${p.name}: ${top}`)
      }
      log('    top functions:')
      for (const p of row.profile.functions.slice(0, 25)) log(`    ${fmt(p.per_request).padStart(9)}  ${p.name}`)
    }
  })
}
for (const t of [...services, hello]) t.connections.close()
for (const child of children) child.kill('SIGTERM')

const bare = rows.find((r) => r.case === 'hello-world')?.per_request
/** Cells padded to their widths (a negative width pads on the right), one space apart. */
const cells = (list: Array<[string, number]>) =>
  list.map(([v, w]) => w < 0 ? v.padEnd(-w) : v.padStart(w)).join(' ')
const table = [
  `instructions per request (callgrind, user space; median of ${WINDOWS} windows of ${REQUESTS} requests ` +
    `after ${WARMUP} unmeasured);`,
  '"steady": outside V8\'s compilers and the garbage collector, whose turns depend on timing',
  cells([['case', -20], ['all', 9], ['x bare', 6], ['steady', 9], ['GC', 7], ['compiler', 8], ['cache hit/miss', 14]]) +
    (BASELINE !== undefined
      ? `  ${cells([['baseline all', 12], ['steady', 9]])}  ${cells([['all A/B', 7], ['steady A/B', 10]])}`
      : ''),
  ...rows.filter((r) => r.build !== 'baseline').map((r) => {
    const b = rows.find((x) => x.case === r.case && x.build === 'baseline')
    const ours = cells([
      [r.case, -20], [fmt(r.per_request), 9], [bare ? (r.per_request / bare).toFixed(2) : '-', 6],
      [fmt(r.steady_per_request), 9], [fmt(r.gc_per_request), 7], [fmt(r.compiler_per_request), 8],
      [r.cache ? `${r.cache.hit}/${r.cache.miss}` : '-', 14]
    ])
    if (b === undefined) return ours
    const theirs = cells([[fmt(b.per_request), 12], [fmt(b.steady_per_request), 9]])
    const ratios = cells([
      [(r.per_request / b.per_request).toFixed(3), 7], [(r.steady_per_request / b.steady_per_request).toFixed(3), 10]
    ])
    return `${ours}  ${theirs}  ${ratios}`
  })
]
process.stdout.write(table.join('\n') + '\n')
// A run with every setting at its default is kept apart from a partial look, which would overwrite it.
const full = !ONLY && SITES === 1_000_000 && BASELINE === undefined && REQUESTS === 1000 && WINDOWS === 5 &&
  WARMUP === 15000 && CONNECTIONS === 4 && IDLE_SECONDS === 0 && process.env.BENCH_NODE_FLAGS === undefined &&
  VALGRIND_ARGS.length === 0
const file = writeOut(full ? 'instructions.json' : 'instructions-partial.json', {
  date: new Date().toISOString(),
  command: 'npm run bench:instructions',
  machine: {
    cpus: cpus().length,
    cpu: cpus()[0]?.model,
    node: process.version,
    valgrind: spawnSync('valgrind', ['--version'], { encoding: 'utf8' }).stdout.trim()
  },
  commit: COMMIT,
  baseline: BASELINE === undefined ? undefined : `${BASELINE} (${builds[1].commit})`,
  settings: {
    sites: SITES,
    requests_per_window: REQUESTS,
    windows: WINDOWS,
    warmup_requests: WARMUP,
    connections: CONNECTIONS,
    idle_seconds: IDLE_SECONDS
  },
  rows
})
log(`written to ${file}`)
if (KEEP_DUMPS) log(`callgrind's dumps kept in ${DATA}/callgrind-* (JIT code's names in /tmp/perf-<pid>.map)`)
else {
  for (const dir of readdirSync(DATA).filter((d) => d.startsWith('callgrind-'))) {
    rmSync(join(DATA, dir), { recursive: true, force: true })
  }
  for (const child of children) rmSync(`/tmp/perf-${child.pid}.map`, { force: true })
}
