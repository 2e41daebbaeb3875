// One access line per answered request, through the request's own logger; registered inside the context of
// the routes it logs, so that no hook tests for the operators' probes. Nothing is hooked below level info.
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { redactUrl } from '../src/http/redact.ts'

async function accessLog (app: FastifyInstance) {
  if (!['trace', 'debug', 'info'].includes(app.log.level)) return
  // `ms` runs until the answer was handed to the socket (Fastify stops the clock before any
  // onResponse hook)
  app.addHook('onResponse', (request, reply, done) => {
    request.log.info({
      method: request.method,
      url: redactUrl(request.url),
      ip: request.ip,
      status: reply.statusCode,
      ms: Math.round(reply.elapsedTime * 100) / 100,
      partner: request.partner?.slug,
      cache: request.cacheStatus === 'none' ? undefined : request.cacheStatus
    }, 'request')
    done()
  })
}

export default fp(accessLog, { name: 'access-log' })
