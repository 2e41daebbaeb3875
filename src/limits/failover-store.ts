// The shared limiter store with a way down: Redis while it answers, and limiting alone while it
// does not. Requests keep being answered either way (no 5xx): when a Redis command fails or times
// out, the instance limits alone, says so once in the log and in /readyz, and probes Redis every
// second. Alone, no window over-admits: the instance counts what Redis last told it was accepted
// for the partner and admits at most its share of what is left (AloneWindows). When Redis is back,
// it puts back what Redis lost (restarted empty) and adds the requests it accepted alone, then
// uses Redis again, leaving room for the instances that have not done so yet.
// It also keeps this instance's heartbeat in Redis, which is how instances count each other.
import { randomUUID } from 'node:crypto'
import type { Redis } from 'ioredis'
import { INSTANCE_STALE_MS } from '../instances/instances.ts'
import { AcceptLog } from './accept-log.ts'
import { logCapacity, type AsyncLimiterStore, type HitResult, type WindowSpec, type WindowState } from './limiter.ts'
import type { Accepted, Answer, RedisStore } from './redis-store.ts'

/** Where the way down says what happened (the app's logger). */
interface StoreLog {
  info (obj: object | string, msg?: string): void
  warn (obj: object | string, msg?: string): void
  error (obj: object | string, msg?: string): void
}

const PROBE_MS = 1_000
const DAY_MS = 86_400_000
/** partners put back or merged at once on the way back */
const REJOIN_BATCH = 100

export interface SharedStateStatus {
  backend: 'redis'
  connected: boolean
  /** ISO time since when this instance limits alone, or null */
  degraded_since: string | null
  error: string | null
  /** instances sharing the state, as last seen */
  instances: number
}

type Limited = WindowSpec & { limit: number }

/**
 * One partner's windows on this instance while Redis is away. What Redis had accepted is known
 * from its last answer about the partner, as a count per window at a time; each of those requests
 * is taken to be as recent as it can be (one in the hour's count but not the minute's was
 * accepted at least a minute before), so it stays in every window at least as long as it did.
 * The instance admits a request while its own, counted once for every instance (each may do as
 * it does), fit in what is left: its own stay within its share of what is left, rounded down.
 * No answer in the last day: nothing is known, so every limited window counts as full for a
 * window's length.
 */
class AloneWindows {
  /** the requests this instance accepted alone */
  readonly log: AcceptLog
  /** the requests known to be in Redis's log: counts[k] of them at times[k], newest first */
  private readonly times: number[] = []
  private readonly counts: number[] = []
  private readonly unknownSince: number | null = null
  /** entries of the log from this sequence number on are not in Redis yet */
  mergedSeq = 0

  constructor (known: Answer | undefined, now: number, public windows: WindowSpec[]) {
    this.log = new AcceptLog(logCapacity(windows))
    if (!known || known.at <= now - DAY_MS) {
      this.unknownSince = now
      return
    }
    let counted = 0
    let time = known.at
    for (const w of known.windows) {
      if (w.used > counted) {
        this.times.push(time)
        this.counts.push(w.used - counted)
        counted = w.used
      }
      time = known.at - w.seconds * 1000
    }
  }

  /** Known requests still in the window that ends at `now`. */
  private known (windowMs: number, now: number): number {
    let n = 0
    for (let k = 0; k < this.times.length; k++) if (this.times[k] > now - windowMs) n += this.counts[k]
    return n
  }

  /** This instance's share of what is left in a window at `now`, its own requests not taken off. */
  private share (w: Limited, now: number, instances: number): number {
    const windowMs = w.seconds * 1000
    if (this.unknownSince !== null && this.unknownSince > now - windowMs) return 0
    return Math.max(0, Math.floor((w.limit - this.known(windowMs, now)) / instances))
  }

  private own (windowMs: number, now: number): number {
    return this.log.size - this.log.windowStart(windowMs, now - windowMs)
  }

  /** Times after `now` at which known requests leave the window (what is left grows), soonest first. */
  private leaving (windowMs: number, now: number): number[] {
    const out: number[] = []
    if (this.unknownSince !== null && this.unknownSince + windowMs > now) out.push(this.unknownSince + windowMs)
    for (let k = this.times.length - 1; k >= 0; k--) {
      if (this.times[k] + windowMs > now) out.push(this.times[k] + windowMs)
    }
    return out
  }

