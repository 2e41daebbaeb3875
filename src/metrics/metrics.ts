// Prometheus metrics (prom-client) in a registry of the app's own, which src/metrics/server.ts serves.
import { Registry, collectDefaultMetrics, type Metric } from 'prom-client'

/** What the gauges read at scrape time. */
export interface MetricSources {
  datasets: { served (): { dataset: string, site_count: number, built_at: string }[] }
  partners: { size: number, rowsRead: number }
  controlDb: { writable: boolean }
  cache: { size: number, lookups: { hit: number, miss: number } }
  log?: { droppedLines: number }
  /** bytes allocated for each dataset's record fragments */
  fragmentBytes?: () => { dataset: string, bytes: number }[]
  /** all record fragments' chunks, within FRAGMENTS_MAX_MB */
  fragmentMemory?: { bytes: number, forgotten: number }
  /** the shared state (STATE_URL), read at scrape time; undefined without it */
  sharedState?: () => { degraded: boolean, unavailableAnswers: number } | undefined
}

export type Metrics = ReturnType<typeof createMetrics>

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]

/** One route, method and status: counted per request in plain numbers, made into samples at scrape time. */
interface Series { route: string, method: string, status: string, count: number, sum: number, buckets: Float64Array }

const DURATION = 'lsp_http_request_duration_seconds'

type Sample = { labels: Record<string, string>, value: number, metricName?: string }

const unlabelled = (value: number): Sample[] => [{ labels: {}, value }]

/**
 * Node's process metrics (prom-client's defaults), made once per process: they start an event-loop
 * delay monitor and a GC observer that nothing can stop, which one set per app would add per buildApp.
 */
let processMetrics: Registry | undefined

