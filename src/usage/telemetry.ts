// Telemetry: the latest events of each partner, from which the telemetry block of /usage is
// derived: a summary for the partner, the limiter's counts are the authoritative ones. Every event
// recorded also goes to the daily history, when one is given.
import type { Redis } from 'ioredis'
import { DAY_MS } from '../limits/accept-log.ts'
import { WINDOWS, WINDOW_SECONDS, type WindowName } from '../partners/tiers.ts'
import type { HistoryCounter } from './history.ts'
import { outageReporter } from '../health/outage.ts'
import type { Log } from '../log.ts'

export const TELEMETRY_FEED_SIZE = 200
const RECENT_EVENTS = 10

export type TelemetryBlock = ReturnType<typeof telemetryBlock>

export interface TelemetryEvent {
  timestamp: number, endpoint: string, status: number, rows: number, durationMs: number, dataset: string | null
  cache: 'hit' | 'miss' | 'none'
}

interface Feed {
  /** oldest first; the last `size` are the feed, trimmed once they are twice as many */
  events: TelemetryEvent[]
  /** events ever recorded (restored ones included): the newest event's sequence number */
  total: number
  /** the newest sequence number saved */
  saved: number
}

/** The feed as the app uses it, in process or shared (Redis): `record` on the request path, `block` for /usage. */
export type Telemetry = Pick<TelemetryFeed, 'record' | 'block'>

/** The feed in process. */
export class TelemetryFeed {
  private readonly feeds = new Map<string, Feed>()
  private readonly history?: HistoryCounter

  constructor (readonly size = TELEMETRY_FEED_SIZE, options: { history?: HistoryCounter } = {}) {
    this.history = options.history
  }

  record (key: string, event: TelemetryEvent) {
    let feed = this.feeds.get(key)
    if (!feed) this.feeds.set(key, feed = { events: [], total: 0, saved: 0 })
    if (feed.events.length === 2 * this.size) feed.events.splice(0, this.size)
    feed.events.push(event)
    feed.total++
    this.history?.record(key, event)
  }

  /** Per partner with events not saved yet: those still in the feed, oldest first, and the newest's sequence number. */
  unsaved () {
    return [...this.feeds].filter(([, feed]) => feed.saved !== feed.total).map(([key, { events, total, saved }]) =>
      ({ key, events: events.slice(-Math.min(total - saved, this.size)), total }))
  }

  markSaved (key: string, total: number) {
    const feed = this.feeds.get(key)
    if (feed) feed.saved = total
  }

  /** A partner's feed as saved: events oldest first, the newest's sequence number. */
  restore (key: string, events: TelemetryEvent[], total: number) {
    this.feeds.set(key, { events: events.slice(-this.size), total, saved: total })
  }

  /** Events newest first. */
  events (key: string): TelemetryEvent[] {
    return (this.feeds.get(key)?.events.slice(-this.size) ?? []).reverse()
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

const sharedFeedKey = (key: string, prefix: string) => `${prefix}tm:{${key}}`

/**
 * The feed shared by every instance (STATE_URL): a capped Redis list per partner, newest first.
 * Events are also kept in process, which answers while Redis is away. Failed writes are logged
 * once per outage.
 */
export class SharedTelemetry extends TelemetryFeed {
  private readonly prefix: string
  private readonly written: (err?: unknown) => void

  constructor (
    private readonly redis: Redis,
    { prefix = 'lsp:', log, history }: { prefix?: string, log: Pick<Log, 'info' | 'warn'>, history?: HistoryCounter }
  ) {
    super(TELEMETRY_FEED_SIZE, { history })
    this.prefix = prefix
    this.written = outageReporter(
      (err) => log.warn({ err },
        'telemetry events cannot be written to the shared state (Redis); kept in this process meanwhile'),
      () => log.info({}, 'telemetry events are written to the shared state (Redis) again'))
  }

  record (key: string, event: TelemetryEvent) {
    super.record(key, event)
    const k = sharedFeedKey(key, this.prefix)
    this.redis.multi().lpush(k, JSON.stringify(event)).ltrim(k, 0, TELEMETRY_FEED_SIZE - 1).pexpire(k, 7 * DAY_MS)
      .exec()
      .then((results) => this.written(results?.find(([err]) => err)?.[0]), (err: Error) => this.written(err))
  }

  async block (key: string, now: number): Promise<TelemetryBlock> {
    const events = await readSharedEvents(this.redis, key, this.prefix).catch(() => this.events(key))
    return telemetryBlock(events, TELEMETRY_FEED_SIZE, now)
  }
}

/** A partner's shared feed, newest first; throws when Redis does not answer. */
export async function readSharedEvents (redis: Redis, key: string, prefix = 'lsp:'): Promise<TelemetryEvent[]> {
  const events = await redis.lrange(sharedFeedKey(key, prefix), 0, TELEMETRY_FEED_SIZE - 1)
  return events.map((e) => JSON.parse(e) as TelemetryEvent)
}
