// One access line per answered request (src/http/access-log.ts). Registered inside the context
// of the routes it logs (src/app.ts): the operators' probes are declared outside it, so no
// request is asked where it is. Below info level nothing is hooked at all.
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { accessWriter } from '../src/http/access-log.ts'
import { redactUrl } from '../src/http/redact.ts'

export interface AccessLogOptions {
  /** the configured LOG_LEVEL: lines are written at trace, debug and info */
  level: string
  /** the logger is one built from loggerOptions (src/app.ts), whose line format is known */
  knownFormat: boolean
}

async function accessLog (app: FastifyInstance, options: AccessLogOptions) {
  if (!['trace', 'debug', 'info'].includes(options.level)) return
  // Written as the root logger would, with flat fields: no per-request child bindings or serialisers.
  const access = accessWriter(app.log, options.knownFormat)
  process.on('exit', access.flush)
  app.addHook('onClose', (_app, done) => {
    access.flush()
    process.off('exit', access.flush)
    done()
  })
  app.addHook('onResponse', (request, reply, done) => {
    access(request.id, request.method, redactUrl(request.url), request.ip, reply.statusCode, Math.round(reply.elapsedTime * 100) / 100,
      request.partner?.slug, request.cacheStatus === 'none' ? undefined : request.cacheStatus)
    done()
  })
}

export default fp(accessLog, { name: 'access-log' })
