// The shared limiter store with a way down: Redis while it answers, limiting alone (AloneWindows) while
// a command fails or times out, said once in the log and in /readyz. Its accepted requests keep their
// names in Redis's log (OwnRequests): when Redis is back, it adds those accepted alone, or, if Redis lost
// its data, puts back all of them and waits for the other instances to do the same (docs/scaling.md).
import { randomUUID } from 'node:crypto'
import { ReplyError, type Redis } from 'ioredis'
import { INSTANCE_STALE_MS, instancesKey } from '../instances/instances.ts'
import { WINDOWS, WINDOW_SECONDS } from '../partners/tiers.ts'
import { AcceptLog, DAY_MS } from './accept-log.ts'
import {
  logCapacity, stateOf, type AsyncLimiterStore, type HitResult, type WindowSpec, type WindowState
} from './limiter.ts'
import { OwnRequests } from './own-requests.ts'
import type { Answer, RedisStore } from './redis-store.ts'
import type { Log } from '../log.ts'

const PROBE_MS = 1_000
/** partners put back or merged at once on the way back */
const REJOIN_BATCH = 100
const SECONDS = WINDOWS.map((w) => WINDOW_SECONDS[w])
/** A partner whose windows cannot be known is told to ask again after this: a few probes of Redis later. */
const UNAVAILABLE_RETRY_MS = 5_000

type Limited = WindowSpec & { limit: number }

/**
 * One partner's windows on this instance while Redis is away. Each request of Redis's last answer is
 * taken to be as recent as it can be (one in the hour's count but not the minute's is a minute old), so
 * it stays in every window as long as it did. The instance admits while its own requests stay within its
 * share of what is left, rounded down (every instance may do the same). With no answer in the last day, a
 * limited window is unknown for its length: another instance may have used it all.
 */
class AloneWindows {
  /** this instance's requests counted since the answer */
  readonly log: AcceptLog
  /** the requests whose scripts were unanswered when this started: counted at once, in log */
  readonly placeholders: Set<number>
  /** the requests known to be in Redis's log: counts[k] of them at times[k], newest first */
  private readonly times: number[] = []
  private readonly counts: number[] = []
  /** since when nothing is known of the partner (-Infinity: an answer is) */
  private unknownSince: number

  constructor (now: number, windows: WindowSpec[], pending: Iterable<number>) {
    this.log = new AcceptLog(logCapacity(windows))
    this.placeholders = new Set(pending)
    for (let i = 0; i < this.placeholders.size; i++) this.log.push(now)
    this.unknownSince = now
  }

  /** Takes Redis's answer, if there is one, as what is known (read while nothing was). */
  know (known: Answer | undefined) {
    if (!known) return
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
    this.unknownSince = -Infinity
  }

  get knowsNothing (): boolean {
    return this.unknownSince > -Infinity
  }

  /** Whether a window cannot be decided alone: nothing known within its length, or a share of its limit under one. */
  unknown (w: Limited, now: number, instances: number): boolean {
    return this.unknownSince > now - w.seconds * 1000 || w.limit < instances // a share: floor(limit / instances) < 1
  }

  /** This instance's share of what is left in a window at `now`, its own requests not taken off. */
  private share (w: Limited, now: number, instances: number): number {
    const windowMs = w.seconds * 1000
    if (this.unknownSince > now - windowMs) return 0
    return Math.max(0, Math.floor((w.limit - this.known(windowMs, now)) / instances))
  }

  /** Known requests still in the window that ends at `now`. */
  private known (windowMs: number, now: number): number {
    let n = 0
    for (let k = 0; k < this.times.length; k++) if (this.times[k] > now - windowMs) n += this.counts[k]
    return n
  }

  /** Times after `now` at which known requests leave the window (what is left grows), soonest first. */
  private leaving (windowMs: number, now: number): number[] {
    const out: number[] = []
    if (this.unknownSince + windowMs > now) out.push(this.unknownSince + windowMs)
    for (let k = this.times.length - 1; k >= 0; k--) {
      if (this.times[k] + windowMs > now) out.push(this.times[k] + windowMs)
    }
    return out
  }

  /**
   * The ms until a window (not unknown) admits a request, 0: now. Between two departures of known requests the share
   * stays the same: in each such stretch, the first moment the own requests in the window are fewer than it.
   */
  waitMs (w: Limited, now: number, instances: number): number {
    const windowMs = w.seconds * 1000
    if (this.log.size - this.log.windowStart(windowMs, now - windowMs) < this.share(w, now, instances)) return 0
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
    return windowMs // not reached: a window whose share of the limit is under one is unknown
  }

