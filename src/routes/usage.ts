// GET /usage: the partner's windows from the limiter, and on request the telemetry block.
// Never counted and answered even while the partner is limited.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { ErrorCode } from '../errors.ts'
import { datasetFor } from '../partners/permissions.ts'
import { documentedErrors } from '../schemas/responses.ts'
import { EXAMPLES } from '../schemas/examples.ts'
import { UsageQuery } from '../schemas/queries.ts'
import { UsageReport } from '../schemas/usage.ts'
import type { WindowState } from '../limits/limiter.ts'

export const USAGE_ERRORS: ErrorCode[] = ['rest_invalid_param']

function windowReport (w: WindowState, now: number) {
  return {
    limit: w.limit,
    used: w.used,
    remaining: w.remaining,
    window_seconds: w.seconds,
    resets_in_seconds: w.resetsInMs === null ? null : Math.ceil(w.resetsInMs / 1000),
    resets_at: w.resetsInMs === null ? null : new Date(now + w.resetsInMs).toISOString(),
    rows: w.rows
  }
}

const usageRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/usage', {
    config: { endpoint: 'usage', counted: false },
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
    const { now, windows: [minute, hour, day] } = await app.limiter.state(partner.id, partner.limits)
    // the dataset a request with the same demo= is served from
    const environment = datasetFor(partner, request.query.demo === true)
    return {
      timestamp: new Date(now).toISOString(),
      partner: { id: partner.id, slug: partner.slug, name: partner.name, environment, is_sandbox: environment === 'sandbox' },
      client: { ip: request.ip },
      windows: { minute: windowReport(minute, now), hour: windowReport(hour, now), day: windowReport(day, now) },
      ...(request.query.expand === 'telemetry' ? { telemetry: await app.telemetry.block(partner.id, now) } : {})
    }
  })
}

export default usageRoutes
