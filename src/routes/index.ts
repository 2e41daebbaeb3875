// GET ${API_PREFIX}: this API's version, operations (the partner routes as declared) and datasets. Public,
// so no partner's permissions (those need the token: /usage).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { API_VERSION, ApiIndex, SUPPORT_DETAILS } from '../schemas/api-info.ts'

const indexRoutes: FastifyPluginAsyncTypebox<{ apiPrefix: string, supportContact: string }> = async (app, options) => {
  let operations: { method: string, path: string, summary: string }[] | undefined
  app.get(options.apiPrefix, {
    schema: {
      operationId: 'index', tags: ['service'], summary: 'This API: version, operations, datasets',
      response: { 200: ApiIndex }
    }
  }, (_request, reply) => {
    // every route is declared by the time a request arrives
    operations ??= app.declaredRoutes
      .filter((r) => r.config.endpoint !== undefined && r.method === 'GET')
      .map((r) => ({ method: r.method, path: r.url.replace(/:(\w+)/g, '{$1}'), summary: r.summary }))
    reply.header('cache-control', 'no-cache').send({
      name: 'Landing-Site Partner API',
      version: API_VERSION,
      documentation: { openapi: `${options.apiPrefix}/openapi.json`, docs: '/docs' },
      support: { contact: options.supportContact === '' ? null : options.supportContact, send: SUPPORT_DETAILS },
      operations,
      datasets: app.datasets.state()
    })
  })
}

export default indexRoutes
