// The operator CLI's usage commands (wired into scripts/admin.ts): `partners usage SLUG` shows a
// partner's windows, rows and telemetry as its own GET /usage?expand=telemetry does (the same
// report code, src/usage/report.ts) and its daily history; `partners report` a line per partner
// with the go-live rule's verdict for sandbox partners (src/usage/go-live.ts). Both read the live
// state, no token needed: control.db without STATE_URL (as fresh as the service's last save,
// every COUNTER_SAVE_MS), Redis with it.
import type { Config } from '../src/config.ts'
import { loadCounters } from '../src/limits/counters.ts'
import { LocalStore, RateLimiter } from '../src/limits/limiter.ts'
import { RedisStore } from '../src/limits/redis-store.ts'
import { datasetFor } from '../src/partners/permissions.ts'
import { RedisPartnerStore } from '../src/partners/redis-store.ts'
import { PartnerStore, controlPath, effectiveLimits, type Partner } from '../src/partners/store.ts'
import type { Limits } from '../src/partners/tiers.ts'
import { goLive, summarize, type GoLiveVerdict, type UsageSummary } from '../src/usage/go-live.ts'
import { dateOf, firstKeptDay, lastDays, type DayRecord } from '../src/usage/history.ts'
import { readRedisHistory } from '../src/usage/history-redis.ts'
import { readSqliteHistory } from '../src/usage/history-sqlite.ts'
import { usageReport, type UsageReportBody, type UsageSources } from '../src/usage/report.ts'
import { TELEMETRY_FEED_SIZE, readSharedEvents, telemetryBlock } from '../src/usage/telemetry.ts'
import { readSavedEvents } from '../src/usage/telemetry-store.ts'
import { connectState } from './state-connection.ts'
import { integer, withOpened, type Options, type Result } from './cli-errors.ts'

interface Context { config: Config, options: Options, args: string[] }

const DEFAULT_DAYS = 7

/** --days: a whole number from 1 to USAGE_HISTORY_DAYS (what is kept). */
function daysOption (value: string | boolean | undefined, keptDays: number): number {
  return integer('days', value, 1, keptDays, ' (USAGE_HISTORY_DAYS: the days kept)') ?? Math.min(DEFAULT_DAYS, keptDays)
}

/** What the commands read, from control.db or from Redis. */
interface UsageState {
  /** how fresh the figures are, for the text output */
  freshness: string
  partners (): Promise<Partner[]>
  partner (slug: string): Promise<Partner>
  sources (partnerId: string): UsageSources
  history (partnerId: string, now: number, days: number): Promise<DayRecord[]>
  close (): void
}

function localState (config: Config): UsageState {
  const store = new PartnerStore(controlPath(config.dataDir), { readonly: true })
  const db = store.db
  return {
    freshness: `as of the service's last save (every COUNTER_SAVE_MS, ${config.counterSaveMs} ms, and at close)`,
    partners: async () => store.list(),
    partner: async (slug) => store.get(slug),
    sources: (partnerId) => {
      const counters = new LocalStore()
      loadCounters(db, counters, Date.now(), partnerId)
      return {
        limiter: new RateLimiter(counters),
        telemetry: { block: async (key, now) => telemetryBlock(readSavedEvents(db, key), TELEMETRY_FEED_SIZE, now) }
      }
    },
    history: async (partnerId, now, days) => {
      const stored = readSqliteHistory(db, partnerId, dateOf(firstKeptDay(now, days)), dateOf(firstKeptDay(now, 1)))
      return lastDays(stored, now, days)
    },
    close: () => store.close()
  }
}

async function sharedState (config: Config): Promise<UsageState> {
  const redis = await connectState(config.stateUrl)
  const partners = new RedisPartnerStore(redis)
  const limiter = new RateLimiter(new RedisStore(redis))
  return {
    freshness: 'from the shared state (Redis); each instance adds its history counts every second',
    partners: () => partners.list(),
    partner: (slug) => partners.get(slug),
    sources: () => ({
      limiter,
      telemetry: {
        block: async (key, now) => telemetryBlock(await readSharedEvents(redis, key), TELEMETRY_FEED_SIZE, now)
      }
    }),
    history: async (partnerId, now, days) => {
      const from = dateOf(firstKeptDay(now, days))
      const stored = await readRedisHistory(redis, partnerId, from, dateOf(firstKeptDay(now, 1)))
      return lastDays(stored, now, days)
    },
    close: () => partners.close()
  }
}

function withState<T> (config: Config, fn: (state: UsageState) => Promise<T>): Promise<T> {
  return withOpened(config, () => config.stateUrl ? sharedState(config) : localState(config), fn)
}

const shown = (v: number | string | null) => v === null ? 'unlimited' : String(v)
const byStatus = (counts: Record<string, number>) =>
  Object.entries(counts).map(([s, n]) => `${s}:${n}`).join(' ') || '0'

function historyTable (days: DayRecord[]): string[] {
  const header = [
    'DATE'.padEnd(10), 'REQUESTS'.padStart(8), 'ACCEPTED'.padStart(8), '429'.padStart(6), 'OTHER 4XX'.padEnd(16),
    '5XX'.padEnd(10), 'ROWS'.padStart(9), ' BUSIEST MINUTE'
  ].join(' ')
  return [header, ...days.map((d) => [
    d.date,
    String(d.requests).padStart(8),
    String(d.accepted).padStart(8),
    String(d.refused).padStart(6),
    byStatus(d.client_errors).padEnd(16),
    byStatus(d.server_errors).padEnd(10),
    String(d.rows).padStart(9),
    d.busiest_minute ? ` ${d.busiest_minute.minute} (${d.busiest_minute.requests})` : ' -'
  ].join(' '))]
}

