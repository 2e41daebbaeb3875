// What the two benchmarks share (bench/bench.ts: time on a loaded service; bench/instructions.ts:
// instructions counted under callgrind): the dataset and partners, the cases, the service's command
// line, and a baseline commit built in a worktree of its own.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import {
  copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync
} from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { generateDataset } from '../src/setup/data-dir.ts'
import { PartnerStore, controlPath } from '../src/partners/store.ts'
import { writeDataset, datasetPath } from '../src/sites/dataset-file.ts'
import { seededRandom } from '../src/sites/generator.ts'
import { startArgs } from './start-command.ts'

export const ROOT = new URL('..', import.meta.url).pathname
export const DATA = join(ROOT, 'bench/data')
/** Figures written on demand (ignored by git): partial and A/B runs, instruction counts, profiles. */
export const OUT = join(ROOT, 'bench/out')
export const log = (line: string) => process.stderr.write(`${line}\n`)
const git = (...args: string[]) => spawnSync('git', args, { cwd: ROOT, encoding: 'utf8' })
/** The checked-out commit, marked when tracked files differ from it. */
const changed = git('status', '--porcelain', '--untracked-files=no').stdout.trim() !== ''
export const COMMIT = `${git('rev-parse', '--short', 'HEAD').stdout.trim()}${changed ? '+changes' : ''}`
/** Distinct URLs per miss case: ten times the service's cache (CACHE_MAX_ENTRIES), so cycling them always misses. */
export const DISTINCT = 10_000
/** The service's environment in both benchmarks: as deployed (an access line per request, to /dev/null here). */
export const SERVICE_ENV = { NODE_ENV: 'production', LOG_LEVEL: 'info', CACHE_MAX_ENTRIES: '1000', METRICS_PORT: '0' }

// The knobs both benchmarks read (each script's header says what they do).
export const BASELINE = process.env.BENCH_BASELINE
export const SITES = Number(process.env.BENCH_SITES ?? 1_000_000)
/** BENCH_CASES, split: undefined runs every case */
export const ONLY = process.env.BENCH_CASES?.split(',')
/** Node's arguments for the bare route's process (the ceiling): the bench is not part of the product's build. */
export const HELLO_ARGS = ['--import', 'tsx', join(ROOT, 'bench/hello.ts')]

/** CPU time a process has used (user + system), in µs, from /proc (clock ticks of 1/CLK_TCK s). */
const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100
export function cpuUs (pid: number): number {
  // the fields after the command name, which is in parentheses and may hold spaces
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 1e6 / CLK_TCK
}

/** A run of the load generator: where, how many connections, how long, at what overall rate (open loop) if any. */
export interface LoadJob { base: string, connections: number, seconds: number, rate?: number }

/**
 * bench/load.ts over a case's URLs (and its partner's headers) in a process of its own;
 * resolves with the report it prints. `file` names the job's file in DATA (runs side by side need
 * one each).
 */
export function runLoad<Report> (c: Case, job: LoadJob, file = 'job.json'): Promise<Report> {
  const path = join(DATA, file)
  const headers = c.token || c.headers ? caseHeaders(c) : undefined
  writeFileSync(path, JSON.stringify({ ...job, paths: c.paths, headers }))
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bench/load.ts'), path], {
      cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit']
    })
    let out = ''
    child.stdout.on('data', (d) => { out += d })
    child.on('close', (code) => {
      if (code === 0) resolve(JSON.parse(out) as Report)
      else reject(new Error(`load generator exited with ${code}`))
    })
  })
}

/** Writes `figures` as JSON to `name` in OUT; returns the file's path. */
export function writeOut (name: string, figures: unknown): string {
  mkdirSync(OUT, { recursive: true })
  const file = join(OUT, name)
  writeFileSync(file, JSON.stringify(figures, null, 2) + '\n')
  return file
}

export const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

export function freePort (): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port
      server.close(() => resolve(port))
    })
    server.on('error', reject)
  })
}