  /**
   * A window as this instance enforces it: limit its share of the limit, remaining what it may still
   * admit, used the rest; `rows` those of its own requests in the window.
   */
  state (w: WindowSpec, now: number, instances: number, rows: number): WindowState {
    const { name, seconds, limit } = w
    const windowMs = seconds * 1000
    const from = this.log.windowStart(windowMs, now - windowMs)
    const own = this.log.size - from
    if (limit === null) return stateOf(w, own + this.known(windowMs, now), 0, rows, now)
    const remaining = Math.max(0, this.share(w as Limited, now, instances) - own)
    const next = Math.min(own > 0 ? this.log.at(from) + windowMs : Infinity, this.leaving(windowMs, now)[0] ?? Infinity)
    const shareOfLimit = Math.floor(limit / instances)
    const resetsInMs = next === Infinity ? 0 : next - now
    return { name, seconds, limit: shareOfLimit, used: shareOfLimit - remaining, remaining, rows, resetsInMs }
  }
}

export class FailoverStore implements AsyncLimiterStore {
  readonly synchronous = false
  /** per partner, its windows while limiting alone */
  private readonly alone = new Map<string, AloneWindows>()
  /** per partner, the requests this instance accepted in the last day */
  private readonly own = new Map<string, OwnRequests>()
  /** per partner, the requests whose scripts are sent and not answered yet (read when Redis fails) */
  private readonly pending = new Map<string, Set<number>>()
  /** per partner, requests refused alone after their scripts failed here: Redis may have run them */
  private readonly takeOut = new Map<string, number[]>()
  /** partners whose windows are being read while nothing is known of them */
  private readonly reading = new Map<string, Promise<void>>()
  private degradedSince: number | null = null
  private error: string | null = null
  /** Redis answers, with errors (it refuses writes): the windows of a partner can still be read */
  private readable = false
  /** requests answered `unavailable`: since degraded, and since this store was made */
  private unavailableNow = 0
  unavailableAnswers = 0
  /** the instances sharing the limits, as last seen, and the others among them */
  private share = 1
  private peers: string[] = []
  /** after an outage: the instances not yet back (heartbeat since `backAt`), whose share is kept free */
  private awaiting = new Set<string>()
  private backAt = 0
  /** the instances counted while alone (each had 1/that of each limit) */
  private shareAlone = 1
  private readonly reserved = new WeakMap<WindowSpec[], { reserve: number, share: number, windows: WindowSpec[] }>()
  /** the random value Redis held under the epoch key: another one is a Redis that lost its data */
  private epoch: string | null = null
  /** Redis lost its data: since when this instance knows, and whether it has put back its requests */
  private lost: { since: number, putBack: boolean } | null = null
  private timer?: NodeJS.Timeout
  private recovering = false
  private readonly clock: () => number
  /** the keys of the instances' heartbeats, Redis's epoch, the probe and the put-back marks */
  private readonly keys: Record<'instances' | 'epoch' | 'probe' | 'restored', string>
  private readonly reconnected = () => {
    // maybe a Redis restarted empty with no command failing: alone until the probe has checked
    if (this.degradedSince === null) this.degrade(new Error('the connection to Redis was lost and made again'))
  }

  constructor (
    private readonly redis: Redis,
    private readonly remote: RedisStore,
    private readonly instanceId: string,
    private readonly log: Log,
    /** `clock`: the limiter's; `probeMs`: the heartbeat's period, 0: only when tick() is called */
    options: { clock?: () => number, probeMs?: number } = {}
  ) {
    this.clock = options.clock ?? Date.now
    const { prefix } = remote
    this.keys = {
      instances: instancesKey(prefix), epoch: `${prefix}epoch`, probe: `${prefix}probe`, restored: `${prefix}restored`
    }
    redis.on('ready', this.reconnected)
    const probeMs = options.probeMs ?? PROBE_MS
    if (probeMs > 0) {
      // alone, a probe four times as often: a Redis that stalls in step with the probes is still
      // seen between its stalls (the others stop keeping room for a silent instance)
      let quarter = 0
      this.timer = setInterval(() => {
        if (this.degradedSince !== null || ++quarter % 4 === 0) this.tick().catch(() => {})
      }, probeMs / 4).unref()
    }
  }

  get degraded (): boolean {
    return this.degradedSince !== null
  }

