// One error handler turns every error into the public error body and hides 5xx details;
// unknown paths answer rest_no_route.
import fp from 'fastify-plugin'
import type { FastifyError, FastifyInstance } from 'fastify'
import { ApiError } from '../src/errors.ts'

async function errors (app: FastifyInstance) {
  app.setErrorHandler((err: FastifyError | ApiError, request, reply) => {
    if (err instanceof ApiError) {
      if (err.statusCode >= 500) request.log.error({ code: err.code }, 'request failed')
      return reply.code(err.statusCode).send(err.toBody())
    }
    const status = err.statusCode ?? 500
    if (status >= 500) {
      request.log.error({ err }, 'request failed')
      return reply.code(500).send(new ApiError('svc_partner_api_query_failed').toBody())
    }
    // A framework 4xx (bad URL encoding, oversized header...): its message may quote the URL,
    // and so a token, so only the status is passed on.
    request.log.info({ code: err.code }, 'request refused by the framework')
    return reply.code(status).send(new ApiError('rest_bad_request', {}, undefined, status).toBody())
  })

  app.setNotFoundHandler((request, reply) => {
    reply.code(404).send(new ApiError('rest_no_route').toBody())
  })
}

export default fp(errors, { name: 'errors' })
