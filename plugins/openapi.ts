// The OpenAPI 3.1 document (app.swagger(), from the routes' TypeBox schemas) and the list of declared routes;
// registered at the root before the routes, since both collect them as they are declared.
import fp from 'fastify-plugin'
import swagger from '@fastify/swagger'
import type { FastifyContextConfig, FastifyInstance } from 'fastify'
import { withHeaders, type OpenApiResponse } from '../src/schemas/responses.ts'
import { API_VERSION, apiDescription } from '../src/schemas/api-info.ts'

/** A route as declared (its url with `:param`); a partner route's config names its endpoint and pipeline. */
interface DeclaredRoute { method: string, url: string, hidden: boolean, summary: string, config: FastifyContextConfig }

declare module 'fastify' {
  interface FastifyInstance {
    /** every route declared after this plugin (for the API index and the document's tests) */
    declaredRoutes: DeclaredRoute[]
  }
}

interface QuerySchema { properties: Record<string, Record<string, unknown>>, required?: string[] }

/** A query schema as partners read it: with a default, a parameter is optional; the parser's x- marks are left out. */
function documentedQuery (schema: QuerySchema): QuerySchema {
  const properties = Object.fromEntries(Object.entries(schema.properties).map(([name, s]) =>
    [name, Object.fromEntries(Object.entries(s).filter(([key]) => !key.startsWith('x-')))]))
  const required = (schema.required ?? []).filter((name) => schema.properties[name].default === undefined)
  return { ...schema, properties, required }
}

async function openapi (app: FastifyInstance, { supportContact: contact }: { supportContact: string }) {
  const declared: FastifyInstance['declaredRoutes'] = []
  app.decorate('declaredRoutes', declared)
  app.addHook('onRoute', (route) => {
    const schema = route.schema as { hide?: boolean, summary?: string } | undefined
    const config = route.config ?? {}
    for (const method of [route.method].flat()) {
      declared.push({ method, url: route.url, hidden: schema?.hide === true, summary: schema?.summary ?? '', config })
    }
  })
  // the value the cache sends (src/cache/response-cache.ts)
  const cacheControl = app.responseCache.cacheControl
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Landing-Site Partner API',
        version: API_VERSION,
        description: apiDescription(cacheControl, contact),
        ...(contact === '' ? {} : { contact: contactOf(contact) })
      },
      // the origin the document is served from: Try it out calls this very service
      servers: [{ url: '/', description: 'this service' }],
      tags: [
        { name: 'sites', description: 'Landing sites' },
        { name: 'usage', description: 'Your rate-limit windows and telemetry' },
        { name: 'discovery', description: 'The categories and tags you may ask for' },
        { name: 'service', description: 'What this API is (no token)' }
      ],
      components: {
        securitySchemes: {
          api_key: { type: 'apiKey', in: 'query', name: 'api_key', description: 'The partner token' },
          bearer: {
            type: 'http', scheme: 'bearer',
            description: 'The partner token, sent as the header Authorization: Bearer followed by the token'
          }
        }
      },
      security: [{ api_key: [] }, { bearer: [] }]
    },
    transform: ({ schema, url, route }) => {
      const transformed = { ...schema } as Record<string, unknown>
      // routes that need no token say so
      if (route.config?.endpoint === undefined) transformed.security = []
      if (schema.querystring) transformed.querystring = documentedQuery(schema.querystring as QuerySchema)
      return { schema: transformed as typeof schema, url }
    },
    // the headers of each operation (a partner one's from the flags by which its pipeline sets them)
    transformObject: (document) => {
      type Paths = Record<string, Record<string, { responses: Record<string, OpenApiResponse> }>>
      const { openapiObject } = document as { openapiObject: { paths: Paths } }
      const paths = openapiObject.paths
      for (const route of declared.filter((r) => !r.hidden)) {
        const operation = paths[route.url.replace(/:(\w+)/g, '{$1}')]?.[route.method.toLowerCase()]
        if (operation) withHeaders(operation.responses, route.config, cacheControl)
      }
      return openapiObject
    }
  })
}

/** An OpenAPI contact object: an e-mail address, a URL, or a name. */
function contactOf (contact: string): { name: string, email?: string, url?: string } {
  if (/^[^\s@]+@[^\s@]+$/.test(contact)) return { name: 'Support', email: contact }
  if (/^https?:\/\//.test(contact)) return { name: 'Support', url: contact }
  return { name: contact }
}

export default fp(openapi, { name: 'openapi', dependencies: ['cache'] })
