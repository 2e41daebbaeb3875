// GET /usage, /categories and /tags: the partner's own windows, and what it may ask for. Never counted; /usage
// answers even while the partner is limited, and the lists are cached with ETags like the searches.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { datasetFor } from '../partners/permissions.ts'
import { UNCOUNTED_ERRORS } from '../schemas/errors.ts'
import { documentedErrors, responses } from '../schemas/responses.ts'
import { EXAMPLES } from '../schemas/examples.ts'
import { DemoQuery, UsageQuery } from '../schemas/queries.ts'
import { CategoryList, TagList, UsageReport } from '../schemas/discovery.ts'
import { categoryList, tagCounts } from '../sites/categories.ts'
import { usageReport } from '../usage/report.ts'

const discoveryRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/usage', {
    config: { endpoint: 'usage', counted: false },
    schema: {
      operationId: 'usage', tags: ['usage'],
      summary: 'Usage report: the three windows, and telemetry with expand=telemetry',
      querystring: UsageQuery,
      // Fastify serialises this answer by the schema; the examples are for the document
      response: {
        200: { ...UsageReport, description: 'The partner\'s usage report', 'x-examples': EXAMPLES.usage },
        ...documentedErrors(UNCOUNTED_ERRORS)
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

  app.get('/categories', {
    config: { endpoint: 'categories', cache: true, counted: false },
    schema: {
      operationId: 'categories', tags: ['discovery'], summary: 'The categories this partner may use, with their names',
      querystring: DemoQuery,
      response: responses(UNCOUNTED_ERRORS, 'The categories', CategoryList, EXAMPLES.categories)
    }
  }, (request, reply) => {
    const categories = categoryList(request.dataset!, request.partner.allowedCategories)
    reply.sendAnswer(Buffer.from(JSON.stringify({ categories })))
  })

  app.get('/tags', {
    config: { endpoint: 'tags', cache: true, counted: false },
    schema: {
      operationId: 'tags', tags: ['discovery'],
      summary: 'The tags of this partner\'s dataset, with their site counts within its categories',
      querystring: DemoQuery,
      response: responses(UNCOUNTED_ERRORS, 'The tags', TagList, EXAMPLES.tags)
    }
  }, (request, reply) => {
    const tags = tagCounts(request.dataset!, request.partner.allowedCategories)
    reply.sendAnswer(Buffer.from(JSON.stringify({ tags })))
  })
}

export default discoveryRoutes
