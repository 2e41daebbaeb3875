// GET /usage: the partner's windows, and on request the telemetry block (as the CLI's `partners usage`).
// Never counted, and answered even while the partner is limited.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { ErrorCode } from '../errors.ts'
import { datasetFor } from '../partners/permissions.ts'
import { documentedErrors } from '../schemas/responses.ts'
import { EXAMPLES } from '../schemas/examples.ts'
import { UsageQuery } from '../schemas/queries.ts'
import { UsageReport } from '../schemas/usage.ts'
import { usageReport } from '../usage/report.ts'

export const USAGE_ERRORS: ErrorCode[] = ['rest_invalid_param']

const usageRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/usage', {
    config: { endpoint: 'usage', counted: false, compressed: true },
    schema: {
      operationId: 'usage', tags: ['usage'],
      summary: 'Usage report: the three windows, and telemetry with expand=telemetry',
      querystring: UsageQuery,
      // Fastify serialises this answer by the schema; the examples are for the document
      response: {
        200: { ...UsageReport, description: 'The partner\'s usage report', 'x-examples': EXAMPLES.usage },
        ...documentedErrors(USAGE_ERRORS)
      }
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