export async function waitForHttp (url: string, child: ChildProcess, timeoutMs: number): Promise<number> {
  const started = performance.now()
  while (performance.now() - started < timeoutMs) {
    if (child.exitCode !== null) throw new Error(`process exited with ${child.exitCode}`)
    try {
      await fetch(url)
      return performance.now()
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms`)
}

export interface Case {
  name: string, paths: string[], token?: string, note: string, headers?: Record<string, string>
  /** answered by the bare route's process (HELLO_ARGS): the ceilings and the floors */
  bare?: true
  /** a floor case's partner limit, requests a minute (bench/floor.ts) */
  perMinute?: number
}

const UNLIMITED = { minute: 'unlimited', hour: 'unlimited', day: 'unlimited' } as const
/** the 429 path's partner: its requests beyond these a minute are refused */
const LIMITED_PER_MINUTE = 30

/**
 * The production dataset (built unless `reuse` and present: 80% near European towns, all
 * categories, category 10 rare at 1%), four partners made afresh in control.db, and every case's
 * URLs: points near random sites (so most answers are full) and tag pages.
 */
export function prepareData (
  { sites, reuse }: { sites: number, reuse: boolean }
): { cases: Case[], buildSeconds: number } {
  const started = performance.now()
  if (!reuse || !existsSync(datasetPath(DATA, 'production')) || siteCount() !== sites) {
    rmSync(DATA, { recursive: true, force: true })
    mkdirSync(DATA, { recursive: true })
    log(`building ${sites.toLocaleString('en')} production sites...`)
    generateDataset(datasetPath(DATA, 'production'), {
      count: sites,
      seed: 'bench',
      prefix: 'prd',
      europeShare: 0.8,
      categoryWeights: [[2, 12], [3, 24], [4, 15], [5, 12], [6, 12], [7, 8], [8, 8], [9, 8], [10, 1]]
    })
    writeDataset(datasetPath(DATA, 'sandbox'), [], { source: 'empty', precision: 3 })
  } else {
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${controlPath(DATA)}${suffix}`, { force: true })
  }
  const buildSeconds = (performance.now() - started) / 1000
  const store = new PartnerStore(controlPath(DATA))
  type Changes = Parameters<PartnerStore['update']>[1]
  const partner = (slug: string, changes: Changes, tier: 'growth' | 'scale' = 'scale') => {
    const { token } = store.create({ name: slug, slug, tier, environment: 'production' })
    store.update(slug, changes)
    return token
  }
  const tokens = {
    wide: partner('wide', {
      categories: [2, 3, 4, 5, 6, 7, 8, 9, 10], otherCategories: true, limitOverrides: UNLIMITED
    }),
    rare: partner('rare', { categories: [10], otherCategories: true, limitOverrides: UNLIMITED }),
    // the six named categories, most of the sites: a booking partner's allow-list
    named: partner('named', { categories: [2, 3, 4, 5, 6, 7], limitOverrides: UNLIMITED }),
    limited: partner('limited', {
      limitOverrides: { minute: LIMITED_PER_MINUTE, hour: 'unlimited', day: 'unlimited' }
    }, 'growth')
  }
  store.close()

  const db = new Database(datasetPath(DATA, 'production'), { readonly: true })
  const random = seededRandom('bench-queries')
  const pointAt = db.prepare('SELECT latitude, longitude FROM sites WHERE rowid = ?')
  const points = Array.from({ length: DISTINCT }, () => {
    const p = pointAt.get(1 + Math.floor(random() * sites)) as { latitude: number, longitude: number }
    const lat = Math.max(-89.9, Math.min(89.9, p.latitude + (random() - 0.5) * 0.1))
    let lng = p.longitude + (random() - 0.5) * 0.1
    if (lng > 180) lng -= 360
    if (lng < -180) lng += 360
    return { lat: lat.toFixed(4), lng: lng.toFixed(4) }
  })
  const tags = db.prepare('SELECT tag, count(*) AS n FROM site_tags GROUP BY tag').all() as { tag: string, n: number }[]
  db.close()
  const near = (path: string, extra: string) => points.map((p) => `/v1${path}?lat=${p.lat}&lng=${p.lng}${extra}`)
  const pagesOf = (size: number) => {
    const pages = tags.flatMap(({ tag, n }) => Array.from({ length: Math.ceil(n / size) },
      (_, i) => `/v1/sites/by-tag?tag=${tag}&per_page=${size}&page=${i + 1}`))
    for (let i = pages.length - 1; i > 0; i--) { // shuffle, so neighbouring requests differ
      const j = Math.floor(random() * (i + 1));
      [pages[i], pages[j]] = [pages[j], pages[i]]
    }
    return pages
  }
  const tagPages = pagesOf(500)
  const tagPages200 = pagesOf(200)
  // routes of 300 nm from each point, in three legs bending by up to 30 degrees, and city-sized boxes
  const routes = points.map((p) => {
    let lat = Number(p.lat)
    let lng = Number(p.lng)
    let bearing = random() * 2 * Math.PI
    const path = [`${p.lat},${p.lng}`]
    for (let leg = 0; leg < 3; leg++) {
      bearing += (random() - 0.5) * Math.PI / 3
      ;({ lat, lng } = destination(lat, lng, bearing, 300 * 1.852 / 3))
      path.push(`${lat.toFixed(4)},${lng.toFixed(4)}`)
    }
    return `/v1/sites/along-route?path=${path.join('|')}&radius=10`
  })
  const boxes = points.map((p) => {
    const lat = Number(p.lat)
    const lng = Number(p.lng)
    const box = [lng - 0.15, Math.max(-90, lat - 0.1), lng + 0.15, Math.min(90, lat + 0.1)]
      .map((n, i) => (i % 2 === 0 ? (n > 180 ? n - 360 : n < -180 ? n + 360 : n) : n).toFixed(4))
    return `/v1/sites/by-bbox?bbox=${box.join(',')}&per_page=200`
  })
  const r25 = near('/sites', '&radius=25')
  const r75 = near('/sites', '&radius=75')
  const nearest = near('/sites/nearest', '')
  const gzip = { 'accept-encoding': 'gzip' }
  const wide = tokens.wide
  const cases: Case[] = [
    { name: 'hello-world', paths: ['/'], bare: true, note: 'bare Fastify route in its own process (the ceiling)' },
    {
      name: 'hello-world 19kB',
      paths: ['/big'],
      bare: true,
      note: 'the same bare route sending a fixed 19 kB body (the ceiling for answers of that size)'
    },
    {
      name: 'floor: cached nearest',
      paths: nearest.slice(0, 100),
      token: wide,
      bare: true,
      note: 'the contract\'s work for a cached nearest answer done plainly, in the bare route\'s process ' +
        '(bench/floor.ts)'
    },
    {
      name: 'floor: 429 path',
      paths: r25,
      token: tokens.limited,
      perMinute: LIMITED_PER_MINUTE,
      bare: true,
      note: 'the contract\'s work for a refusal at the limit done plainly, in the bare route\'s process'
    },
    { name: '/sites r=25', paths: r25, token: wide, note: 'all categories, up to 100 records' },
    { name: '/sites r=75', paths: r75, token: wide, note: 'all categories, up to 100 records' },
    { name: '/sites rare', paths: r75, token: tokens.rare, note: 'only category 10 (1% of sites)' },
    { name: '/sites r=25 categories 2-7', paths: r25, token: tokens.named, note: 'categories 2 to 7 only' },
    {
      name: '/sites tag categories 2-7',
      paths: near('/sites', '&radius=75&tag=~customs'),
      token: tokens.named,
      note: 'a tag of 9% of the sites, radius 75 km, categories 2 to 7'
    },
    { name: '/sites/nearest', paths: nearest, token: wide, note: 'default radius 25' },
    { name: '/sites/by-tag', paths: tagPages, token: wide, note: `pages of 500, ${tagPages.length} distinct` },
    {
      name: '/sites/by-tag 200', paths: tagPages200, token: wide, note: `pages of 200, ${tagPages200.length} distinct`
    },
    { name: '/sites/along-route', paths: routes, token: wide, note: '300 nm in three legs, radius 10 km' },
    { name: '/sites/by-bbox', paths: boxes, token: wide, note: 'city-sized boxes (0.3 by 0.2 degrees), pages of 200' },
    {
      name: '/sites/by-bbox categories 2-7', paths: boxes, token: tokens.named, note: 'the same, categories 2 to 7 only'
    },
    {
      name: '/sites/along-route categories 2-7', paths: routes, token: tokens.named, note: 'the same, categories 2 to 7'
    },
    { name: 'cached /sites', paths: r25.slice(0, 100), token: wide, note: 'a hot set of 100 queries (19 kB answers)' },
    { name: 'cached nearest', paths: nearest.slice(0, 100), token: wide, note: 'a hot set of 100 nearest queries' },
    {
      name: '/sites r=25 gzip',
      paths: r25,
      token: wide,
      headers: gzip,
      note: 'as /sites r=25, compressed: every answer gzipped'
    },
    {
      name: 'cached /sites gzip',
      paths: r25.slice(0, 100),
      token: wide,
      headers: gzip,
      note: 'the hot set, compressed once per answer'
    },
    { name: '429 path', paths: r25, token: tokens.limited, note: 'a partner at its limit (30/min)' }
  ]
  return { cases, buildSeconds }
}

