// Three rolling windows per partner, exact: in no interval of a window's length are more
// requests accepted than its limit. Time comes from an injected clock, the counts from a store
// (LocalStore here, or the shared one: failover-store.ts).
import { WINDOWS, WINDOW_SECONDS, type Limits, type WindowName } from '../partners/tiers.ts'
import { AcceptLog, DAY_MS, MAX_LOG_ENTRIES } from './accept-log.ts'

export interface WindowSpec {
  name: WindowName
  seconds: number
  /** null: unlimited */
  limit: number | null
}

export interface WindowState extends WindowSpec {
  used: number
  /** null when unlimited */
  remaining: number | null
  /** records answered by the requests in the window (only /usage asks for them, else 0) */
  rows: number
  /** ms until the oldest request in the window leaves it (0 when it is empty); null when unlimited */
  resetsInMs: number | null
}

export interface HitResult {
  allowed: boolean
  /** the accepted request's entry, for its rows */
  seq?: number
  /** when the shared store logged the accepted request (not earlier than its log's newest entry) */
  time?: number
  windows: WindowState[]
  refusedBy?: WindowName
  /** ms until a request would be accepted by every window; when unavailable, until it is worth asking again */
  retryAfterMs?: number
  /** Refused since nothing is known of a limited window (Redis away): no window is full, `windows` describe none. */
  unavailable?: true
}

export interface SecondBucket { second: number, requests: number, rows: number }

/**
 * Where the counts live. `hit` checks every window and, if all admit it, records the request, atomically.
 * A store is synchronous or not by its kind, never per call: the partner routes choose their hook once.
 */
type LimiterStore = LocalStore | AsyncLimiterStore

export interface AsyncLimiterStore {
  readonly synchronous: false
  hit (key: string, windows: WindowSpec[], now: number): Promise<HitResult>
  setRows (key: string, seq: number, rows: number): Promise<void>
  state (key: string, windows: WindowSpec[], now: number): Promise<WindowState[]>
}

/** The windows of a partner's limits (the partner routes take them from its profile, made at load). */
export function windowSpecs (limits: Limits): WindowSpec[] {
  return WINDOWS.map((name) => ({ name, seconds: WINDOW_SECONDS[name], limit: limits[name] }))
}

/** Entries a log needs under these limits: a limit L per W seconds admits at most L * ceil(day / W) a day. */
export function logCapacity (windows: WindowSpec[]): number {
  let bound = MAX_LOG_ENTRIES
  for (const w of windows) {
    if (w.limit === null) continue
    bound = Math.min(bound, Math.max(1, w.limit) * Math.ceil(86_400 / w.seconds))
  }
  return bound
}

/** A window's figures from its count and the time of its oldest request (unread when the count is 0). */
export function stateOf (spec: WindowSpec, used: number, oldest: number, rows: number, now: number): WindowState {
  // literal objects, not a spread: this runs for every window of every request
  const { name, seconds, limit } = spec
  if (limit === null) return { name, seconds, limit, used, remaining: null, rows, resetsInMs: null }
  const resetsInMs = used > 0 ? oldest + seconds * 1000 - now : 0
  return { name, seconds, limit, used, remaining: Math.max(0, limit - used), rows, resetsInMs }
}

/** A window's figures in a log; `rows` costs a pass over the window, so only /usage asks for it. */
function windowState (log: AcceptLog | undefined, spec: WindowSpec, now: number, withRows = false): WindowState {
  if (!log || log.size === 0) return stateOf(spec, 0, 0, 0, now)
  const windowMs = spec.seconds * 1000
  const from = log.windowStart(windowMs, now - windowMs)
  let rows = 0
  if (withRows) for (let i = from; i < log.size; i++) rows += log.rowsAt(i)
  return stateOf(spec, log.size - from, from < log.size ? log.at(from) : 0, rows, now)
}

/** In-process store: one AcceptLog per key. Single-threaded, so each hit is atomic. */
export class LocalStore {
  readonly synchronous = true
  readonly logs = new Map<string, AcceptLog>()
  /** Keys changed since the last save, each with the time of its earliest entry changed (accepted, or given rows). */
  private readonly dirty = new Map<string, number>()

  markDirty (key: string, time: number) {
    const since = this.dirty.get(key)
    if (since === undefined || time < since) this.dirty.set(key, time)
  }

  hit (key: string, windows: WindowSpec[], now: number): HitResult {
    let log = this.logs.get(key)
    const capacity = logCapacity(windows)
    if (log && log.capacity !== capacity) log.resize(capacity)
    // a clock stepped back: logged at the newest entry's time (the log stays in order), but checked
    // at `now`, the entries ahead counted, so that waits are on the clock the client waits by
    const time = log && now < log.newest ? log.newest : now
    let refusedBy: WindowName | undefined
    let retryAfterMs = 0
    for (const w of windows) {
      if (w.limit === null) continue
      const windowMs = w.seconds * 1000
      let wait = 0
      if (w.limit === 0) wait = windowMs
      else if (log && log.size >= w.limit) {
        const lth = log.recent(w.limit)
        if (lth > now - windowMs) wait = lth + windowMs - now
      }
      if (wait > retryAfterMs) {
        retryAfterMs = wait
        refusedBy = w.name
      }
    }
    if (refusedBy !== undefined) {
      return { allowed: false, refusedBy, retryAfterMs, windows: windows.map((w) => windowState(log, w, now)) }
    }
    if (!log) this.logs.set(key, log = new AcceptLog(capacity))
    log.dropUntil(now - DAY_MS)
    const seq = log.push(time)
    this.markDirty(key, time)
    return { allowed: true, seq, windows: windows.map((w) => windowState(log, w, now)) }
  }

