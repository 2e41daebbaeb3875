// The usage report of GET /usage, built here for the route and the operator CLI (`partners usage SLUG`).
import type { WindowState } from '../limits/limiter.ts'
import type { DatasetName } from '../sites/dataset-file.ts'
import type { Limits } from '../partners/tiers.ts'
import type { TelemetryBlock } from './telemetry.ts'

/** The limiter (or one over the saved counters) and a telemetry feed. */
export interface UsageSources {
  limiter: { state (key: string, limits: Limits): Promise<{ now: number, windows: WindowState[] }> }
  telemetry: { block (key: string, now: number): Promise<TelemetryBlock> }
}

function windowReport (w: WindowState, now: number) {
  return {
    limit: w.limit,
    used: w.used,
    remaining: w.remaining,
    window_seconds: w.seconds,
    resets_in_seconds: w.resetsInMs === null ? null : Math.ceil(w.resetsInMs / 1000),
    resets_at: w.resetsInMs === null ? null : new Date(now + w.resetsInMs).toISOString(),
    rows: w.rows
  }
}

/** The report but for `client` (the caller's address, which the route adds); `environment`: the answering dataset. */
export async function usageReport (
  sources: UsageSources,
  partner: { id: string, slug: string, name: string, limits: Limits },
  options: { environment: DatasetName, telemetry: boolean }
) {
  const { now, windows: [minute, hour, day] } = await sources.limiter.state(partner.id, partner.limits)
  const { environment } = options
  const { id, slug, name } = partner
  return {
    timestamp: new Date(now).toISOString(),
    partner: { id, slug, name, environment, is_sandbox: environment === 'sandbox' },
    windows: { minute: windowReport(minute, now), hour: windowReport(hour, now), day: windowReport(day, now) },
    ...(options.telemetry ? { telemetry: await sources.telemetry.block(partner.id, now) } : {})
  }
}

export type UsageReportBody = Awaited<ReturnType<typeof usageReport>>