function usageText (report: UsageReportBody, history: DayRecord[], freshness: string): string {
  const { partner, windows, telemetry } = report
  const lines = [
    `partner ${partner.slug} (${partner.id}) ${partner.name}: ${partner.environment}; ` +
      `at ${report.timestamp}, ${freshness}`,
    '',
    [
      'WINDOW'.padEnd(7), 'LIMIT'.padStart(9), 'USED'.padStart(7), 'REMAINING'.padStart(9), 'ROWS'.padStart(9),
      ' RESETS AT'
    ].join(' '),
    ...(['minute', 'hour', 'day'] as const).map((w) => {
      const x = windows[w]
      return [
        w.padEnd(7), shown(x.limit).padStart(9), String(x.used).padStart(7), shown(x.remaining).padStart(9),
        String(x.rows).padStart(9), ` ${x.resets_at ?? '-'}`
      ].join(' ')
    })
  ]
  if (telemetry) {
    lines.push('', `telemetry: ${telemetry.events} of the last ${telemetry.feed_size} events`,
      ...(['minute', 'hour', 'day'] as const).map((w) => {
        const x = telemetry.windows[w]
        return `  ${w.padEnd(7)} ${String(x.requests).padStart(5)} requests ${String(x.rows).padStart(8)} rows ` +
          `${String(x.errors).padStart(5)} errors`
      }),
      ...telemetry.recent_events.map((e) => `  ${e.timestamp} ${e.endpoint.padEnd(10)} ${e.status} ` +
        `${String(e.rows).padStart(5)} rows ${String(e.duration_ms).padStart(8)} ms ${e.dataset ?? '-'} ${e.cache}`))
  }
  lines.push('', `history, last ${history.length} days (UTC), oldest first:`, ...historyTable(history))
  return lines.join('\n')
}

/**
 * `partners usage SLUG [--days N] [--json]`: the report the partner's GET /usage?expand=telemetry
 * gives (its environment without demo=; no `client`, which is the caller's address), and
 * `history`: the last N days (7 by default), oldest first.
 */
export async function partnerUsage ({ config, options, args }: Context): Promise<Result> {
  const days = daysOption(options.days, config.usageHistoryDays)
  return withState(config, async (state) => {
    const partner = await state.partner(args[0])
    const reported = { ...partner, limits: effectiveLimits(partner) }
    const report = await usageReport(state.sources(partner.id), reported, {
      environment: datasetFor(partner, false),
      telemetry: true
    })
    const history = await state.history(partner.id, Date.parse(report.timestamp), days)
    return { json: { ...report, history }, text: usageText(report, history, state.freshness) }
  })
}

interface ReportLine extends Omit<UsageSummary, 'refused' | 'errors'> {
  slug: string
  status: string
  tier: string
  environment: string
  limits: Limits
  /** the go-live rule's verdict, for sandbox partners; null for the others */
  go_live: GoLiveVerdict | null
}

const percent = (share: number) => `${(share * 100).toFixed(1)}%`

/** `partners report [--days N] [--json]`: a line per partner over the last N days (7 by default). */
export async function partnersReport ({ config, options }: Context): Promise<Result> {
  const days = daysOption(options.days, config.usageHistoryDays)
  return withState(config, async (state) => {
    const now = Date.now()
    const lines: ReportLine[] = []
    for (const partner of await state.partners()) {
      const history = await state.history(partner.id, now, days)
      const limits = effectiveLimits(partner)
      const { refused: _r, errors: _e, ...summary } = summarize(history)
      lines.push({
        slug: partner.slug,
        status: partner.status,
        tier: partner.tier,
        environment: partner.environment,
        limits,
        ...summary,
        go_live: partner.environment === 'sandbox' ? goLive(history, limits) : null
      })
    }
    const header = [
      'SLUG'.padEnd(24), 'STATUS'.padEnd(9), 'TIER'.padEnd(6), 'ENVIRONMENT'.padEnd(11), 'REQ/DAY AVG'.padStart(11),
      'MAX'.padStart(7), 'BUSIEST MIN/LIMIT'.padStart(17), '429'.padStart(6), 'ERRORS'.padStart(6), ' GO-LIVE'
    ].join(' ')
    const rows = lines.map((l) => [
      l.slug.padEnd(24), l.status.padEnd(9), l.tier.padEnd(6), l.environment.padEnd(11),
      String(l.requests_per_day_avg).padStart(11), String(l.requests_per_day_max).padStart(7),
      `${l.busiest_minute?.requests ?? 0}/${shown(l.limits.minute)}`.padStart(17),
      percent(l.refused_share).padStart(6), percent(l.error_share).padStart(6),
      ' ' + (l.go_live === null ? '-' : l.go_live.ready ? 'ready' : `not ready: ${l.go_live.failures.join('; ')}`)
    ].join(' '))
    const text = lines.length === 0
      ? 'no partners'
      : [`last ${days} days (UTC), ${state.freshness}`, header, ...rows].join('\n')
    return { json: lines, text }
  })
}
