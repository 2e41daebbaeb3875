// Each answer to a partner, recorded where /usage reads it: its rows in the limiter's windows
// (accepted requests only) and its telemetry event. Done in onSend, before the answer's bytes go
// out, not in onResponse after: whoever has an answer, asking this instance or another one that
// shares the state (STATE_URL), finds it in /usage. Registered after the cache, whose onSend hook
// may still turn a 200 into a 304, so the status recorded is the one sent.
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'

async function usageRecord (app: FastifyInstance) {
  const { limiter, telemetry } = app
  app.addHook('onSend', (request, reply, payload, done) => {
    const endpoint = request.route.config.endpoint
    // /usage is neither counted (the limiter passes it by: no limitSeq) nor an event
    if (endpoint === undefined || endpoint === 'usage' || !request.partner) return done(null, payload)
    const status = reply.statusCode
    const rows = status === 200 ? request.rows : 0
    if (request.limitSeq !== undefined && rows > 0) {
      const set = limiter.setRows(request.partner.id, request.limitSeq, rows)
      if (set instanceof Promise) set.catch((err) => app.log.error({ err }, 'rows could not be recorded'))
    }
    telemetry.record(request.partner.id, {
      timestamp: limiter.clock(),
      endpoint,
      status,
      rows,
      durationMs: Math.round(reply.elapsedTime * 100) / 100,
      dataset: request.dataset?.name ?? null,
      cache: request.cacheStatus
    })
    done(null, payload)
  })
}

export default fp(usageRecord, { name: 'usage-record', dependencies: ['rate-limit', 'cache'] })
