// Operators' probes, outside API_PREFIX, without a token, access lines or OpenAPI entry: /healthz says the
// process answers, /readyz whether it can serve partners and why not (nothing about them beyond counts).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Liveness, Readiness } from '../schemas/health.ts'

const healthRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/healthz', { schema: { hide: true, response: { 200: Liveness } } }, (_request, reply) => {
    reply.header('cache-control', 'no-store').send({ status: 'ok' as const })
  })

  app.get('/readyz', { schema: { hide: true, response: { 200: Readiness, 503: Readiness } } }, (_request, reply) => {
    const health = app.controlDb
    const ready = health.readable && health.writable
    const shared = app.sharedState?.status()
    reply.header('cache-control', 'no-store').code(ready ? 200 : 503).send({
      status: !ready ? 'not_ready' as const : shared && !shared.connected ? 'degraded' as const : 'ready' as const,
      datasets: app.datasets.state(),
      control_db: { readable: health.readable, writable: health.writable, failures: health.failures() },
      shared_state: shared ?? { backend: 'embedded' as const }
    })
  })
}

export default healthRoutes
