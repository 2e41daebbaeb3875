// One error handler turns every error into the public error body and hides 5xx details. noRoute is set as
// the 404 handler by the context whose hooks unknown paths should run (the access-logged one).
import fp from 'fastify-plugin'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ApiError } from '../src/errors.ts'
import { JSON_TYPE } from '../src/answers/records.ts'

// Sent as JSON text: the schema serialiser would run a validator on every error to choose a `data.params` shape.
const send = (reply: FastifyReply, error: ApiError) =>
  reply.code(error.statusCode).type(JSON_TYPE).header('cache-control', 'no-store').send(error.toJson())

async function errors (app: FastifyInstance) {
  app.setErrorHandler((err: FastifyError | ApiError, request, reply) => {
    if (err instanceof ApiError) {
      if (err.statusCode >= 500) request.log.error({ code: err.code }, 'request failed')
      return send(reply, err)
    }
    const status = err.statusCode ?? 500
    if (status >= 500) {
      request.log.error({ err }, 'request failed')
      return send(reply, new ApiError('svc_partner_api_query_failed'))
    }
    // A framework 4xx (bad URL encoding...): its message may quote the URL, token and all: only the status passes.
    request.log.info({ code: err.code }, 'request refused by the framework')
    return send(reply, new ApiError('rest_bad_request', {}, status))
  })
}

/** The answer to a path no route serves. */
export const noRoute = (_request: FastifyRequest, reply: FastifyReply) => { send(reply, new ApiError('rest_no_route')) }

export default fp(errors, { name: 'errors' })
