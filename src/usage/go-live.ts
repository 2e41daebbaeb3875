// The go-live rule: when a sandbox partner's telemetry "shows stable volumes within agreed limits"
// (the spec's condition for production), judged on its daily history by `partners report`.
import type { Limits } from '../partners/tiers.ts'
import type { DayRecord } from './history.ts'

/** Days with traffic needed among those judged. */
export const MIN_ACTIVE_DAYS = 5
/** Shares of requests refused with 429, and answered with another error, that are too much. */
export const MAX_REFUSED_SHARE = 0.01
export const MAX_ERROR_SHARE = 0.01

export type GoLiveVerdict = ReturnType<typeof goLive>
export type UsageSummary = ReturnType<typeof summarize>

/** Shares of all requests answered (refused ones included); 0 without requests. */
export function summarize (days: DayRecord[]) {
  let requests = 0
  let refused = 0
  let errors = 0
  let max = 0
  let active = 0
  let busiest: DayRecord['busiest_minute'] = null // the earliest of equals
  for (const d of days) {
    requests += d.requests
    refused += d.refused
    for (const n of [...Object.values(d.client_errors), ...Object.values(d.server_errors)]) errors += n
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
 * The rule, on the days judged and the partner's limits now: traffic on MIN_ACTIVE_DAYS days; no
 * day or minute over its limit (429s included: what the partner asked for, not what it was let
 * have); refused and error shares under their maxima.
 */
export function goLive (days: DayRecord[], limits: Limits) {
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