/** Sites in the production dataset kept from an earlier run (BENCH_REUSE): reused only at the size asked. */
function siteCount (): number {
  const db = new Database(datasetPath(DATA, 'production'), { readonly: true })
  try {
    return (db.prepare('SELECT count(*) AS n FROM sites').get() as { n: number }).n
  } finally {
    db.close()
  }
}

/**
 * The data (BENCH_SITES sites, kept from the last run with BENCH_REUSE=1 when of that size), the
 * cases BENCH_CASES selects, and this checkout built (tsc) as `npm start` runs it.
 */
export function setUp (): { cases: Case[], buildSeconds: number } {
  const { cases, buildSeconds } = prepareData({ sites: SITES, reuse: process.env.BENCH_REUSE === '1' })
  log('building (tsc)...')
  const built = spawnSync('npm', ['run', '-s', 'build'], { cwd: ROOT, stdio: 'inherit' })
  if (built.status !== 0) throw new Error('build failed')
  return { cases: selectCases(cases, ONLY), buildSeconds }
}

/** The cases answered by HELLO_ARGS's process: the bare route's (the ceilings) and the floors. */
export const isBare = (c: Case) => c.bare === true

/**
 * The environment of HELLO_ARGS's process: the partners its floors take (`token` or
 * `token:perMinute`, those of the floor cases).
 */
