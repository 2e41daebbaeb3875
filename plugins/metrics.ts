// Prometheus metrics (prom-client), kept in a registry of this app's own: requests and latency by
// route and status, cache lookups, rate-limit refusals by tier, dataset sizes, reloads, control.db
// state, and Node's process metrics. src/metrics-server.ts serves them on METRICS_PORT, bound to
// loopback, apart from the partner port.
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'

declare module 'fastify' {
  interface FastifyInstance {
    metrics: Metrics
  }
}

export interface Metrics {
  registry: Registry
  reloads: Counter<'result'>
}

interface RouteSeries { count: { inc (): void }, latency: { observe (value: number): void } }

async function metrics (app: FastifyInstance) {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry, prefix: 'lsp_' })
  const requests = new Counter({ name: 'lsp_http_requests_total', help: 'HTTP requests answered, by route pattern, method and status', labelNames: ['route', 'method', 'status'], registers: [registry] })
  const latency = new Histogram({
    name: 'lsp_http_request_duration_seconds',
    help: 'Time from request to answer, by route pattern and status',
    labelNames: ['route', 'status'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry]
  })
  const cache = new Counter({ name: 'lsp_cache_lookups_total', help: 'Answer cache lookups, by result (hit or miss)', labelNames: ['result'], registers: [registry] })
  const refusals = new Counter({ name: 'lsp_rate_limit_refusals_total', help: 'Requests refused with 429, by partner tier', labelNames: ['tier'], registers: [registry] })
  const reloads = new Counter({ name: 'lsp_dataset_reloads_total', help: 'Dataset reloads (datasets reload, SIGHUP), by result (ok or refused)', labelNames: ['result'], registers: [registry] })
  for (const result of ['ok', 'refused']) reloads.inc({ result }, 0)
  for (const result of ['hit', 'miss']) cache.inc({ result }, 0)
  new Gauge({ // eslint-disable-line no-new
    name: 'lsp_dataset_sites',
    help: 'Sites served, by dataset',
    labelNames: ['dataset'],
    registers: [registry],
    collect () { for (const d of app.datasets.served()) this.set({ dataset: d.dataset }, d.site_count) }
  })
  new Gauge({ // eslint-disable-line no-new
    name: 'lsp_dataset_built_timestamp_seconds',
    help: 'When the served dataset file was built (its meta built_at), by dataset',
    labelNames: ['dataset'],
    registers: [registry],
    collect () { for (const d of app.datasets.served()) this.set({ dataset: d.dataset }, Date.parse(d.built_at) / 1000) }
  })
  new Gauge({ // eslint-disable-line no-new
    name: 'lsp_partners',
    help: 'Partners known to this instance',
    registers: [registry],
    collect () { this.set(app.partners.size) }
  })
  new Gauge({ // eslint-disable-line no-new
    name: 'lsp_control_db_writable',
    help: '1 while control.db takes writes, 0 while a job that writes to it fails (see /readyz)',
    registers: [registry],
    collect () { this.set(app.controlDb.writable ? 1 : 0) }
  })
  new Gauge({ // eslint-disable-line no-new
    name: 'lsp_answer_cache_entries',
    help: 'Answers held in the cache',
    registers: [registry],
    collect () { this.set(app.responseCache.size) }
  })

  // one pair of children per route and status, looked up by a string: no label hashing per request
  const series = new Map<string, RouteSeries>()
  const seriesOf = (route: string, method: string, status: number): RouteSeries => {
    const key = `${method} ${status} ${route}`
    const known = series.get(key)
    if (known) return known
    const code = String(status)
    const made = { count: requests.labels(route, method, code), latency: latency.labels(route, code) }
    series.set(key, made)
    return made
  }

  app.addHook('onResponse', (request, reply, done) => {
    // unmatched URLs share one label, so random paths cannot grow the series
    const s = seriesOf(request.route.url ?? 'unmatched', request.method, reply.statusCode)
    s.count.inc()
    s.latency.observe(reply.elapsedTime / 1000)
    if (request.cacheStatus !== 'none') cache.inc({ result: request.cacheStatus })
    if (reply.statusCode === 429 && request.partner) refusals.inc({ tier: request.partner.tier })
    done()
  })

  app.decorate('metrics', { registry, reloads })
}

export default fp(metrics, { name: 'metrics', dependencies: ['health', 'datasets', 'partners', 'route-config'] })
