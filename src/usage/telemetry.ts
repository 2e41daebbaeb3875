// Telemetry: the latest events of each partner in a ring (200 by default), from which the
// telemetry block of /usage is derived. Kept apart from the limiter: it is a summary for the
// partner, the limiter's counts are the authoritative ones. Every event recorded also goes to the
// daily history (history.ts), when one is given: the partner routes record through here alone.
import type { Redis } from 'ioredis'
import { WINDOWS, WINDOW_SECONDS, type WindowName } from '../partners/tiers.ts'
import type { HistorySink } from './history.ts'
import { outageReporter } from '../health/outage.ts'

export const TELEMETRY_FEED_SIZE = 200
const RECENT_EVENTS = 10

export type TelemetryBlock = ReturnType<typeof telemetryBlock>

/**
 * Where events go and the telemetry block comes from: in process, or shared (Redis). `record` is on
 * the request path and synchronous; `block` serves /usage and the CLI, always a promise.
 */
export interface Telemetry {
  record (key: string, event: TelemetryEvent): void
  block (key: string, now: number): Promise<TelemetryBlock>
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

interface Ring {
  events: TelemetryEvent[]
  next: number
  /** events ever recorded (restored ones included): the newest event's sequence number */
  total: number
  /** the newest sequence number saved */
  saved: number
}

export class TelemetryFeed implements Telemetry {
  private readonly rings = new Map<string, Ring>()
  private readonly history?: HistorySink

  constructor (readonly size = TELEMETRY_FEED_SIZE, options: { history?: HistorySink } = {}) {
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
  unsaved (): { key: string, events: TelemetryEvent[], total: number }[] {
    const out: { key: string, events: TelemetryEvent[], total: number }[] = []
    for (const [key, ring] of this.rings) {
      if (ring.saved === ring.total) continue
      const events = this.events(key).slice(0, Math.min(ring.total - ring.saved, ring.events.length)).reverse()
      out.push({ key, events, total: ring.total })
    }
    return out
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

interface WindowCounts { requests: number, rows: number, errors: number }

export function telemetryBlock (events: TelemetryEvent[], size: number, now: number) {
  const windows = Object.fromEntries(WINDOWS.map((name): [WindowName, WindowCounts] => {
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
  })) as Record<WindowName, WindowCounts>
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

interface TelemetryLog {
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
  private readonly written: (err?: unknown) => void

  constructor (
    private readonly redis: Redis,
    options: { prefix?: string, size?: number, log?: TelemetryLog, history?: HistorySink } = {}
  ) {
    this.prefix = options.prefix ?? 'lsp:'
    this.size = options.size ?? TELEMETRY_FEED_SIZE
    const { log } = options
    // the in-process feed passes each event on to the history
    this.local = new TelemetryFeed(this.size, { history: options.history })
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
      .ltrim(k, 0, this.size - 1)
      .pexpire(k, 7 * 86_400_000)
      .exec()
      .then((results) => this.written(results?.find(([err]) => err)?.[0]), (err: Error) => this.written(err))
  }

  async block (key: string, now: number): Promise<TelemetryBlock> {
    let events: TelemetryEvent[]
    try {
      events = await readSharedEvents(this.redis, key, this.size, this.prefix)
    } catch {
      events = this.local.events(key)
    }
    return telemetryBlock(events, this.size, now)
  }
}

const sharedFeedKey = (key: string, prefix: string) => `${prefix}tm:{${key}}`

/** A partner's shared feed, newest first; throws when Redis does not answer. */
export async function readSharedEvents (
  redis: Redis,
  key: string,
  size = TELEMETRY_FEED_SIZE,
  prefix = 'lsp:'
): Promise<TelemetryEvent[]> {
  return (await redis.lrange(sharedFeedKey(key, prefix), 0, size - 1)).map((e) => JSON.parse(e) as TelemetryEvent)
}
