// The shared limiter store with a way down: Redis while it answers, and an in-process store while
// it does not. Requests keep being answered either way (no 5xx): when a Redis command fails or
// times out, the instance goes on alone with limits divided by the number of instances it last
// saw (its share), says so once in the log and in /readyz, probes Redis every second, and when
// Redis is back adds the requests it accepted alone to the shared log before using it again.
// It also keeps this instance's heartbeat in Redis, which is how instances count each other.
import type { FastifyBaseLogger } from 'fastify'
import type { Redis } from 'ioredis'
import { LocalStore, type HitResult, type LimiterStore, type WindowSpec, type WindowState } from './limiter.ts'
import type { RedisStore } from './redis-store.ts'

/** An instance whose heartbeat is older than this is not counted. */
const INSTANCE_STALE_MS = 10_000
const PROBE_MS = 1_000

export interface SharedStateStatus {
  backend: 'redis'
  connected: boolean
  /** ISO time since when this instance limits alone, or null */
  degraded_since: string | null
  error: string | null
  /** instances sharing the state, as last seen */
  instances: number
}

export class FailoverStore implements LimiterStore {
  readonly local = new LocalStore()
  private degradedSince: number | null = null
  private error: string | null = null
  private share = 1
  private readonly scaled = new WeakMap<WindowSpec[], { share: number, windows: WindowSpec[] }>()
  private readonly timer: NodeJS.Timeout
  private recovering = false

  constructor (
    private readonly redis: Redis,
    private readonly remote: RedisStore,
    private readonly instanceId: string,
    private readonly log: FastifyBaseLogger,
    private readonly prefix = 'lsp:'
  ) {
    this.timer = setInterval(() => { this.tick().catch(() => {}) }, PROBE_MS)
    this.timer.unref()
  }

  get degraded (): boolean {
    return this.degradedSince !== null
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

  /** The windows this instance enforces alone: each limit divided by the instances last seen. */
  private alone (windows: WindowSpec[]): WindowSpec[] {
    const known = this.scaled.get(windows)
    if (known && known.share === this.share) return known.windows
    const share = this.share
    const made = windows.map((w) => ({ ...w, limit: w.limit === null ? null : Math.max(1, Math.ceil(w.limit / share)) }))
    this.scaled.set(windows, { share, windows: made })
    return made
  }

  private hitAlone (key: string, windows: WindowSpec[], now: number): HitResult {
    const r = this.local.hit(key, this.alone(windows), now)
    if (r.seq !== undefined) r.seq = -r.seq // negative: an entry of the local log
    return r
  }

  hit (key: string, windows: WindowSpec[], now: number): HitResult | Promise<HitResult> {
    if (this.degradedSince !== null) return this.hitAlone(key, windows, now)
    return this.remote.hit(key, windows, now).catch((err: unknown) => {
      this.degrade(err)
      return this.hitAlone(key, windows, now)
    })
  }

  setRows (key: string, seq: number, rows: number): void | Promise<void> {
    if (seq < 0) return this.local.setRows(key, -seq, rows)
    return this.remote.setRows(key, seq, rows).catch((err: unknown) => this.degrade(err))
  }

  state (key: string, windows: WindowSpec[], now: number): WindowState[] | Promise<WindowState[]> {
    if (this.degradedSince !== null) return this.local.state(key, this.alone(windows), now)
    return this.remote.state(key, windows, now).catch((err: unknown) => {
      this.degrade(err)
      return this.local.state(key, this.alone(windows), now)
    })
  }

  private degrade (err: unknown) {
    this.error = err instanceof Error ? err.message : String(err)
    if (this.degradedSince !== null) return
    this.degradedSince = Date.now()
    this.log.error({ error: this.error, share: this.share },
      `shared state (Redis) unavailable: limiting alone with 1/${this.share} of each limit; requests are served on`)
  }

  /** Every second: the heartbeat and instance count, or, while degraded, a probe and the way back. */
  private async tick () {
    const now = Date.now()
    const instances = `${this.prefix}instances`
    try {
      const [, , count] = await this.redis.multi()
        .zadd(instances, now, this.instanceId)
        .zremrangebyscore(instances, '-inf', now - INSTANCE_STALE_MS)
        .zcard(instances)
        .exec() as [unknown, unknown][]
      this.share = Math.max(1, Number(count[1]))
    } catch (err) {
      if (this.degradedSince === null) this.degrade(err)
      return
    }
    if (this.degradedSince !== null && !this.recovering) await this.recover()
  }

  /** Redis answers again: the requests accepted alone join the shared log, then it is used again. */
  private async recover () {
    this.recovering = true
    try {
      // passes until one finds nothing new: requests keep arriving (and are limited alone) while
      // the merge awaits Redis; after the last pass the switch happens with no await in between
      let merged = 0
      const done = new Map<string, number>()
      for (let pending = true; pending;) {
        pending = false
        for (const [key, log] of this.local.logs) {
          const from = done.get(key) ?? 0
          if (log.size <= from) continue
          pending = true
          const times: number[] = []
          for (let i = from; i < log.size; i++) times.push(log.at(i))
          done.set(key, log.size)
          await this.remote.merge(key, times)
          merged += times.length
        }
      }
      this.local.logs.clear()
      this.local.dirty.clear()
      const since = this.degradedSince
      this.degradedSince = null
      this.error = null
      this.log.info({ merged, degraded_ms: since === null ? 0 : Date.now() - since }, 'shared state (Redis) available again: the requests accepted alone were added to it')
    } catch (err) {
      this.error = err instanceof Error ? err.message : String(err)
    } finally {
      this.recovering = false
    }
  }

  async close () {
    clearInterval(this.timer)
    try {
      await this.redis.zrem(`${this.prefix}instances`, this.instanceId)
    } catch { /* Redis away: the heartbeat goes stale on its own */ }
  }
}