  /** Whether a window admits a request now; if not, the ms until it would (none coming in between). */
  waitMs (w: Limited, now: number, instances: number): number {
    const windowMs = w.seconds * 1000
    if (this.own(windowMs, now) < this.share(w, now, instances)) return 0
    // between two departures of known requests the share stays the same: in each such stretch,
    // the first moment the own requests in the window are fewer than it
    const leaving = this.leaving(windowMs, now)
    let start = now
    for (let p = 0; p <= leaving.length; p++) {
      const end = p < leaving.length ? leaving[p] : Infinity
      const share = this.share(w, start, instances)
      if (share >= 1) {
        const free = this.log.size >= share ? Math.max(start, this.log.recent(share) + windowMs) : start
        if (free < end) return free - now
      }
      start = end
    }
    return windowMs // a share of 0 (a limit below the instance count): nothing until Redis is back
  }

  /**
   * A window as this instance enforces it: limit its share of the limit, remaining what it may
   * still admit, used the rest (its share of what is known to be used, and its own requests).
   */
  state (w: WindowSpec, now: number, instances: number, withRows: boolean): WindowState {
    const { name, seconds, limit } = w
    const windowMs = seconds * 1000
    const from = this.log.windowStart(windowMs, now - windowMs)
    const own = this.log.size - from
    let rows = 0
    if (withRows) for (let i = from; i < this.log.size; i++) rows += this.log.rowsAt(i)
    if (limit === null) {
      return { name, seconds, limit, used: own + this.known(windowMs, now), remaining: null, rows, resetsInMs: null }
    }
    const remaining = Math.max(0, this.share(w as Limited, now, instances) - own)
    const next = Math.min(own > 0 ? this.log.at(from) + windowMs : Infinity, this.leaving(windowMs, now)[0] ?? Infinity)
    const shareOfLimit = Math.floor(limit / instances)
    const resetsInMs = next === Infinity ? 0 : next - now
    return { name, seconds, limit: shareOfLimit, used: shareOfLimit - remaining, remaining, rows, resetsInMs }
  }

  /** The requests accepted alone and not yet in Redis (time and rows of each), and where they end. */
  unmerged (): { accepted: Accepted[], upTo: number } {
    const accepted: Accepted[] = []
    const first = this.log.nextSeq - this.log.size
    for (let i = Math.max(0, this.mergedSeq - first); i < this.log.size; i++) {
      accepted.push({ time: this.log.at(i), rows: this.log.rowsAt(i) })
    }
    return { accepted, upTo: this.log.nextSeq }
  }
}

export interface FailoverOptions {
  prefix?: string
  /** the limiter's clock, for the answers recorded on the way back */
  clock?: () => number
  /** how often the heartbeat (or, while degraded, the probe) runs; 0: only when tick() is called */
  probeMs?: number
}

export class FailoverStore implements AsyncLimiterStore {
  readonly synchronous = false
  /** per partner, its windows while limiting alone */
  readonly alone = new Map<string, AloneWindows>()
  private degradedSince: number | null = null
  private error: string | null = null
  private share = 1
  /** the other instances, as last seen */
  private peers: string[] = []
  /** after an outage: the instances not yet back (heartbeat since `backAt`), whose share is kept free */
  private awaiting: Set<string> | null = null
  private backAt = 0
  /** how many of those, and the instances counted while alone (each had 1/that of each limit) */
  private reserve = 0
  private shareAlone = 1
  private readonly reserved = new WeakMap<WindowSpec[], { reserve: number, share: number, windows: WindowSpec[] }>()
  /** the random value Redis held under the epoch key: another one is a Redis that lost its data */
  private epoch: string | null = null
  /** Redis lost its data: what this instance knew is still to be put back */
  private restoring = false
  private readonly timer: NodeJS.Timeout | undefined
  private recovering = false
  private readonly prefix: string
  private readonly clock: () => number
  private readonly reconnected = () => {
    // no command may have failed (a Redis restarted within a probe, no request meanwhile): until the
    // probe has checked what it kept, limit alone, since a Redis restarted empty would give every
    // partner a fresh window
    if (this.degradedSince === null) this.degrade(new Error('the connection to Redis was lost and made again'))
  }

  constructor (
    private readonly redis: Redis,
    private readonly remote: RedisStore,
    private readonly instanceId: string,
    private readonly log: StoreLog,
    options: FailoverOptions = {}
  ) {
    this.prefix = options.prefix ?? 'lsp:'
    this.clock = options.clock ?? Date.now
    redis.on('ready', this.reconnected)
    const probeMs = options.probeMs ?? PROBE_MS
    if (probeMs > 0) {
      this.timer = setInterval(() => { this.tick().catch(() => {}) }, probeMs)
      this.timer.unref()
    }
  }

  get degraded (): boolean {
    return this.degradedSince !== null
  }

  /** Back from an outage, with room still kept for instances that have not added what they accepted alone. */
  get rejoining (): boolean {
    return this.reserve > 0
  }

