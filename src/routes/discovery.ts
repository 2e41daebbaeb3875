// GET /categories and GET /tags: what a partner may ask for. Never counted (like /usage); cached
// with ETags like the searches, since tags follow the dataset.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { responses } from '../schemas/responses.ts'
import { EXAMPLES } from '../schemas/examples.ts'
import { DemoQuery } from '../schemas/queries.ts'
import { CategoryList, TagList } from '../schemas/discovery.ts'
import { categoryList, tagCounts } from '../sites/categories.ts'

const discoveryRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/categories', {
    config: { endpoint: 'categories', cache: true, counted: false },
    schema: {
      operationId: 'categories', tags: ['discovery'], summary: 'The categories this partner may use, with their names',
      querystring: DemoQuery,
      response: responses(['rest_invalid_param'], 'The categories', CategoryList, EXAMPLES.categories)
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
      response: responses(['rest_invalid_param'], 'The tags', TagList, EXAMPLES.tags)
    }
  }, (request, reply) => {
    const tags = tagCounts(request.dataset!, request.partner.allowedCategories)
    reply.sendAnswer(Buffer.from(JSON.stringify({ tags })))
  })
}

export default discoveryRoutes
