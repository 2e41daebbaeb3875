// The partners' public documentation: the OpenAPI document at `${API_PREFIX}/openapi.json`, and a Swagger UI
// page at /docs whose assets come from the package, so that it works without internet access.
import compress from '@fastify/compress'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'

async function docsRoutes (app: FastifyInstance, options: { apiPrefix: string }) {
  // compressed in this context only (the page's script and the document are large): partner answers encode their own
  await app.register(compress)
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    // BaseLayout: no top bar offering to load another document; the page shows this one
    uiConfig: { docExpansion: 'list', deepLinking: true, defaultModelsExpandDepth: 0, layout: 'BaseLayout' },
    staticCSP: true
  })
  // serialised on first request, when every route is declared: the document does not change after
  let document: string | undefined
  app.get(`${options.apiPrefix}/openapi.json`, { schema: { hide: true } }, (_request, reply) => {
    document ??= JSON.stringify(app.swagger())
    // Vary on the plain form too (in @fastify/compress's spelling, which it leaves): shared caches keep forms apart
    reply.header('cache-control', 'public, max-age=300').header('vary', 'accept-encoding')
      .type('application/json; charset=utf-8').send(document)
  })
}

export default docsRoutes
