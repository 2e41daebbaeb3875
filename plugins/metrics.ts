// The service's metrics (src/metrics/metrics.ts): every answered request is observed here. Their
// server (src/metrics/server.ts, METRICS_PORT on 127.0.0.1) is the app's too: started by
// app.listenMetrics(), closed by app.close().
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { createMetrics, type MetricSources, type Metrics } from '../src/metrics/metrics.ts'
import { startMetricsServer, type MetricsServer } from '../src/metrics/server.ts'
import { DATASETS } from '../src/sites/dataset-file.ts'

declare module 'fastify' {
  interface FastifyInstance {
    metrics: Metrics
    /**
     * Serves GET /metrics on METRICS_PORT and logs where; resolves to its URL. Called before the partner port listens
     * (src/server.ts), so that a port in use fails the start; inject-only tests never call it and bind nothing.
     */
    listenMetrics (): Promise<string>
  }
}

/** `log`: the log's destination, whose dropped lines are counted (none when a test gives its own logger). */
async function metrics (app: FastifyInstance, options: { log?: MetricSources['log'], port: number }) {
  const { datasets, records } = app
  const metrics = createMetrics({
    datasets,
    partners: app.partners,
    controlDb: app.controlDb,
    cache: app.responseCache,
    log: options.log,
    fragmentBytes: () => DATASETS.map((name) => ({ dataset: name, bytes: records.fragmentBytes(datasets.get(name)) })),
    fragmentMemory: records.memory,
    // the usage plugin, registered after this one, decorates it
    sharedState: app.redis === undefined ? undefined : () => app.sharedState
  })
  app.decorate('metrics', metrics)
  app.addHook('onResponse', (request, reply, done) => {
    metrics.observe(request.routeOptions.url, request.method, reply.statusCode, reply.elapsedTime / 1000)
    done()
  })

  let server: MetricsServer | undefined
  let closing = false
  app.decorate('listenMetrics', async () => {
    if (closing) throw new Error('the app is closed: no metrics server')
    if (server !== undefined) throw new Error('the metrics server is already listening')
    server = await startMetricsServer(metrics.registry, options.port)
    if (closing) {
      await server.close()
      throw new Error('the app closed while the metrics server started')
    }
    // tools read this line (and tests the URL in it): its text and fields stay as they are
    app.log.info({ url: server.url }, `metrics listening at ${server.url}`)
    return server.url
  })
  // As soon as a close starts (before the partner server waits for the requests in flight): Prometheus sees the
  // instance gone at once, and a scrape connection kept alive cannot hold the close.
  app.addHook('preClose', async () => {
    closing = true
    await server?.close()
  })
}

export default fp(metrics, {
  name: 'metrics', dependencies: ['health', 'shared-state', 'records', 'datasets', 'partners', 'cache']
})