  status (): SharedStateStatus {
    return {
      backend: 'redis',
      connected: this.degradedSince === null,
      degraded_since: this.degradedSince === null ? null : new Date(this.degradedSince).toISOString(),
      error: this.error,
      instances: this.share
    }
  }

  private windowsAlone (key: string, windows: WindowSpec[], now: number): AloneWindows {
    let alone = this.alone.get(key)
    if (!alone) this.alone.set(key, alone = new AloneWindows(this.remote.answers.get(key), now, windows))
    alone.windows = windows
    return alone
  }

  private hitAlone (key: string, windows: WindowSpec[], now: number): HitResult {
    const alone = this.windowsAlone(key, windows, now)
    const log = alone.log
    // the clock stepped back: logged at the newest entry's time (the log stays in order), but
    // checked at now, entries ahead of it counted, so that waits are on the clock clients wait by
    const time = now < log.newest ? log.newest : now
    let refusedBy: WindowSpec['name'] | undefined
    let retryAfterMs = 0
    for (const w of windows) {
      if (w.limit === null) continue
      const wait = alone.waitMs(w as Limited, now, this.share)
      if (wait > retryAfterMs) {
        retryAfterMs = wait
        refusedBy = w.name
      }
    }
    const states = () => windows.map((w) => alone.state(w, now, this.share, false))
    if (refusedBy !== undefined) return { allowed: false, refusedBy, retryAfterMs, windows: states() }
    log.dropUntil(now - DAY_MS)
    const seq = log.push(time)
    // negative: an entry of the log kept alone
    return { allowed: true, seq: -1 - seq, windows: states() }
  }

  private stateAlone (key: string, windows: WindowSpec[], now: number): WindowState[] {
    const alone = this.windowsAlone(key, windows, now)
    return windows.map((w) => alone.state(w, now, this.share, true))
  }

  /** Just back from an outage: each limit less the shares of the instances not back yet. */
  private withReserve (windows: WindowSpec[]): WindowSpec[] {
    const known = this.reserved.get(windows)
    if (known && known.reserve === this.reserve && known.share === this.shareAlone) return known.windows
    const { reserve, shareAlone: share } = this
    const less = (limit: number | null) =>
      limit === null ? null : Math.max(0, limit - reserve * Math.floor(limit / share))
    const made = windows.map((w) => ({ ...w, limit: less(w.limit) }))
    this.reserved.set(windows, { reserve, share, windows: made })
    return made
  }

  // a promise even while alone: the partner routes take this store's answers as promises, always
  hit (key: string, windows: WindowSpec[], now: number): Promise<HitResult> {
    if (this.degradedSince !== null) return Promise.resolve(this.hitAlone(key, windows, now))
    return this.remote.hit(key, this.reserve > 0 ? this.withReserve(windows) : windows, now).catch((err: unknown) => {
      this.degrade(err)
      return this.hitAlone(key, windows, now)
    })
  }

  setRows (key: string, seq: number, rows: number): Promise<void> {
    if (seq < 0) {
      this.alone.get(key)?.log.setRows(-1 - seq, rows)
      return Promise.resolve()
    }
    return this.remote.setRows(key, seq, rows).catch((err: unknown) => this.degrade(err))
  }

  state (key: string, windows: WindowSpec[], now: number): Promise<WindowState[]> {
    if (this.degradedSince !== null) return Promise.resolve(this.stateAlone(key, windows, now))
    return this.remote.state(key, windows, now).catch((err: unknown) => {
      this.degrade(err)
      return this.stateAlone(key, windows, now)
    })
  }

  private degrade (err: unknown) {
    this.error = err instanceof Error ? err.message : String(err)
    if (this.degradedSince !== null) return
    this.degradedSince = Date.now()
    this.log.error({ error: this.error, share: this.share },
      `shared state (Redis) unavailable: limiting alone with 1/${this.share} of what is left of each limit; ` +
      'requests are served on')
  }

