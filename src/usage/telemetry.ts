// Telemetry: the latest events of each partner in a ring, from which the telemetry block of /usage
// is derived: a summary for the partner, the limiter's counts are the authoritative ones. Every
// event recorded also goes to the daily history, when one is given.
import type { Redis } from 'ioredis'
import { WINDOWS, WINDOW_SECONDS, type WindowName } from '../partners/tiers.ts'
import type { HistoryCounter } from './history.ts'
import { outageReporter } from '../health/outage.ts'

export const TELEMETRY_FEED_SIZE = 200
const RECENT_EVENTS = 10

export type TelemetryBlock = ReturnType<typeof telemetryBlock>

/** In process or shared (Redis): `record` is on the request path, `block` serves /usage and the CLI. */
export type Telemetry = Pick<TelemetryFeed, 'record' | 'block'>

export interface TelemetryEvent {
  timestamp: number
  endpoint: string
  status: number
  rows: number
  durationMs: number
  dataset: string | null
  cache: 'hit' | 'miss' | 'none'
}

interface Ring {
  events: TelemetryEvent[]
  next: number
  /** events ever recorded (restored ones included): the newest event's sequence number */
  total: number
  /** the newest sequence number saved */
  saved: number
}

export class TelemetryFeed {
  private readonly rings = new Map<string, Ring>()
  private readonly history?: HistoryCounter

  constructor (readonly size = TELEMETRY_FEED_SIZE, options: { history?: HistoryCounter } = {}) {
    this.history = options.history
  }

  record (key: string, event: TelemetryEvent) {
    let ring = this.rings.get(key)
    if (!ring) this.rings.set(key, ring = { events: [], next: 0, total: 0, saved: 0 })
    if (ring.events.length < this.size) ring.events.push(event)
    else ring.events[ring.next] = event
    ring.next = (ring.next + 1) % this.size
    ring.total++
    this.history?.record(key, event)
  }

  /** Per partner with events not saved yet: those still in the feed, oldest first, and the newest's sequence number. */
  unsaved () {
    return [...this.rings].filter(([, ring]) => ring.saved !== ring.total).map(([key, ring]) => ({
      key,
      events: this.events(key).slice(0, Math.min(ring.total - ring.saved, ring.events.length)).reverse(),
      total: ring.total
    }))
  }

  markSaved (key: string, total: number) {
    const ring = this.rings.get(key)
    if (ring) ring.saved = total
  }

  /** A partner's feed as saved: events oldest first, the newest's sequence number. */
  restore (key: string, events: TelemetryEvent[], total: number) {
    const kept = events.slice(-this.size)
    this.rings.set(key, { events: kept, next: kept.length % this.size, total, saved: total })
  }

  /** Events newest first. */
  events (key: string): TelemetryEvent[] {
    const ring = this.rings.get(key)
    if (!ring) return []
    const { events, next } = ring
    const ordered = events.length < this.size ? events.slice() : [...events.slice(next), ...events.slice(0, next)]
    return ordered.reverse()
  }

  async block (key: string, now: number) {
    return telemetryBlock(this.events(key), this.size, now)
  }
}

/** The block from a partner's events, newest first. */
export function telemetryBlock (events: TelemetryEvent[], size: number, now: number) {
  const windows = {} as Record<WindowName, { requests: number, rows: number, errors: number }>
  for (const name of WINDOWS) {
    const since = now - WINDOW_SECONDS[name] * 1000
    const counts = windows[name] = { requests: 0, rows: 0, errors: 0 }
    for (const e of events) {
      if (e.timestamp <= since) continue
      counts.requests++
      counts.rows += e.rows
      if (e.status >= 400) counts.errors++
    }
  }
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

/**
 * The feed shared by every instance (STATE_URL): a capped Redis list per partner, newest first.
 * Events are also kept in process, which answers while Redis is away. Failed writes are logged
 * once per outage.
 */
export class SharedTelemetry {
  readonly local: TelemetryFeed
  private readonly prefix: string
  private readonly written: (err?: unknown) => void

  constructor (
    private readonly redis: Redis,
    options: {
      prefix?: string
      log?: { warn (obj: object, msg: string): void, info (obj: object, msg: string): void }
      history?: HistoryCounter
    } = {}
  ) {
    const { log } = options
    this.prefix = options.prefix ?? 'lsp:'
    this.local = new TelemetryFeed(TELEMETRY_FEED_SIZE, { history: options.history })
    this.written = outageReporter(
      (err) => log?.warn({ err },
        'telemetry events cannot be written to the shared state (Redis); kept in this process meanwhile'),
      () => log?.info({}, 'telemetry events are written to the shared state (Redis) again'))
  }

  record (key: string, event: TelemetryEvent) {
    this.local.record(key, event)
    const k = sharedFeedKey(key, this.prefix)
    this.redis.multi()
      .lpush(k, JSON.stringify(event))
      .ltrim(k, 0, TELEMETRY_FEED_SIZE - 1)
      .pexpire(k, 7 * 86_400_000)
      .exec()
      .then((results) => this.written(results?.find(([err]) => err)?.[0]), (err: Error) => this.written(err))
  }

  async block (key: string, now: number): Promise<TelemetryBlock> {
    const events = await readSharedEvents(this.redis, key, this.prefix).catch(() => this.local.events(key))
    return telemetryBlock(events, TELEMETRY_FEED_SIZE, now)
  }
}

const sharedFeedKey = (key: string, prefix: string) => `${prefix}tm:{${key}}`

/** A partner's shared feed, newest first; throws when Redis does not answer. */
export async function readSharedEvents (redis: Redis, key: string, prefix = 'lsp:'): Promise<TelemetryEvent[]> {
  const events = await redis.lrange(sharedFeedKey(key, prefix), 0, TELEMETRY_FEED_SIZE - 1)
  return events.map((e) => JSON.parse(e) as TelemetryEvent)
}