export const bareEnv = (cases: Case[]): Record<string, string> => {
  const floors = cases.filter((c) => c.bare && c.token !== undefined)
  const tokens = floors.map((c) => c.perMinute === undefined ? c.token : `${c.token}:${c.perMinute}`)
  return { FLOOR_TOKENS: tokens.join(',') }
}

/** A case's request headers: its own, and its partner's token. */
export const caseHeaders = (c: Case): Record<string, string> =>
  ({ ...c.headers, ...(c.token ? { authorization: `Bearer ${c.token}` } : {}) })

/**
 * The cases BENCH_CASES names (comma-separated; an exact name selects that case alone, any other
 * text every case whose name holds it), with the ceilings and floors always; all of them without it.
 */
export function selectCases (all: Case[], only: string[] | undefined): Case[] {
  if (only === undefined) return all
  const selects = (o: string, name: string) => name === o || (!all.some((x) => x.name === o) && name.includes(o))
  return all.filter((c) => isBare(c) || only.some((o) => selects(o, c.name)))
}

/** A build to measure: its service's command line as `npm start` runs it, its directory and its DATA_DIR. */
export interface Build { label: string, commit: string, args: string[], cwd: string, dataDir: string }

export const currentBuild = (): Build =>
  ({ label: 'current', commit: COMMIT, args: startArgs(ROOT), cwd: ROOT, dataDir: DATA })

/**
 * Another commit, checked out and built (tsc) in a temporary worktree sharing this one's
 * node_modules (removed when the process exits), on a copy of the dataset and control files in
 * bench/data/baseline: its index snapshot is its own, since the format may differ.
 */
export function buildBaseline (ref: string): Build {
  const dir = mkdtempSync(join(tmpdir(), 'lsp-bench-baseline-'))
  process.on('exit', () => {
    git('worktree', 'remove', '--force', dir)
    rmSync(dir, { recursive: true, force: true })
  })
  const added = git('worktree', 'add', '--detach', dir, ref)
  if (added.status !== 0) throw new Error(`BENCH_BASELINE=${ref}: ${added.stderr.trim()}`)
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'))
  log(`building the baseline ${ref} (tsc)...`)
  const built = spawnSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: dir, stdio: 'inherit' })
  if (built.status !== 0) throw new Error('baseline build failed')
  const dataDir = join(DATA, 'baseline')
  rmSync(dataDir, { recursive: true, force: true })
  mkdirSync(dataDir)
  for (const file of ['sandbox.db', 'production.db', 'control.db']) copyFileSync(join(DATA, file), join(dataDir, file))
  const commit = git('rev-parse', '--short', ref).stdout.trim()
  return { label: 'baseline', commit, args: startArgs(dir), cwd: dir, dataDir }
}

/** Starts a build's service (SERVICE_ENV and `env` added); resolves once it answers, with the time that took. */
export async function startService (
  build: Build, port: number, env: Record<string, string> = {}
): Promise<{ child: ChildProcess, ms: number }> {
  const begun = performance.now()
  const child = spawn(process.execPath, build.args, {
    cwd: build.cwd,
    env: { ...process.env, ...SERVICE_ENV, ...env, DATA_DIR: build.dataDir, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'inherit']
  })
  const ms = (await waitForHttp(`http://127.0.0.1:${port}/`, child, 120_000)) - begun
  return { child, ms }
}

/** Stops a process and waits for it to exit. */
export async function stop (child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGTERM')
  await exited
}

/** The point `km` away from a point on an initial bearing (radians), on the 6,371 km sphere. */
function destination (lat: number, lng: number, bearing: number, km: number): { lat: number, lng: number } {
  const rad = Math.PI / 180
  const d = km / 6371
  const lat1 = lat * rad
  const lat2 = Math.asin(Math.sin(lat1) * Math.cos(d) + Math.cos(lat1) * Math.sin(d) * Math.cos(bearing))
  const lng2 = lng * rad + Math.atan2(Math.sin(bearing) * Math.sin(d) * Math.cos(lat1),
    Math.cos(d) - Math.sin(lat1) * Math.sin(lat2))
  const wrapped = ((lng2 / rad + 540) % 360) - 180
  return { lat: lat2 / rad, lng: wrapped }
}
