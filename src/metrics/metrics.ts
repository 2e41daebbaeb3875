// Prometheus metrics (prom-client), kept in a registry of this service's own: requests and latency
// by route and status, cache lookups, rate-limit refusals by tier, dataset sizes, the records' JSON
// in memory, reloads, partner rows read, control.db state, log lines dropped, and Node's process
// metrics (src/metrics/server.ts serves them on METRICS_PORT). Node's process metrics are made once per
// process and shown by every app's registry (a test process builds many apps).
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'

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

export interface Metrics {
  registry: Registry
  /** counts an answered request by route pattern (undefined: no route matched), method and status */
  observe (route: string | undefined, method: string, status: number, seconds: number): void
  /** counts a dataset reload by its outcome */
  reloaded (ok: boolean): void
  /** counts a request refused with 429, by the partner's tier */
  rateLimited (tier: string): void
}

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]

let processMetrics: Registry | undefined

/**
 * Node's process metrics (prom-client's default metrics), made on first use and kept for the
 * process: they start an event-loop delay monitor and a GC observer that nothing can stop, so one
 * set per app would add one of each per buildApp. They describe the process, not an app.
 */
function processRegistry (): Registry {
  if (processMetrics === undefined) {
    processMetrics = new Registry()
    collectDefaultMetrics({ register: processMetrics, prefix: 'lsp_' })
  }
  return processMetrics
}

export function createMetrics (sources: MetricSources): Metrics {
  // a registry of the app's own that starts with the process's metric objects (shared, not copied)
  const registry = Registry.merge([processRegistry()])
  const registers = [registry]
  const requests = new Counter({
    name: 'lsp_http_requests_total',
    help: 'HTTP requests answered, by route pattern, method and status',
    labelNames: ['route', 'method', 'status'],
    registers
  })
  // the latency is by route and status only (GET is the only method that answers)
  const duration = new Histogram({
    name: 'lsp_http_request_duration_seconds',
    help: 'Time from request to answer, by route pattern and status',
    labelNames: ['route', 'status'],
    buckets: BUCKETS,
    registers
  })
  /** A count kept elsewhere (by the log, the records, ...), read when Prometheus scrapes. */
  const countedElsewhere = (name: string, help: string, read: () => number) => new Counter({
    name, help, registers, collect () { this.reset(); this.inc(read()) }
  })
  const lookups = sources.cache.lookups
  new Counter({ // eslint-disable-line no-new
    name: 'lsp_cache_lookups_total',
    help: 'Answer cache lookups, by result (hit or miss)',
    labelNames: ['result'],
    registers,
    collect () {
      this.reset()
      this.inc({ result: 'hit' }, lookups.hit)
      this.inc({ result: 'miss' }, lookups.miss)
    }
  })
  const refusals = new Counter({
    name: 'lsp_rate_limit_refusals_total',
    help: 'Requests refused with 429, by partner tier',
    labelNames: ['tier'],
    registers
  })
  countedElsewhere('lsp_shared_state_unavailable_total',
    'Requests answered 503 svc_partner_api_unavailable: the shared state (Redis) could not be read or written and ' +
    'nothing was known of a limited window of the partner',
    () => sources.sharedState?.()?.unavailableAnswers ?? 0)
  if (sources.sharedState !== undefined) {
    const sharedState = sources.sharedState
    new Gauge({ // eslint-disable-line no-new
      name: 'lsp_shared_state_connected',
      help: '1 while the shared state (Redis, STATE_URL) is used, 0 while this instance limits alone (see /readyz); ' +
        'absent without STATE_URL',
      registers,
      collect () { this.set(sharedState()?.degraded === false ? 1 : 0) }
    })
  }
  countedElsewhere('lsp_log_lines_dropped_total',
    'Log lines dropped because more than LOG_BUFFER_MB were waiting for their reader',
    () => sources.log?.droppedLines ?? 0)
  countedElsewhere('lsp_record_fragment_chunks_forgotten_total',
    'Chunks (8 MB) of the records\' JSON forgotten to stay within FRAGMENTS_MAX_MB; ' +
    'their records are made again when asked for',
    () => sources.fragmentMemory?.forgotten ?? 0)
  countedElsewhere('lsp_partner_rows_read_total',
    'Partner rows read from control.db or Redis: all at boot, then those of the partners changed',
    () => sources.partners.rowsRead)
  const reloads = new Counter({
    name: 'lsp_dataset_reloads_total',
    help: 'Dataset reloads (datasets reload, SIGHUP), by result (ok or refused)',
    labelNames: ['result'],
    registers
  })
  reloads.inc({ result: 'ok' }, 0)
  reloads.inc({ result: 'refused' }, 0)
  new Gauge({ // eslint-disable-line no-new
    name: 'lsp_dataset_sites',
    help: 'Sites served, by dataset',
    labelNames: ['dataset'],
    registers,
    collect () { for (const d of sources.datasets.served()) this.set({ dataset: d.dataset }, d.site_count) }
  })
  new Gauge({ // eslint-disable-line no-new
    name: 'lsp_record_fragment_bytes',
    help: 'Bytes allocated for the records\' JSON, made on first use and kept (8 MB chunks, filled as records ' +
      'are made; all datasets together within FRAGMENTS_MAX_MB), by dataset: most of the memory that grows under load',
    labelNames: ['dataset'],
    registers,
    collect () { for (const d of sources.fragmentBytes?.() ?? []) this.set({ dataset: d.dataset }, d.bytes) }
  })
  new Gauge({ // eslint-disable-line no-new
    name: 'lsp_record_fragment_memory_bytes',
    help: 'Bytes of the records\' JSON that FRAGMENTS_MAX_MB bounds: every dataset\'s chunks, the one kept ready, ' +
      'and those of a dataset dropped by a reload until they are freed',
    registers,
    collect () { this.set(sources.fragmentMemory?.bytes ?? 0) }
  })
  new Gauge({ // eslint-disable-line no-new
    name: 'lsp_dataset_built_timestamp_seconds',
    help: 'When the served dataset file was built (its meta built_at), by dataset',
    labelNames: ['dataset'],
    registers,
    collect () {
      for (const d of sources.datasets.served()) this.set({ dataset: d.dataset }, Date.parse(d.built_at) / 1000)
    }
  })
  new Gauge({ // eslint-disable-line no-new
    name: 'lsp_partners',
    help: 'Partners known to this instance',
    registers,
    collect () { this.set(sources.partners.size) }
  })
  new Gauge({ // eslint-disable-line no-new
    name: 'lsp_control_db_writable',
    help: '1 while control.db takes writes, 0 while a job that writes to it fails (see /readyz)',
    registers,
    collect () { this.set(sources.controlDb.writable ? 1 : 0) }
  })
  new Gauge({ // eslint-disable-line no-new
    name: 'lsp_answer_cache_entries',
    help: 'Answers held in the cache',
    registers,
    collect () { this.set(sources.cache.size) }
  })

  return {
    registry,
    observe (route: string | undefined, method: string, status: number, seconds: number) {
      // unmatched URLs share one label, so random paths cannot grow the series
      route ??= 'unmatched'
      requests.inc({ route, method, status })
      duration.observe({ route, status }, seconds)
    },
    reloaded: (ok: boolean) => reloads.inc({ result: ok ? 'ok' : 'refused' }),
    rateLimited: (tier: string) => refusals.inc({ tier })
  }
}
