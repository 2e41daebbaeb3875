// GET /sites and GET /sites/nearest: nearest-first search within a radius.
import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ApiError, type ErrorCode } from '../errors.ts'
import type { PartnerProfile } from '../partners/permissions.ts'
import { GEOJSON_TYPE, NULL_JSON } from '../answers/records.ts'
import { responses } from '../schemas/responses.ts'
import { EXAMPLES } from '../schemas/examples.ts'
import { NearbyQuery, SitesQuery } from '../schemas/queries.ts'
import { SiteFeatureCollection } from '../schemas/geojson.ts'
import { NearestRecord, SiteRecord } from '../schemas/records.ts'
import { findNearby, type Dataset } from '../sites/dataset.ts'
import { NearbySearch } from '../sites/spatial.ts'

export const SEARCH_ERRORS: ErrorCode[] = ['rest_missing_callback_param', 'rest_invalid_param',
  'svc_partner_api_invalid_coordinates', 'svc_partner_api_ambiguous_coordinates',
  'svc_partner_api_category_not_permitted', 'svc_partner_api_rate_limited', 'svc_partner_api_unavailable']

/** The categories to search: the allow-list, or the one asked for if it is in the allow-list. */
export function searchCategories (partner: PartnerProfile, categoryId: number | undefined): readonly number[] {
  if (categoryId === undefined) return partner.allowedCategories
  if (!partner.allowedCategories.includes(categoryId)) throw new ApiError('svc_partner_api_category_not_permitted')
  return [categoryId]
}

const sitesRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { records } = app
  const nearby = new NearbySearch()

  const search = (request: { partner: PartnerProfile, query: NearbyQuery, dataset?: Dataset }, limit: number) => {
    const { partner, query } = request
    const categories = searchCategories(partner, query.category_id)
    const ds = request.dataset!
    const found = findNearby(ds, {
      lng: query.lng, lat: query.lat, radiusKm: Math.min(query.radius, partner.radiusCapKm),
      limit, categories, tag: query.tag
    }, nearby)
    return { ds, found }
  }

  app.get('/sites', {
    config: { endpoint: 'sites', cache: true },
    schema: {
      operationId: 'searchSites', tags: ['sites'], summary: 'Sites near a point, nearest first',
      querystring: SitesQuery,
      response: responses(SEARCH_ERRORS, 'Full records, nearest first (at most max_results)',
        Type.Array(SiteRecord), EXAMPLES.sites, SiteFeatureCollection)
    }
  }, (request, reply) => {
    const { ds, found } = search(request, request.partner.maxResults)
    request.rows = found.hits.length
    if (request.query.format === 'geojson') return reply.sendAnswer(records.sitesGeo(ds, found), GEOJSON_TYPE)
    return reply.sendAnswer(records.sites(ds, found))
  })

  app.get('/sites/nearest', {
    config: { endpoint: 'nearest', cache: true },
    schema: {
      operationId: 'nearestSite', tags: ['sites'], summary: 'The nearest site within the radius, or null',
      querystring: NearbyQuery,
      response: responses(SEARCH_ERRORS, 'The nearest record with its distance, or null',
        Type.Union([NearestRecord, Type.Null()]), EXAMPLES.nearest)
    }
  }, (request, reply) => {
    const { ds, found: { hits } } = search(request, 1)
    request.rows = hits.length
    return reply.sendAnswer(hits.length === 0 ? NULL_JSON : records.nearest(ds, hits[0].position, hits[0].h))
  })
}

export default sitesRoutes