  /** Back from an outage, with room still kept for instances that have not added what they accepted alone. */
  get rejoining (): boolean {
    return this.awaiting.size > 0
  }

  /** /readyz's shared_state */
  status () {
    return {
      backend: 'redis' as const,
      connected: this.degradedSince === null,
      degraded_since: this.degradedSince === null ? null : new Date(this.degradedSince).toISOString(),
      error: this.error,
      instances: this.share,
      unavailable_answers: this.unavailableNow
    }
  }

  // a promise even while alone: the partner routes take this store's answers as promises, always
  hit (key: string, windows: WindowSpec[], now: number): Promise<HitResult> {
    if (this.degradedSince !== null) {
      return this.readIfUnknown(key, windows, now, () => this.hitAlone(key, windows, now))
    }
    const id = this.remote.newId()
    let pending = this.pending.get(key)
    if (!pending) this.pending.set(key, pending = new Set())
    pending.add(id)
    return this.remote.hit(key, this.withReserve(windows), now, id).then((result) => {
      pending.delete(id)
      if (result.allowed) this.ownOf(key).push(id, result.time!, true)
      return result
    }, (err: unknown) => {
      pending.delete(id)
      this.degrade(err)
      return this.readIfUnknown(key, windows, now, () => this.hitAlone(key, windows, now, id))
    })
  }

  setRows (key: string, seq: number, rows: number): Promise<void> {
    // negative: a request accepted alone, whose rows go to Redis with it
    this.own.get(key)?.setRows(Math.abs(seq), rows)
    if (seq < 0) return Promise.resolve()
    return this.remote.setRows(key, seq, rows).catch((err: unknown) => this.degrade(err))
  }

  state (key: string, windows: WindowSpec[], now: number): Promise<WindowState[]> {
    if (this.degradedSince !== null) {
      return this.readIfUnknown(key, windows, now, () => this.stateAlone(key, windows, now))
    }
    return this.remote.state(key, windows, now).catch((err: unknown) => {
      this.degrade(err)
      return this.stateAlone(key, windows, now)
    })
  }

  private ownOf (key: string): OwnRequests {
    let own = this.own.get(key)
    if (!own) this.own.set(key, own = new OwnRequests())
    return own
  }

  /** Redis's last answer about a partner, if it is of the last day (an older one tells nothing of any window). */
  private lastAnswer (key: string, now: number): Answer | undefined {
    const answer = this.remote.answers.get(key)
    return answer && answer.at > now - DAY_MS ? answer : undefined
  }

  private windowsAlone (key: string, windows: WindowSpec[], now: number): AloneWindows {
    let alone = this.alone.get(key)
    if (!alone) this.alone.set(key, alone = new AloneWindows(now, windows, this.pending.get(key) ?? []))
    if (alone.knowsNothing) alone.know(this.lastAnswer(key, now))
    return alone
  }

  /** Alone, `answer`; while Redis answers reads but refuses writes, first the partner's windows if nothing is known. */
  private readIfUnknown<T> (key: string, windows: WindowSpec[], now: number, answer: () => T): Promise<T> {
    if (!this.readable || this.lastAnswer(key, now)) return Promise.resolve(answer())
    let reading = this.reading.get(key)
    if (!reading) {
      reading = this.remote.state(key, windows, now).then(() => {}, () => {})
        .finally(() => this.reading.delete(key))
      this.reading.set(key, reading)
    }
    return reading.then(answer)
  }

  /**
   * `timedOut`: the request's number, when its script failed here (Redis may have run it). Room kept
   * for instances not back from an earlier outage stays kept: what they accepted alone is in no answer.
   */
  private hitAlone (key: string, given: WindowSpec[], now: number, timedOut?: number): HitResult {
    const windows = this.withReserve(given)
    const alone = this.windowsAlone(key, windows, now)
    const log = alone.log
    // such a request counts here once, whatever is decided: Redis may hold it
    const counted = timedOut !== undefined && alone.placeholders.delete(timedOut)
    // a clock stepped back: as in LocalStore.hit
    const time = now < log.newest ? log.newest : now
    const states = () => windows.map((w) => alone.state(w, now, this.share, 0))
    const refuse = (result: HitResult) => {
      if (timedOut === undefined) return result
      if (!counted) log.push(time)
      let out = this.takeOut.get(key)
      if (!out) this.takeOut.set(key, out = [])
      out.push(timedOut)
      return result
    }
    if (windows.some((w) => w.limit !== null && alone.unknown(w as Limited, now, this.share))) {
      this.unavailableAnswers++
      if (this.unavailableNow++ === 0) {
        this.log.warn({ error: this.error },
          'requests answered 503 (unavailable): the shared state (Redis) cannot be read or written and this ' +
          'instance knows nothing of a limited window of their partner')
      }
      return refuse({ allowed: false, unavailable: true, retryAfterMs: UNAVAILABLE_RETRY_MS, windows: states() })
    }
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
    if (refusedBy !== undefined) return refuse({ allowed: false, refusedBy, retryAfterMs, windows: states() })
    log.dropUntil(now - DAY_MS)
    if (!counted) log.push(time)
    // the number its script had, if it had one: Redis then holds one request under that name, not two
    const id = timedOut ?? this.remote.newId()
    this.ownOf(key).push(id, time, false)
    // negative: accepted alone
    return { allowed: true, seq: -id, time, windows: states() }
  }

