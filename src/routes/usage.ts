// GET /usage: the partner's windows from the limiter, and on request the telemetry block (built
// by src/usage/report.ts, which the operator CLI's `partners usage` shares).
// Never counted and answered even while the partner is limited.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { ErrorCode } from '../errors.ts'
import { datasetFor } from '../partners/permissions.ts'
import { documentedErrors } from '../schemas/responses.ts'
import { EXAMPLES } from '../schemas/examples.ts'
import { UsageQuery } from '../schemas/queries.ts'
import { UsageReport } from '../schemas/usage.ts'
import { usageReport } from '../usage/report.ts'
import { compress, encodingFor } from '../http/encoding.ts'

export const USAGE_ERRORS: ErrorCode[] = ['rest_invalid_param']

const usageRoutes: FastifyPluginAsyncTypebox = async (app) => {
  // A report is made for each request, never cached: compressed here when asked (the route's
  // `compressed` flag, for the document), by the rules of the cached answers (src/http/encoding.ts).
  app.addHook('onSend', (request, reply, payload, done) => {
    if (reply.statusCode !== 200 || typeof payload !== 'string') return done(null, payload)
    reply.header('vary', 'accept-encoding')
    const encoding = encodingFor(request.headers['accept-encoding'], Buffer.byteLength(payload))
    if (encoding === undefined) return done(null, payload)
    reply.header('content-encoding', encoding)
    done(null, compress(Buffer.from(payload), encoding))
  })
  app.get('/usage', {
    config: { endpoint: 'usage', counted: false, compressed: true },
    schema: {
      operationId: 'usage',
      tags: ['usage'],
      summary: 'Usage report: the three windows, and telemetry with expand=telemetry',
      querystring: UsageQuery,
      // Fastify serialises this answer by the schema; the examples are for the document
      response: { 200: { ...UsageReport, description: 'The partner\'s usage report', 'x-examples': EXAMPLES.usage }, ...documentedErrors(USAGE_ERRORS) }
    }
  }, async (request) => {
    const partner = request.partner
    const report = await usageReport(app, partner, {
      // the dataset a request with the same demo= is served from
      environment: datasetFor(partner, request.query.demo === true),
      telemetry: request.query.expand === 'telemetry'
    })
    return { ...report, client: { ip: request.ip } } // serialised in the schema's order
  })
}

export default usageRoutes
