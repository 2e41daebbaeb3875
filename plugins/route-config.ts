// The route's config and URL pattern, read once per request: `request.routeOptions` builds a new
// object on every access, and the hooks of the other plugins ask for it several times a request.
import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyRequest } from 'fastify'

declare module 'fastify' {
  interface FastifyRequest {
    route: { config: FastifyContextConfig, url: string | undefined }
  }
}

async function routeConfig (app: FastifyInstance) {
  app.decorateRequest('route', null as unknown as FastifyRequest['route'])
  app.addHook('onRequest', (request, reply, done) => {
    const { config, url } = request.routeOptions
    request.route = { config, url }
    done()
  })
}

export default fp(routeConfig, { name: 'route-config' })
