// Builds the real app on real fixture files in a temporary data directory.
import { spawnSync } from 'node:child_process'
import { chmodSync, closeSync, mkdtempSync, openSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import type { FastifyInstance } from 'fastify'
import { buildApp, type BuildOptions } from '../src/app.ts'
import { loadConfig, type Config } from '../src/config.ts'
import { datasetPath, writeDataset, type SiteRow } from '../src/sites/dataset-file.ts'
import { PartnerStore, controlPath, type NewPartner, type PartnerChanges } from '../src/partners/store.ts'
import { seededRandom } from '../src/sites/generator.ts'
import type { RateLimiter } from '../src/limits/limiter.ts'
import type { Limits } from '../src/partners/tiers.ts'

interface Teardown { teardown (fn: () => unknown): void }

export const REPO_ROOT = new URL('..', import.meta.url).pathname

/**
 * A log destination that keeps what is written, line by line (the access log writes the lines of
 * one event-loop turn at once) and write by write.
 */
export function logCapture () {
  const lines: string[] = []
  const writes: string[] = []
  const stream = new Writable({
    write (chunk, _enc, done) {
      const text = String(chunk)
      writes.push(text)
      for (const line of text.split('\n')) if (line !== '') lines.push(line + '\n')
      done()
    }
  })
  const clear = () => {
    lines.length = 0
    writes.length = 0
  }
  return { lines, writes, stream, clear }
}

/** One turn of the event loop: the access lines of the turns before it are written. */
/** Every string of a column (a dataset's ids, names...), in row order. */
export const columnValues = (column: { length: number, at (i: number): string }) =>
  Array.from({ length: column.length }, (_, i) => column.at(i))

export const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))

