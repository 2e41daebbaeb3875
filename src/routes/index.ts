// GET ${API_PREFIX}: what this API is: its version, its operations, and what each dataset holds.
// Public; a partner's own permissions are not shown (they need the token: see /usage).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { API_VERSION } from '../../plugins/openapi.ts'
import { ApiIndex } from '../schemas/api-index.ts'

const OPERATIONS = [
  { path: '/sites', summary: 'Sites near a point, nearest first (format=geojson for GeoJSON)' },
  { path: '/sites/nearest', summary: 'The nearest site within the radius, or null' },
  { path: '/sites/by-tag', summary: 'Sites of one tag, map-minimal, in id order, paginated (format=geojson for GeoJSON)' },
  { path: '/sites/{id}', summary: 'One site by id, or null' },
  { path: '/usage', summary: 'Your three rate-limit windows; expand=telemetry adds recent events' }
]

const indexRoutes: FastifyPluginAsyncTypebox<{ apiPrefix: string }> = async (app, options) => {
  const operations = OPERATIONS.map((o) => ({ method: 'GET', path: options.apiPrefix + o.path, summary: o.summary }))
  app.get(options.apiPrefix, {
    schema: { operationId: 'index', tags: ['service'], summary: 'This API: version, operations, datasets', response: { 200: ApiIndex } }
  }, (_request, reply) => {
    const datasets = Object.fromEntries(app.datasets.served().map((d) => [d.dataset, { site_count: d.site_count, built_at: d.built_at }]))
    reply.header('cache-control', 'no-cache').send({
      name: 'Landing-Site Partner API',
      version: API_VERSION,
      documentation: { openapi: `${options.apiPrefix}/openapi.json`, docs: '/docs' },
      operations,
      datasets: datasets as { sandbox: { site_count: number, built_at: string }, production: { site_count: number, built_at: string } }
    })
  })
}

export default indexRoutes