export function createMetrics (sources: MetricSources) {
  if (processMetrics === undefined) {
    processMetrics = new Registry()
    collectDefaultMetrics({ register: processMetrics, prefix: 'lsp_' })
  }
  // a registry of the app's own that starts with the process's metric objects (shared, not copied)
  const registry = Registry.merge([processMetrics])
  // route → method → status → series: found per request without building a key string
  const byRoute = new Map<string, Map<string, Map<number, Series>>>()
  const allSeries = () => [...byRoute.values()].flatMap((m) => [...m.values()].flatMap((s) => [...s.values()]))
  const reloads = { ok: 0, refused: 0 }
  const refusals = new Map<string, number>()

  // Every metric's samples are made when Prometheus scrapes: what a request does is add to plain
  // numbers (prom-client's own counters hash their labels on every increment).
  const metric = (type: 'counter' | 'gauge' | 'histogram') => (name: string, help: string, samples: () => Sample[]) => {
    const get = async () => ({ name, help, type, aggregator: 'sum', values: samples() })
    registry.registerMetric({ name, help, type, get, reset () {} } as unknown as Metric)
  }
  const [counter, gauge, histogram] = [metric('counter'), metric('gauge'), metric('histogram')]

  counter('lsp_http_requests_total', 'HTTP requests answered, by route pattern, method and status',
    () => allSeries().map((s) => ({ labels: { route: s.route, method: s.method, status: s.status }, value: s.count })))
  histogram(DURATION, 'Time from request to answer, by route pattern and status', () => {
    // the latency is by route and status only (GET is the only method that answers)
    const merged = new Map<string, Omit<Series, 'method'>>()
    for (const s of allSeries()) {
      const key = `${s.status} ${s.route}`
      const into = merged.get(key) ??
        { route: s.route, status: s.status, count: 0, sum: 0, buckets: new Float64Array(BUCKETS.length) }
      into.count += s.count
      into.sum += s.sum
      for (let i = 0; i < BUCKETS.length; i++) into.buckets[i] += s.buckets[i]
      merged.set(key, into)
    }
    const samples: Sample[] = []
    for (const { route, status, count, sum, buckets } of merged.values()) {
      const metricName = `${DURATION}_bucket`
      let cumulative = 0
      for (let i = 0; i < BUCKETS.length; i++) {
        cumulative += buckets[i]
        samples.push({ metricName, labels: { le: String(BUCKETS[i]), route, status }, value: cumulative })
      }
      samples.push({ metricName, labels: { le: '+Inf', route, status }, value: count })
      samples.push({ metricName: `${DURATION}_sum`, labels: { route, status }, value: sum })
      samples.push({ metricName: `${DURATION}_count`, labels: { route, status }, value: count })
    }
    return samples
  })
  const { lookups } = sources.cache
  counter('lsp_cache_lookups_total', 'Answer cache lookups, by result (hit or miss)',
    () => [{ labels: { result: 'hit' }, value: lookups.hit }, { labels: { result: 'miss' }, value: lookups.miss }])
  counter('lsp_rate_limit_refusals_total', 'Requests refused with 429, by partner tier',
    () => [...refusals].map(([tier, value]) => ({ labels: { tier }, value })))
  const { sharedState } = sources
  counter('lsp_shared_state_unavailable_total',
    'Requests answered 503 svc_partner_api_unavailable: the shared state (Redis) could not be read or written and ' +
    'nothing was known of a limited window of the partner',
    () => unlabelled(sharedState?.()?.unavailableAnswers ?? 0))
  if (sharedState !== undefined) {
    gauge('lsp_shared_state_connected',
      '1 while the shared state (Redis, STATE_URL) is used, 0 while this instance limits alone (see /readyz); ' +
      'absent without STATE_URL', () => unlabelled(sharedState()?.degraded === false ? 1 : 0))
  }
  counter('lsp_log_lines_dropped_total',
    'Log lines dropped because more than LOG_BUFFER_MB were waiting for their reader',
    () => unlabelled(sources.log?.droppedLines ?? 0))
  counter('lsp_record_fragment_chunks_forgotten_total',
    'Chunks (8 MB) of the records\' JSON forgotten to stay within FRAGMENTS_MAX_MB; ' +
    'their records are made again when asked for', () => unlabelled(sources.fragmentMemory?.forgotten ?? 0))
  counter('lsp_partner_rows_read_total',
    'Partner rows read from control.db or Redis: all at boot, then those of the partners changed',
    () => unlabelled(sources.partners.rowsRead))
  counter('lsp_dataset_reloads_total', 'Dataset reloads (datasets reload, SIGHUP), by result (ok or refused)',
    () => [{ labels: { result: 'ok' }, value: reloads.ok }, { labels: { result: 'refused' }, value: reloads.refused }])
  gauge('lsp_dataset_sites', 'Sites served, by dataset',
    () => sources.datasets.served().map((d) => ({ labels: { dataset: d.dataset }, value: d.site_count })))
  gauge('lsp_record_fragment_bytes',
    'Bytes allocated for the records\' JSON, made on first use and kept (8 MB chunks, filled as records ' +
    'are made; all datasets together within FRAGMENTS_MAX_MB), by dataset: most of the memory that grows under load',
    () => (sources.fragmentBytes?.() ?? []).map((d) => ({ labels: { dataset: d.dataset }, value: d.bytes })))
  gauge('lsp_record_fragment_memory_bytes',
    'Bytes of the records\' JSON that FRAGMENTS_MAX_MB bounds: every dataset\'s chunks, the one kept ready, ' +
    'and those of a dataset dropped by a reload until they are freed',
    () => unlabelled(sources.fragmentMemory?.bytes ?? 0))
  gauge('lsp_dataset_built_timestamp_seconds',
    'When the served dataset file was built (its meta built_at), by dataset', () => sources.datasets.served()
      .map((d) => ({ labels: { dataset: d.dataset }, value: Date.parse(d.built_at) / 1000 })))
  gauge('lsp_partners', 'Partners known to this instance', () => unlabelled(sources.partners.size))
  gauge('lsp_control_db_writable',
    '1 while control.db takes writes, 0 while a job that writes to it fails (see /readyz)',
    () => unlabelled(sources.controlDb.writable ? 1 : 0))
  gauge('lsp_answer_cache_entries', 'Answers held in the cache', () => unlabelled(sources.cache.size))

  return {
    registry,
    /** Counts an answered request by route pattern (undefined: no route matched), method and status. */
    observe (route: string | undefined, method: string, status: number, seconds: number) {
      route ??= 'unmatched' // one label for them all, so random paths cannot grow the series
      let byMethod = byRoute.get(route)
      if (!byMethod) byRoute.set(route, byMethod = new Map())
      let byStatus = byMethod.get(method)
      if (!byStatus) byMethod.set(method, byStatus = new Map())
      let s = byStatus.get(status)
      if (!s) {
        s = { route, method, status: String(status), count: 0, sum: 0, buckets: new Float64Array(BUCKETS.length) }
        byStatus.set(status, s)
      }
      s.count++
      s.sum += seconds
      let i = 0
      while (i < BUCKETS.length && seconds > BUCKETS[i]) i++
      if (i < BUCKETS.length) s.buckets[i]++
    },
    /** Counts a dataset reload by its outcome. */
    reloaded: (ok: boolean) => { reloads[ok ? 'ok' : 'refused']++ },
    /** Counts a request refused with 429, by the partner's tier. */
    rateLimited: (tier: string) => { refusals.set(tier, (refusals.get(tier) ?? 0) + 1) }
  }
}