export function tmpDataDir (t: Teardown, prefix = 'lsp-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** Whether this process may write `path` (a directory: make a file in it). */
const mayWrite = (path: string) => {
  try {
    if (statSync(path).isDirectory()) {
      closeSync(openSync(join(path, '.probe'), 'wx'))
      rmSync(join(path, '.probe'))
    } else {
      closeSync(openSync(path, 'r+'))
    }
    return true
  } catch {
    return false
  }
}

/**
 * Makes the paths refuse this process's writes (a directory: new files in it), as a read-only
 * mount or another user's files would: chmod, or for root (whom chmod does not stop) the immutable
 * attribute. The undo, or why it cannot be done here.
 */
function refuseWrites (paths: string[]): (() => void) | string {
  const modes = paths.map((p) => statSync(p).mode & 0o7777)
  paths.forEach((p, i) => chmodSync(p, modes[i] & ~0o222))
  const chmodBack = () => paths.forEach((p, i) => chmodSync(p, modes[i]))
  if (!paths.some(mayWrite)) return chmodBack
  chmodBack()
  const r = spawnSync('chattr', ['+i', ...paths], { encoding: 'utf8' })
  if (r.status !== 0) return `chattr +i (CAP_LINUX_IMMUTABLE on a file system with the flag): ${r.stderr.trim()}`
  const chattrBack = () => { spawnSync('chattr', ['-i', ...paths]) }
  if (!paths.some(mayWrite)) return chattrBack
  chattrBack()
  return 'paths this process cannot write'
}

/**
 * The paths refuse this process's writes until test `t` ends (refuseWrites; cannotRefuseWrites says where it
 * cannot).
 */
export function writesRefused (t: Teardown, paths: string[]): void {
  const undo = refuseWrites(paths)
  if (typeof undo === 'string') throw new Error(undo)
  t.teardown(undo)
}

/** false where writes can be refused here (writesRefused), else why not (a test's skip). */
export function cannotRefuseWrites (t: Teardown): false | string {
  const undo = refuseWrites([tmpDataDir(t, 'lsp-ro-probe-')])
  if (typeof undo === 'string') return `needs ${undo}`
  undo()
  return false
}

export function testConfig (dataDir: string, env: Record<string, string> = {}): Config {
  return loadConfig(
    { NODE_ENV: 'test', DATA_DIR: dataDir, LOG_LEVEL: 'silent', PILOT_APP_URL: 'https://pilot.test', ...env },
    { envFile: false }
  )
}

export function site (
  id: string, category: number, latitude: number, longitude: number, tags: string[] = [], extra: Partial<SiteRow> = {}
): SiteRow {
  return { id, category, name: `Site ${id}`, region: 'EUR', country: 'GB', latitude, longitude, tags, ...extra }
}

/** Limit overrides that take the rate limiter out of tests about something else. */
export const UNLIMITED = { minute: 'unlimited', hour: 'unlimited', day: 'unlimited' } as const

export type PartnerFixture = NewPartner & { slug: string } & PartnerChanges

export interface TestApp {
  app: FastifyInstance
  dataDir: string
  config: Config
  tokens: Record<string, string>
}

export function writeFixture (
  dataDir: string, data: { sandbox?: SiteRow[], production?: SiteRow[], partners?: PartnerFixture[] }
) {
  writeDataset(datasetPath(dataDir, 'sandbox'), data.sandbox ?? [], { source: 'test fixture', precision: 3 })
  writeDataset(datasetPath(dataDir, 'production'), data.production ?? [], { source: 'test fixture', precision: 3 })
  const tokens: Record<string, string> = {}
  const store = new PartnerStore(controlPath(dataDir))
  try {
    for (const p of data.partners ?? []) {
      const { name, slug, tier, environment, status, ...changes } = p
      const { token } = store.create({ name, slug, tier, environment, status })
      if (Object.keys(changes).length > 0) store.update(slug, changes)
      tokens[slug] = token
    }
  } finally {
    store.close()
  }
  return tokens
}

export async function buildTestApp (
  t: Teardown,
  data: { sandbox?: SiteRow[], production?: SiteRow[], partners?: PartnerFixture[] },
  env: Record<string, string> = {},
  options: BuildOptions = {}
): Promise<TestApp> {
  const dataDir = tmpDataDir(t)
  const tokens = writeFixture(dataDir, data)
  const config = testConfig(dataDir, env)
  const app = await buildApp(config, options)
  t.teardown(() => app.close())
  return { app, dataDir, config, tokens }
}

const TAGS = ['~fuel', '~grass', '~night-landing', '~ppr']

/**
 * Random sites for property tests: spread worldwide, crowded at the antimeridian and the poles,
 * and with clusters of sites at identical coordinates so that ties by id are exercised.
 */
export function randomSites (seed: string, count: number, prefix = 'x'): SiteRow[] {
  const random = seededRandom(seed)
  const round = (v: number) => Math.round(v * 1000) / 1000
  const sites: SiteRow[] = []
  let n = 0
  const id = () => `${prefix}${(n++).toString(36).padStart(5, '0')}`
  while (sites.length < count) {
    const zone = random()
    let lat: number
    let lng: number
    if (zone < 0.25) { // antimeridian
      lat = random() * 140 - 70
      lng = random() < 0.5 ? 180 - random() * 3 : -180 + random() * 3
    } else if (zone < 0.45) { // poles
      lat = (random() < 0.5 ? 1 : -1) * (86 + random() * 4)
      lng = random() * 360 - 180
    } else if (zone < 0.8) { // a dense region
      lat = 50 + random() * 2
      lng = random() * 3
    } else {
      lat = random() * 180 - 90
      lng = random() * 360 - 180
    }
    const clusterSize = random() < 0.1 ? 2 + Math.floor(random() * 12) : 1
    const la = round(lat)
    const lo = round(lng)
    for (let k = 0; k < clusterSize && sites.length < count; k++) {
      const tags = TAGS.filter(() => random() < 0.3)
      sites.push(site(id(), 2 + Math.floor(random() * 9), la, lo, tags))
    }
  }
  return sites
}

/** The textbook haversine, in km, for brute-force checks. */
export function haversineKm (lat1: number, lng1: number, lat2: number, lng2: number): number {
  const rad = Math.PI / 180
  const sinDLat = Math.sin((lat1 - lat2) * rad / 2)
  const sinDLng = Math.sin((lng1 - lng2) * rad / 2)
  // cos(±90°) is 0: Math.cos(π/2) is not, π/2 not being a double
  const cos = (lat: number) => lat === 90 || lat === -90 ? 0 : Math.cos(lat * rad)
  const a = cos(lat1) * cos(lat2) * (sinDLng * sinDLng) + sinDLat * sinDLat
  return 2 * 6371 * Math.asin(Math.sqrt(a))
}

/** Brute force: every site, filtered, sorted by distance then id, cut at the limit. */
export function bruteNearby (
  sites: SiteRow[],
  q: { lat: number, lng: number, radiusKm: number, limit: number, categories: readonly number[], tag?: string }
) {
  return sites
    .filter((s) => q.categories.includes(s.category) && (q.tag === undefined || s.tags.includes(q.tag)))
    .map((s) => ({ site: s, km: haversineKm(q.lat, q.lng, s.latitude, s.longitude) }))
    .filter((x) => x.km <= q.radiusKm)
    .sort((a, b) => (a.km - b.km) || (a.site.id < b.site.id ? -1 : a.site.id > b.site.id ? 1 : 0))
    .slice(0, q.limit)
}

/** The reference sliding log of the limiter's model checks: would it admit a request now? */
function referenceAdmits (accepted: number[], limits: Limits, now: number): boolean {
  return (['minute', 'hour', 'day'] as const).every((w) => {
    const limit = limits[w]
    if (limit === null) return true
    const ms = { minute: 60_000, hour: 3_600_000, day: 86_400_000 }[w]
    return accepted.filter((ts) => ts > now - ms).length < limit
  })
}

/**
 * Random limits, waits and bursts against a reference sliding log: every answer of the limiter,
 * and every window's used / reset after each step, must be the reference's. `limiterAt` gives the
 * limiter for a step (several instances may take turns) with its clock at `now`. The first
 * disagreement, or undefined.
 */
export async function modelCheck (options: {
  seed: string, runs: number, steps: number,
  limiterAt (now: number, random: () => number): RateLimiter
}): Promise<string | undefined> {
  const random = seededRandom(options.seed)
  let now = Date.UTC(2026, 10, 21, 12)
  for (let run = 0; run < options.runs; run++) {
    const limits: Limits = {
      minute: random() < 0.2 ? null : 1 + Math.floor(random() * 8),
      hour: random() < 0.2 ? null : 5 + Math.floor(random() * 30),
      day: random() < 0.3 ? null : 20 + Math.floor(random() * 60)
    }
    const key = `model-${options.seed}-${run}`
    const reference: number[] = []
    for (let step = 0; step < options.steps; step++) {
      now += Math.floor(random() * random() * 600_000)
      const burst = 1 + Math.floor(random() * 3)
      for (let b = 0; b < burst; b++) {
        const expected = referenceAdmits(reference, limits, now)
        const r = await options.limiterAt(now, random).hit(key, limits)
        if (r.allowed !== expected) {
          return `run ${run} step ${step}: ${r.allowed ? 'admitted' : 'refused'}, ` +
            `the reference ${expected ? 'admits' : 'refuses'} (${JSON.stringify(limits)})`
        }
        if (r.allowed) reference.push(now)
      }
      const { windows } = await options.limiterAt(now, random).state(key, limits)
      for (const w of windows) {
        const inWindow = reference.filter((ts) => ts > now - w.seconds * 1000)
        if (w.used !== inWindow.length) {
          return `run ${run} step ${step}: ${w.name} used ${w.used}, reference ${inWindow.length}`
        }
        if (w.limit !== null && w.used > w.limit) {
          return `run ${run} step ${step}: the ${w.name} window admitted more than its limit`
        }
        const resets = inWindow.length === 0 ? 0 : inWindow[0] + w.seconds * 1000 - now
        if (w.limit !== null && w.resetsInMs !== resets) {
          return `run ${run} step ${step}: ${w.name} resets in ${w.resetsInMs} ms, reference ${resets}`
        }
      }
    }
  }
  return undefined
}

/** The reason given for a malformed tag, as a partner reads it. */
export const TAG_ERROR = 'tag must be ~ then lowercase letters, digits and hyphens, at most 64 characters in all ' +
  '(e.g. ~helipad); GET /v1/tags lists them'

/**
 * An instance of the app sharing state through Redis at `stateUrl`, with a sandbox of one site near
 * London (the partners live in Redis).
 */
export async function sharedInstance (t: Teardown, stateUrl: string, options: BuildOptions = {}) {
  const dir = tmpDataDir(t)
  writeFixture(dir, { sandbox: [site('s-1', 4, 51.5, -0.12)] })
  const app = await buildApp(testConfig(dir, { STATE_URL: stateUrl }), options)
  t.teardown(() => app.close())
  return app
}

/** Partners' requests (by slug) to in-process apps: `/sites` near London, and a window of their `/usage`. */
export function partnerCalls (tokens: Record<string, string>) {
  const headers = (slug: string) => ({ authorization: `Bearer ${tokens[slug]}` })
  const get = (app: FastifyInstance, slug: string) =>
    app.inject({ method: 'GET', url: '/v1/sites?lat=51.5&lng=-0.12', headers: headers(slug) })
  /** The statuses of n requests, one after another */
  const statuses = async (app: FastifyInstance, slug: string, n: number) => {
    const out: number[] = []
    for (let i = 0; i < n; i++) out.push((await get(app, slug)).statusCode)
    return out
  }
  /** [200s, 429s] */
  const tally = (list: number[]) => [list.filter((s) => s === 200).length, list.filter((s) => s === 429).length]
  const window = async (app: FastifyInstance, slug: string, name: 'minute' | 'hour' | 'day') => {
    const w = JSON.parse((await app.inject({ method: 'GET', url: '/v1/usage', headers: headers(slug) })).body)
      .windows[name]
    return { limit: w.limit as number | null, used: w.used as number, remaining: w.remaining as number | null }
  }
  return { get, statuses, tally, window }
}