  /**
   * Every second: the heartbeat and the instances, or, while degraded, a probe and the way back
   * (the heartbeat follows it: an instance seen again has added what it accepted alone).
   * Called by the timer; tests may call it to step.
   */
  async tick () {
    if (this.degradedSince !== null) {
      if (this.recovering) return
      try {
        await this.redis.ping()
      } catch (err) {
        this.error = err instanceof Error ? err.message : String(err)
        return
      }
      await this.recover()
      if (this.degradedSince !== null) return
    }
    const now = Date.now()
    const instances = `${this.prefix}instances`
    const epochKey = `${this.prefix}epoch`
    let members: string[]
    try {
      const replies = await this.redis.multi()
        .zadd(instances, now, this.instanceId)
        .zremrangebyscore(instances, '-inf', now - INSTANCE_STALE_MS)
        .zrange(instances, 0, -1, 'WITHSCORES')
        .set(epochKey, randomUUID(), 'NX')
        .get(epochKey)
        .time()
        .exec() as [Error | null, unknown][]
      const [seconds, micros] = replies[5][1] as [string, string]
      const redisNow = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000)
      this.remote.clockOffsetMs = redisNow - Math.round((now + Date.now()) / 2)
      members = replies[2][1] as string[]
      const epoch = replies[4][1] as string
      if (this.epoch !== null && epoch !== this.epoch && this.degradedSince === null) {
        // Redis lost its data with no command failing here: the way back puts back what it lost
        this.degrade(new Error('the shared state lost its data'))
        return
      }
      this.epoch = epoch
    } catch (err) {
      if (this.degradedSince === null) this.degrade(err)
      return
    }
    const peers: string[] = []
    for (let i = 0; i < members.length; i += 2) {
      if (members[i] === this.instanceId) continue
      peers.push(members[i])
      if (Number(members[i + 1]) >= this.backAt) this.awaiting?.delete(members[i])
    }
    this.peers = peers
    // an instance silent this long is not counted any more (and did not come back)
    if (this.awaiting && (this.awaiting.size === 0 || now - this.backAt >= INSTANCE_STALE_MS)) this.awaiting = null
    this.reserve = this.awaiting?.size ?? 0
    // those not back yet count, though a Redis restarted empty has no heartbeat of theirs
    let missing = 0
    for (const id of this.awaiting ?? []) if (!peers.includes(id)) missing++
    this.share = peers.length + 1 + missing
  }

  /**
   * Redis answers again. If it lost its data (restarted empty: the epoch key is gone), what this
   * instance knew was in each partner's log is put back where nobody did so first; the requests
   * accepted alone are added; then Redis is used again, with room kept for the instances that
   * have not added theirs yet.
   */
  private async recover () {
    this.recovering = true
    const backAt = Date.now()
    try {
      const epochKey = `${this.prefix}epoch`
      const replies = await this.redis.multi()
        .set(epochKey, randomUUID(), 'NX')
        .get(epochKey)
        .exec() as [Error | null, unknown][]
      const epoch = replies[1][1] as string
      if (epoch !== this.epoch) this.restoring = true // kept until done: a failed attempt is tried again
      this.epoch = epoch
      const now = this.clock()
      const putBack = new Set<string>()
      if (this.restoring) {
        for (const [key, answer] of this.remote.answers) if (answer.at > now - DAY_MS) putBack.add(key)
      }
      // passes until one finds nothing new: requests keep arriving (and are limited alone) while
      // they await Redis; after the last pass the switch happens with no await in between
      let merged = 0
      for (let pending = true; pending;) {
        const work: (() => Promise<void>)[] = []
        for (const key of new Set([...putBack, ...this.alone.keys()])) {
          const alone = this.alone.get(key)
          const { accepted, upTo } = alone ? alone.unmerged() : { accepted: [], upTo: 0 }
          const known = putBack.has(key) ? this.remote.answers.get(key) : undefined
          if (!known && accepted.length === 0) continue
          const seconds = (known ? known.windows : alone!.windows).map((w) => w.seconds)
          work.push(() => this.remote.rejoin(key, seconds, known, accepted, now).then(() => {
            putBack.delete(key)
            if (alone) alone.mergedSeq = upTo
            merged += accepted.length
          }))
        }
        pending = work.length > 0
        // a batch at a time: every script must reach Redis within the command timeout
        for (let i = 0; i < work.length; i += REJOIN_BATCH) {
          await Promise.all(work.slice(i, i + REJOIN_BATCH).map((job) => job()))
        }
      }
      this.alone.clear()
      const lost = this.restoring
      this.restoring = false
      const since = this.degradedSince
      this.degradedSince = null
      this.error = null
      this.awaiting = new Set(this.peers)
      this.backAt = backAt
      this.reserve = this.awaiting.size
      this.shareAlone = this.share
      this.log.info({ merged, lost, degraded_ms: since === null ? 0 : Date.now() - since },
        'shared state (Redis) available again: the requests accepted alone were added to it')
    } catch (err) {
      this.error = err instanceof Error ? err.message : String(err)
    } finally {
      this.recovering = false
    }
  }

  async close () {
    if (this.timer) clearInterval(this.timer)
    this.redis.off('ready', this.reconnected)
    try {
      await this.redis.zrem(`${this.prefix}instances`, this.instanceId)
    } catch { /* Redis away: the heartbeat goes stale on its own */ }
  }
}