  private stateAlone (key: string, given: WindowSpec[], now: number): WindowState[] {
    const windows = this.withReserve(given)
    const alone = this.windowsAlone(key, windows, now)
    const own = this.own.get(key)
    return windows.map((w) => alone.state(w, now, this.share, own?.rowsAfter(now - w.seconds * 1000) ?? 0))
  }

  /** Just back from an outage: each limit less the shares of the instances not back yet. */
  private withReserve (windows: WindowSpec[]): WindowSpec[] {
    const reserve = this.awaiting.size
    const share = this.shareAlone
    if (reserve === 0) return windows
    const known = this.reserved.get(windows)
    if (known && known.reserve === reserve && known.share === share) return known.windows
    const less = (limit: number | null) =>
      limit === null ? null : Math.max(0, limit - reserve * Math.floor(limit / share))
    const made = windows.map((w) => ({ ...w, limit: less(w.limit) }))
    this.reserved.set(windows, { reserve, share, windows: made })
    return made
  }

  /** Notes why Redis failed; a reply (an error Redis answered with) leaves its windows readable. */
  private failed (err: unknown) {
    // for a transaction Redis refused, the command's reason (maxmemory reached, say)
    const cause = (err as { previousErrors?: unknown[] } | null)?.previousErrors?.[0] ?? err
    this.error = cause instanceof Error ? cause.message : String(cause)
    this.readable = err instanceof ReplyError
  }

  private degrade (err: unknown) {
    this.failed(err)
    if (this.degradedSince !== null) return
    this.degradedSince = Date.now()
    this.unavailableNow = 0
    this.log.error({ error: this.error, share: this.share },
      `shared state (Redis) unavailable: limiting alone with 1/${this.share} of what is left of each limit; ` +
      'requests are served on')
  }

