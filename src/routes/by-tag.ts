// GET /sites/by-tag: one tag's sites the partner may see, map-minimal, in id order, in pages.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { ErrorCode } from '../errors.ts'
import { GEOJSON_TYPE } from '../answers/records.ts'
import { TagFeatureCollection } from '../schemas/geojson.ts'
import { responses } from '../schemas/responses.ts'
import { EXAMPLES } from '../schemas/examples.ts'
import { ByTagQuery, MAX_PER_PAGE } from '../schemas/queries.ts'
import { TagPage } from '../schemas/records.ts'
import { tagPage } from '../sites/dataset.ts'

export const BY_TAG_ERRORS: ErrorCode[] = ['rest_missing_callback_param', 'rest_invalid_param',
  'svc_partner_api_feature_disabled', 'svc_partner_api_rate_limited', 'svc_partner_api_unavailable']

const byTagRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { records } = app
  app.get('/sites/by-tag', {
    config: { endpoint: 'by-tag', cache: true },
    schema: {
      operationId: 'sitesByTag', tags: ['sites'], summary: 'Sites of one tag, map-minimal, in id order, paginated',
      querystring: ByTagQuery,
      response: responses(BY_TAG_ERRORS, 'One page of the tag\'s sites, map-minimal, in id order',
        TagPage, EXAMPLES.byTag, TagFeatureCollection)
    }
  }, (request, reply) => {
    const { tag, page } = request.query
    const perPage = Math.min(request.query.per_page, MAX_PER_PAGE)
    const ds = request.dataset!
    const sites = tagPage(ds, tag, request.partner.allowedCategories, page, perPage)
    const { total } = sites
    request.rows = sites.places.length
    // JSON.stringify's bytes of {tag, page, per_page, total, total_pages, sites} (the tag is ASCII by its pattern)
    const paging = `"tag":${JSON.stringify(tag)},"page":${page},"per_page":${perPage},"total":${total},` +
      `"total_pages":${Math.ceil(total / perPage)}`
    if (request.query.format === 'geojson') {
      const head = `{"type":"FeatureCollection",${paging},"features":`
      return reply.sendAnswer(records.minimalPageGeo(ds, sites, head, '}'), GEOJSON_TYPE)
    }
    return reply.sendAnswer(records.minimalPage(ds, sites, `{${paging},"sites":`, '}'))
  })
}

export default byTagRoutes
