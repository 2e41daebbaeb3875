// Telemetry: the latest events of each partner in a ring (200 by default), from which the
// telemetry block of /usage is derived. Kept apart from the limiter: it is a summary for the
// partner, the limiter's counts are the authoritative ones.
import type { Redis } from 'ioredis'
import { WINDOWS, WINDOW_SECONDS, type WindowName } from '../partners/tiers.ts'

export const TELEMETRY_FEED_SIZE = 200
export const RECENT_EVENTS = 10

export type TelemetryBlock = ReturnType<typeof telemetryBlock>

/** Where events go and the telemetry block comes from: in process, or shared (Redis). */
export interface Telemetry {
  record (key: string, event: TelemetryEvent): void
  block (key: string, now: number): TelemetryBlock | Promise<TelemetryBlock>
}

export interface TelemetryEvent {
  timestamp: number
  endpoint: string
  status: number
  rows: number
  durationMs: number
  dataset: string | null
  cache: 'hit' | 'miss' | 'none'
}

export class TelemetryFeed implements Telemetry {
  private readonly rings = new Map<string, { events: TelemetryEvent[], next: number }>()

  constructor (readonly size = TELEMETRY_FEED_SIZE) {}

  record (key: string, event: TelemetryEvent) {
    let ring = this.rings.get(key)
    if (!ring) this.rings.set(key, ring = { events: [], next: 0 })
    if (ring.events.length < this.size) ring.events.push(event)
    else ring.events[ring.next] = event
    ring.next = (ring.next + 1) % this.size
  }

  /** Events newest first. */
  events (key: string): TelemetryEvent[] {
    const ring = this.rings.get(key)
    if (!ring) return []
    const { events, next } = ring
    const ordered = events.length < this.size ? events.slice() : [...events.slice(next), ...events.slice(0, next)]
    return ordered.reverse()
  }

  block (key: string, now: number) {
    return telemetryBlock(this.events(key), this.size, now)
  }
}

export function telemetryBlock (events: TelemetryEvent[], size: number, now: number) {
  const windows = Object.fromEntries(WINDOWS.map((name): [WindowName, { requests: number, rows: number, errors: number }] => {
    const since = now - WINDOW_SECONDS[name] * 1000
    let requests = 0
    let rows = 0
    let errors = 0
    for (const e of events) {
      if (e.timestamp <= since) continue
      requests++
      rows += e.rows
      if (e.status >= 400) errors++
    }
    return [name, { requests, rows, errors }]
  })) as Record<WindowName, { requests: number, rows: number, errors: number }>
  return {
    feed_size: size,
    events: events.length,
    windows,
    recent_events: events.slice(0, RECENT_EVENTS).map((e) => ({
      timestamp: new Date(e.timestamp).toISOString(),
      endpoint: e.endpoint,
      status: e.status,
      rows: e.rows,
      duration_ms: e.durationMs,
      dataset: e.dataset,
      cache: e.cache
    }))
  }
}

export interface TelemetryLog {
  warn (obj: object, msg: string): void
  info (obj: object, msg: string): void
}

/**
 * The feed shared by every instance (STATE_URL): a capped Redis list per partner, newest first.
 * Events are also kept in process, which answers while Redis is away. Failed writes are logged
 * once per outage: a warning when they start failing, an info line when they work again.
 */
export class SharedTelemetry implements Telemetry {
  readonly local: TelemetryFeed
  private readonly prefix: string
  readonly size: number
  private readonly log?: TelemetryLog
  private failing = false

  constructor (private readonly redis: Redis, options: { prefix?: string, size?: number, log?: TelemetryLog } = {}) {
    this.prefix = options.prefix ?? 'lsp:'
    this.size = options.size ?? TELEMETRY_FEED_SIZE
    this.log = options.log
    this.local = new TelemetryFeed(this.size)
  }

  private keyOf (key: string) {
    return `${this.prefix}tm:{${key}}`
  }

  record (key: string, event: TelemetryEvent) {
    this.local.record(key, event)
    const k = this.keyOf(key)
    this.redis.multi().lpush(k, JSON.stringify(event)).ltrim(k, 0, this.size - 1).pexpire(k, 7 * 86_400_000).exec().then(
      (results) => this.written(results?.find(([err]) => err)?.[0] ?? undefined),
      (err: Error) => this.written(err)
    )
  }

  private written (err: Error | undefined) {
    if (err && !this.failing) {
      this.failing = true
      this.log?.warn({ err }, 'telemetry events cannot be written to the shared state (Redis); kept in this process meanwhile')
    } else if (!err && this.failing) {
      this.failing = false
      this.log?.info({}, 'telemetry events are written to the shared state (Redis) again')
    }
  }

  async block (key: string, now: number): Promise<TelemetryBlock> {
    let events: TelemetryEvent[]
    try {
      events = (await this.redis.lrange(this.keyOf(key), 0, this.size - 1)).map((e) => JSON.parse(e) as TelemetryEvent)
    } catch {
      events = this.local.events(key)
    }
    return telemetryBlock(events, this.size, now)
  }
}
