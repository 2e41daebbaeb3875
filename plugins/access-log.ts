// One access line per answered request (src/http/access-log.ts), registered in the context of the routes it logs
// (src/app.ts): the probes are outside it, so no hook tests for them. Nothing is hooked below the info level.
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { accessWriter } from '../src/http/access-log.ts'
import { redactUrl } from '../src/http/redact.ts'

async function accessLog (app: FastifyInstance) {
  if (!['trace', 'debug', 'info'].includes(app.log.level)) return
  // Written as the root logger would, with flat fields: no per-request child bindings or serialisers.
  const access = accessWriter(app.log)
  // first among the exit's listeners: the log's own (src/server.ts) then writes these lines too
  process.prependListener('exit', access.flush)
  app.addHook('onClose', async () => {
    access.flush()
    process.off('exit', access.flush)
  })
  // `ms` runs until the answer was handed to the socket (Fastify stops the clock before any
  // onResponse hook): the root's hooks (the metrics) and the partner context's are not in it.
  app.addHook('onResponse', (request, reply, done) => {
    access(
      request.id, request.method, redactUrl(request.url), request.ip, reply.statusCode,
      Math.round(reply.elapsedTime * 100) / 100, request.partner?.slug,
      request.cacheStatus === 'none' ? undefined : request.cacheStatus
    )
    done()
  })
}

export default fp(accessLog, { name: 'access-log' })
