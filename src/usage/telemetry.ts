// Telemetry: the latest events of each partner in a ring (200 by default), from which the
// telemetry block of /usage is derived. Kept apart from the limiter: it is a summary for the
// partner, the limiter's counts are the authoritative ones.
import { WINDOWS, WINDOW_SECONDS, type WindowName } from '../partners/tiers.ts'

export const TELEMETRY_FEED_SIZE = 200
export const RECENT_EVENTS = 10

export interface TelemetryEvent {
  timestamp: number
  endpoint: string
  status: number
  rows: number
  durationMs: number
  dataset: string | null
  cache: 'hit' | 'miss' | 'none'
}

export class TelemetryFeed {
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
    const events = this.events(key)
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
      feed_size: this.size,
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
}