  /**
   * Every second (or by tests): the heartbeat and the instances, or, degraded, a probe and the way
   * back (the heartbeat follows: an instance seen again has added what it accepted alone).
   */
  async tick () {
    if (this.degradedSince !== null) {
      if (this.recovering) return
      this.recovering = true
      try {
        await this.recover()
      } catch (err) {
        this.failed(err)
      } finally {
        this.recovering = false
      }
      if (this.degradedSince !== null) return
    }
    const now = Date.now()
    const { instances, epoch: epochKey } = this.keys
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
      // the midpoint: the lowest offset (measured()'s) would bring deadlines forward by any lag of this event loop
      this.remote.deadlines.clockOffsetMs = redisNow - Math.round((now + Date.now()) / 2)
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
      if (Number(members[i + 1]) >= this.backAt) this.awaiting.delete(members[i])
    }
    this.peers = peers
    // an instance silent this long is not counted any more (and did not come back)
    if (now - this.backAt >= INSTANCE_STALE_MS) this.awaiting.clear()
    // those not back yet count, though a Redis restarted empty has no heartbeat of theirs
    this.share = new Set([...peers, ...this.awaiting]).size + 1
    const dayAgo = this.clock() - DAY_MS
    for (const [key, own] of this.own) {
      own.dropUntil(dayAgo)
      if (own.size === 0) this.own.delete(key)
    }
    for (const [key, pending] of this.pending) if (pending.size === 0) this.pending.delete(key)
  }

  /**
   * The probe, a write (a Redis that answers but refuses writes, maxmemory reached, is still away), and
   * the way back. If Redis lost its data (the epoch key gone or another), this instance puts back every
   * request of the last day, says so in Redis, and stays alone until every instance it counted has done
   * the same (or been silent INSTANCE_STALE_MS). Then it adds the requests accepted alone and uses Redis
   * again, room kept for the instances not back yet. Throws when Redis fails.
   */
  private async recover () {
    const backAt = Date.now()
    const { epoch: epochKey, probe } = this.keys
    const replies = await this.redis.multi()
      .set(probe, this.instanceId, 'PX', 60_000)
      .set(epochKey, randomUUID(), 'NX')
      .get(epochKey)
      .exec() as [Error | null, unknown][]
    // writes work: until this instance is back, what it reads may lack requests not yet put back
    this.readable = false
    const epoch = replies[2][1] as string
    if (this.epoch !== null && epoch !== this.epoch) {
      this.lost = { since: Date.now(), putBack: false }
      this.log.warn({}, 'the shared state (Redis) lost its data: this instance puts back the requests it accepted ' +
        'in the last day, and limits alone until the other instances have done the same')
    }
    this.epoch = epoch
    let putBack = 0
    if (this.lost !== null && !this.lost.putBack) {
      putBack = await this.add(true)
      const { restored } = this.keys
      await this.redis.multi().hset(restored, this.instanceId, epoch).pexpire(restored, DAY_MS).exec()
      this.lost.putBack = true
    }
    if (this.lost !== null && !(await this.othersRestored(this.lost.since))) return
    // passes until one finds nothing new: requests keep arriving (and are limited alone) while
    // they await Redis; after the last pass the switch happens with no await in between
    let merged = 0
    let added: number
    do {
      added = await this.add(false)
      merged += added
    } while (added > 0)
    this.alone.clear()
    const lost = this.lost !== null
    this.lost = null
    const since = this.degradedSince
    this.degradedSince = null
    this.error = null
    this.awaiting = new Set(this.peers)
    this.backAt = backAt
    this.shareAlone = this.share
    this.log.info({
      merged, lost, put_back: putBack, unavailable: this.unavailableNow,
      degraded_ms: since === null ? 0 : Date.now() - since
    }, 'shared state (Redis) available again: the requests accepted alone were added to it')
  }

  /**
   * Adds to Redis the requests it lacks (`all`: every one of the last day, after a loss) and takes out
   * those refused alone; the number sent. After a loss, the counts are remembered once all are back.
   */
  private async add (all: boolean): Promise<number> {
    const now = this.clock()
    let sent = 0
    const work: (() => Promise<void>)[] = []
    for (const key of new Set([...this.own.keys(), ...this.takeOut.keys()])) {
      const own = this.own.get(key)
      const { requests, upTo } = own?.toAdd(all) ?? { requests: [], upTo: 0 }
      const out = this.takeOut.get(key) ?? []
      if (requests.length === 0 && out.length === 0) continue
      const taken = out.slice()
      sent += requests.length + taken.length
      work.push(async () => {
        await this.remote.putBack(key, SECONDS, requests, taken, now, !all)
        own?.added(upTo)
        out.splice(0, taken.length)
        if (out.length === 0) this.takeOut.delete(key)
      })
    }
    // a batch at a time: every script must reach Redis within the command timeout
    for (let i = 0; i < work.length; i += REJOIN_BATCH) {
      await Promise.all(work.slice(i, i + REJOIN_BATCH).map((job) => job()))
    }
    return sent
  }

  /** After a loss: whether every instance counted has put back its requests, or INSTANCE_STALE_MS has passed. */
  private async othersRestored (lostSince: number): Promise<boolean> {
    let waiting: string[] = []
    if (this.peers.length > 0) {
      const marks = await this.redis.hmget(this.keys.restored, ...this.peers)
      waiting = this.peers.filter((_, i) => marks[i] !== this.epoch)
    }
    if (waiting.length === 0) return true
    if (Date.now() - lostSince < INSTANCE_STALE_MS) {
      this.error = `the shared state lost its data: waiting for ${waiting.length} other instance(s) ` +
        'to put back the requests they accepted'
      return false
    }
    this.log.warn({ instances: waiting }, 'instances did not put back their requests into the shared state (Redis) ' +
      `within ${INSTANCE_STALE_MS / 1000} s: what they accepted in the last day is missing from the windows`)
    return true
  }

  async close () {
    clearInterval(this.timer)
    this.redis.off('ready', this.reconnected)
    try {
      await this.redis.zrem(this.keys.instances, this.instanceId)
    } catch { /* Redis away: the heartbeat goes stale on its own */ }
  }
}