  setRows (key: string, seq: number, rows: number) {
    const log = this.logs.get(key)
    if (!log) return
    const time = log.setRows(seq, rows)
    if (time !== undefined) this.markDirty(key, time)
  }

  state (key: string, windows: WindowSpec[], now: number): WindowState[] {
    const log = this.logs.get(key)
    return windows.map((w) => windowState(log, w, now, true))
  }

  /**
   * For saving: per key changed since the last call, its requests and rows per second from `sinceMs`
   * on, or from the second of its earliest entry changed if that is earlier. Marks the keys clean.
   */
  takeDirty (sinceMs: number): { key: string, buckets: SecondBucket[] }[] {
    const out: { key: string, buckets: SecondBucket[] }[] = []
    for (const [key, changed] of this.dirty) {
      const log = this.logs.get(key)
      if (!log) continue
      const buckets: SecondBucket[] = []
      const from = Math.min(sinceMs, Math.floor(changed / 1000) * 1000) // a whole second: each bucket is saved whole
      for (let i = log.firstAfter(from - 1); i < log.size; i++) {
        const second = Math.floor(log.at(i) / 1000)
        const last = buckets[buckets.length - 1]
        if (last && last.second === second) {
          last.requests++
          last.rows += log.rowsAt(i)
        } else {
          buckets.push({ second, requests: 1, rows: log.rowsAt(i) })
        }
      }
      out.push({ key, buckets })
    }
    this.dirty.clear()
    return out
  }

  /**
   * A partner's log from saved per-second buckets. Each request is put at the end of its second: it
   * stays in every window as long as it could, so a restart never admits more than the exact log would.
   */
  restore (key: string, buckets: SecondBucket[], now: number) {
    const log = new AcceptLog(MAX_LOG_ENTRIES, 16) // resized to the partner's limits at its next hit
    for (const { second, requests, rows } of buckets.sort((a, b) => a.second - b.second)) {
      const time = second * 1000 + 999
      if (time <= now - DAY_MS) continue
      for (let r = 0; r < requests; r++) log.push(time, r === 0 ? rows : 0)
    }
    this.logs.set(key, log)
  }
}

export class RateLimiter {
  constructor (readonly store: LimiterStore, readonly clock: () => number = Date.now) {}

  /** Checks and records a request now, with either kind of store (the partner routes call the store by its kind). */
  async hit (key: string, limits: Limits): Promise<HitResult & { now: number }> {
    const now = this.clock()
    return Object.assign(await this.store.hit(key, windowSpecs(limits), now), { now })
  }

  async setRows (key: string, seq: number, rows: number): Promise<void> {
    await this.store.setRows(key, seq, rows)
  }

  async state (key: string, limits: Limits): Promise<{ now: number, windows: WindowState[] }> {
    const now = this.clock()
    return { now, windows: await this.store.state(key, windowSpecs(limits), now) }
  }
}

/**
 * The limited window with the least remaining (the first such); of windows all spent, the one
 * that frees up last: a request is accepted only once every spent window has room.
 */
function tightestWindow (windows: WindowState[]): WindowState | undefined {
  let tightest: WindowState | undefined
  for (const w of windows) {
    if (w.remaining === null) continue
    if (!tightest || w.remaining < tightest.remaining!) tightest = w
    else if (w.remaining === 0 && tightest.remaining === 0 && w.resetsInMs! > tightest.resetsInMs!) tightest = w
  }
  return tightest
}

/** The RateLimit-Policy field of these windows; '' when none is limited (made once per partner profile). */
export function ratelimitPolicy (windows: WindowSpec[]): string {
  return windows.filter((w) => w.limit !== null).map((w) => `"${w.name}";q=${w.limit};w=${w.seconds}`).join(', ')
}

/**
 * IETF RateLimit fields (draft-10) and the GitHub-style X-RateLimit-* fields. `refusal`: a 429's window
 * and wait, which its fields describe (a window over a lowered limit frees up later than its oldest leaves).
 */
export function rateLimitHeaders (
  windows: WindowState[],
  now: number,
  policy = ratelimitPolicy(windows),
  refusal?: { window: WindowName, retryAfterMs: number }
): Record<string, string> {
  if (policy === '') return {}
  const refused = refusal && windows.find((w) => w.name === refusal.window)
  const t = refused ?? tightestWindow(windows)!
  const freesInMs = refused ? refusal!.retryAfterMs : t.resetsInMs!
  const resetSeconds = refused ? retryAfterSeconds(freesInMs) : Math.max(0, Math.ceil(freesInMs / 1000))
  return {
    'ratelimit-policy': policy,
    ratelimit: `"${t.name}";r=${t.remaining};t=${resetSeconds}`,
    'x-ratelimit-limit': String(t.limit),
    'x-ratelimit-remaining': String(t.remaining),
    'x-ratelimit-used': String(t.used),
    'x-ratelimit-reset': String(Math.ceil((now + freesInMs) / 1000))
  }
}

/** Retry-After in whole seconds, at least 1: a request sent that much later is accepted. */
export const retryAfterSeconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000))
