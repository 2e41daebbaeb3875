// The go-live rule: when a sandbox partner's telemetry "shows stable volumes within agreed limits"
// (the spec's condition for production), judged on its daily history. The one definition; the
// operator CLI's `partners report` applies it and docs/operations.md states it.
import type { Limits } from '../partners/tiers.ts'
import type { DayRecord } from './history.ts'

/** Days with traffic (at least one request) needed among those judged. */
export const MIN_ACTIVE_DAYS = 5
/** Share of requests refused with 429 that is too much (the rule needs less). */
export const MAX_REFUSED_SHARE = 0.01
/** Share of requests answered with an error (4xx other than 429, 5xx) that is too much. */
export const MAX_ERROR_SHARE = 0.01

export interface GoLiveVerdict {
  ready: boolean
  /** the conditions that fail, as the operator reads them; empty when ready */
  failures: string[]
}

export interface UsageSummary {
  days: number
  active_days: number
  requests: number
  requests_per_day_avg: number
  requests_per_day_max: number
  /** the busiest minute over the days judged (the earliest of equals), or null without traffic */
  busiest_minute: { minute: string, requests: number } | null
  refused: number
  errors: number
  refused_share: number
  error_share: number
}

const errorsOf = (d: DayRecord) =>
  Object.values(d.client_errors).reduce((a, b) => a + b, 0) + Object.values(d.server_errors).reduce((a, b) => a + b, 0)

/** Shares of all requests answered (refused ones included); 0 without requests. */
export function summarize (days: DayRecord[]): UsageSummary {
  let requests = 0
  let refused = 0
  let errors = 0
  let max = 0
  let active = 0
  let busiest: UsageSummary['busiest_minute'] = null
  for (const d of days) {
    requests += d.requests
    refused += d.refused
    errors += errorsOf(d)
    if (d.requests > max) max = d.requests
    if (d.requests > 0) active++
    if (d.busiest_minute && (!busiest || d.busiest_minute.requests > busiest.requests)) busiest = d.busiest_minute
  }
  return {
    days: days.length,
    active_days: active,
    requests,
    requests_per_day_avg: days.length === 0 ? 0 : Math.round(requests / days.length * 10) / 10,
    requests_per_day_max: max,
    busiest_minute: busiest,
    refused,
    errors,
    refused_share: requests === 0 ? 0 : refused / requests,
    error_share: requests === 0 ? 0 : errors / requests
  }
}

const percent = (share: number) => `${(share * 100).toFixed(2)}%`

/**
 * The rule, on the days judged (`partners report --days N`, 7 by default) and the partner's
 * limits now: traffic on at least MIN_ACTIVE_DAYS days; no day with more requests than the day
 * limit, and no minute with more than the minute limit (requests answered, 429s included: what
 * the partner asked for, not what it was let have); under 1% refused (429); under 1% errors.
 */
export function goLive (days: DayRecord[], limits: Limits): GoLiveVerdict {
  const s = summarize(days)
  const failures: string[] = []
  if (s.active_days < MIN_ACTIVE_DAYS) {
    failures.push(`traffic on ${s.active_days} of ${s.days} days (needs ${MIN_ACTIVE_DAYS})`)
  }
  if (limits.day !== null) {
    const over = days.filter((d) => d.requests > limits.day!).map((d) => `${d.date} (${d.requests})`)
    if (over.length > 0) failures.push(`over the day limit of ${limits.day} on ${over.join(', ')}`)
  }
  if (limits.minute !== null) {
    const over = days.filter((d) => d.busiest_minute && d.busiest_minute.requests > limits.minute!)
      .map((d) => `${d.busiest_minute!.minute} (${d.busiest_minute!.requests})`)
    if (over.length > 0) failures.push(`over the minute limit of ${limits.minute} at ${over.join(', ')}`)
  }
  if (s.refused_share >= MAX_REFUSED_SHARE) {
    failures.push(`${percent(s.refused_share)} refused with 429 (needs under ${percent(MAX_REFUSED_SHARE)})`)
  }
  if (s.error_share >= MAX_ERROR_SHARE) {
    failures.push(`${percent(s.error_share)} errors (needs under ${percent(MAX_ERROR_SHARE)})`)
  }
  return { ready: failures.length === 0, failures }
}
