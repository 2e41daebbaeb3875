// GET /sites/{id}: one full record, for partners with site_by_id; null when unknown or not allowed.
import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { ErrorCode } from '../errors.ts'
import { NULL_JSON } from '../answers/records.ts'
import { responses } from '../schemas/responses.ts'
import { EXAMPLES } from '../schemas/examples.ts'
import { DemoQuery, SiteParams } from '../schemas/queries.ts'
import { SiteRecord } from '../schemas/records.ts'
import { positionOf } from '../sites/dataset.ts'

export const SITE_ERRORS: ErrorCode[] = ['rest_invalid_param', 'svc_partner_api_feature_disabled',
  'svc_partner_api_rate_limited', 'svc_partner_api_unavailable']

const siteByIdRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { records } = app
  app.get('/sites/:id', {
    config: { endpoint: 'site', cache: true },
    schema: {
      operationId: 'siteById', tags: ['sites'],
      summary: 'One site by id, or null when it is unknown or outside the allow-list',
      params: SiteParams,
      querystring: DemoQuery,
      response: responses(SITE_ERRORS, 'The full record, or null', Type.Union([SiteRecord, Type.Null()]), EXAMPLES.site)
    }
  }, (request, reply) => {
    const ds = request.dataset!
    const position = positionOf(ds, request.params.id)
    if (position < 0 || !request.partner.allowedCategories.includes(ds.categories[position])) {
      return reply.sendAnswer(NULL_JSON)
    }
    request.rows = 1
    return reply.sendAnswer(records.site(ds, position))
  })
}

export default siteByIdRoutes
