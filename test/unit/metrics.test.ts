// Node's process metrics are collected once per process: every app's registry (one per buildApp,
// several in a test process) shows the same ones, and none starts a monitor of its own that
// nothing would stop.
import { createRequire } from 'node:module'
import t from 'tap'
import { createMetrics, type MetricSources } from '../../src/metrics/metrics.ts'

const sources: MetricSources = {
  datasets: { served: () => [] },
  partners: { size: 0, rowsRead: 0 },
  controlDb: { writable: true },
  cache: { size: 0, lookups: { hit: 0, miss: 0 } }
}

/** `# TYPE` lines and sample names (labels' names, not their values): what a scrape is made of. */
const shape = (text: string) => text.split('\n').filter((l) => l !== '' && !l.startsWith('# HELP'))
  .map((l) => l.startsWith('#') ? l : l.slice(0, l.lastIndexOf(' ')).replace(/="[^"]*"/g, ''))

t.test('one event-loop monitor and one GC observer for the process, however many apps', async (t) => {
  // prom-client (CommonJS) calls these through the module objects, when its default metrics are made
  const perfHooks = createRequire(import.meta.url)('node:perf_hooks') as typeof import('node:perf_hooks')
  const calls = { monitorEventLoopDelay: 0, observe: 0 }
  const { monitorEventLoopDelay } = perfHooks
  const { observe } = perfHooks.PerformanceObserver.prototype
  perfHooks.monitorEventLoopDelay = (...args) => {
    calls.monitorEventLoopDelay++
    return monitorEventLoopDelay(...args)
  }
  perfHooks.PerformanceObserver.prototype.observe = function (...args) {
    calls.observe++
    return observe.apply(this, args)
  }
  t.teardown(() => {
    perfHooks.monitorEventLoopDelay = monitorEventLoopDelay
    perfHooks.PerformanceObserver.prototype.observe = observe
  })

  const apps = [createMetrics(sources), createMetrics(sources), createMetrics(sources)]
  t.same(calls, { monitorEventLoopDelay: 1, observe: 1 }, 'started once, by the first')
  const scrapes = await Promise.all(apps.map((m) => m.registry.metrics()))
  t.same(shape(scrapes[2]), shape(scrapes[0]), 'each app\'s registry shows the same metrics')
  const processMetrics = [
    'lsp_process_resident_memory_bytes', 'lsp_nodejs_eventloop_lag_p99_seconds', 'lsp_nodejs_gc_duration_seconds',
    'lsp_nodejs_heap_size_used_bytes'
  ]
  for (const name of processMetrics) {
    t.ok(scrapes.every((text) => text.includes(`\n# TYPE ${name} `)), name)
  }
  t.ok(scrapes[0].startsWith('# HELP lsp_process_cpu_user_seconds_total '), 'the process metrics first, as before')
  t.ok(scrapes.every((text) => text.includes('\n# TYPE lsp_http_requests_total counter\n')), 'and the app\'s own')
})

t.test('the shared state\'s gauge: absent without one, 0 while alone or not yet known, 1 while Redis is used',
  async (t) => {
    const scrape = async (sharedState?: MetricSources['sharedState']) =>
      await createMetrics({ ...sources, sharedState }).registry.getSingleMetricAsString('lsp_shared_state_connected')
        .catch(() => 'absent')
    t.equal(await scrape(), 'absent')
    const value = async (state: ReturnType<NonNullable<MetricSources['sharedState']>>) =>
      (await scrape(() => state)).split('\n').at(-1)
    t.equal(await value(undefined), 'lsp_shared_state_connected 0')
    t.equal(await value({ degraded: true, unavailableAnswers: 0 }), 'lsp_shared_state_connected 0')
    t.equal(await value({ degraded: false, unavailableAnswers: 0 }), 'lsp_shared_state_connected 1')
  })
