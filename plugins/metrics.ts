// The service's metrics (src/metrics/metrics.ts): every answered request is observed here.
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { createMetrics, type MetricSources, type Metrics } from '../src/metrics/metrics.ts'
import { DATASETS } from '../src/sites/dataset-file.ts'

declare module 'fastify' {
  interface FastifyInstance {
    metrics: Metrics
  }
}

export interface MetricsOptions {
  /** the log's destination, whose dropped lines are counted (none when a test gives its own logger) */
  log?: MetricSources['log']
}

async function metrics (app: FastifyInstance, options: MetricsOptions) {
  const { datasets, records } = app
  const metrics = createMetrics({
    datasets,
    partners: app.partners,
    controlDb: app.controlDb,
    cache: app.responseCache,
    log: options.log,
    fragmentBytes: () => DATASETS.map((name) => ({ dataset: name, bytes: records.fragmentBytes(datasets.get(name)) })),
    fragmentMemory: records.memory
  })
  app.decorate('metrics', metrics)
  app.addHook('onResponse', (request, reply, done) => {
    metrics.observe(request.routeOptions.url, request.method, reply.statusCode, reply.elapsedTime / 1000)
    done()
  })
}

export default fp(metrics, { name: 'metrics', dependencies: ['health', 'records', 'datasets', 'partners', 'cache'] })
