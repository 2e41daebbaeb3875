// The partners' documentation, public: the OpenAPI document (plugins/openapi.ts makes it) at
// `${API_PREFIX}/openapi.json`, and a Swagger UI page rendering it at /docs (its assets are served
// from the package: the page works without internet access).
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'

async function docsRoutes (app: FastifyInstance, options: { apiPrefix: string }) {
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    // BaseLayout: no top bar offering to load another document; the page shows this one
    uiConfig: { docExpansion: 'list', deepLinking: true, defaultModelsExpandDepth: 0, layout: 'BaseLayout' },
    staticCSP: true
  })
  app.get(`${options.apiPrefix}/openapi.json`, { schema: { hide: true } }, (_request, reply) => {
    reply.header('cache-control', 'public, max-age=300').send(app.swagger())
  })
}

export default docsRoutes
