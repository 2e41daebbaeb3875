// GET /sites/along-route and GET /sites/by-bbox: the sites along a flight route, in the order they
// are passed, and the sites in a map's box, page by page.
import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { ErrorCode } from '../errors.ts'
import { GEOJSON_TYPE, nmFromKm } from '../answers/records.ts'
import { responses } from '../schemas/responses.ts'
import { EXAMPLES } from '../schemas/examples.ts'
import { AlongRouteQuery, ByBboxQuery, MAX_PER_PAGE } from '../schemas/queries.ts'
import { BboxFeatureCollection, RouteFeatureCollection } from '../schemas/geojson.ts'
import { BboxPage, RouteRecord } from '../schemas/records.ts'
import { AreaScratch, findAlongRoute, findInBox } from '../sites/areas.ts'
import { EARTH_RADIUS_KM } from '../sites/spatial.ts'
import { SEARCH_ERRORS, searchCategories } from './sites.ts'

export const AREA_ERRORS: ErrorCode[] = [...SEARCH_ERRORS, 'svc_partner_api_feature_disabled']

const nm = (radians: number) => nmFromKm(radians * EARTH_RADIUS_KM)

const areaRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { records } = app
  const scratch = new AreaScratch()

  app.get('/sites/along-route', {
    config: { endpoint: 'along-route', cache: true },
    schema: {
      operationId: 'sitesAlongRoute', tags: ['sites'],
      summary: 'Sites within a corridor along a flight route, in the order they are passed',
      querystring: AlongRouteQuery,
      response: responses(
        AREA_ERRORS,
        'Full records with along_nm and offset_nm, by along_nm, then offset_nm, then id ' +
          '(at most max_results: the first along the route)',
        Type.Array(RouteRecord), EXAMPLES.alongRoute, RouteFeatureCollection
      )
    }
  }, (request, reply) => {
    const { partner, query } = request
    const ds = request.dataset!
    const { positions, along, offset } = findAlongRoute(ds, query.path, {
      radiusKm: Math.min(query.radius, partner.radiusCapKm), limit: partner.maxResults,
      categories: searchCategories(partner, query.category_id), tag: query.tag
    }, scratch)
    request.rows = positions.length
    const fields: string[] = []
    for (let i = 0; i < positions.length; i++) fields.push(`,"along_nm":${nm(along[i])},"offset_nm":${nm(offset[i])}`)
    if (query.format === 'geojson') return reply.sendAnswer(records.sitesWithGeo(ds, positions, fields), GEOJSON_TYPE)
    return reply.sendAnswer(records.sitesWith(ds, positions, fields))
  })

  app.get('/sites/by-bbox', {
    config: { endpoint: 'by-bbox', cache: true },
    schema: {
      operationId: 'sitesByBbox', tags: ['sites'],
      summary: 'Sites in a map\'s box, map-minimal, in id order, paginated',
      querystring: ByBboxQuery,
      response: responses(AREA_ERRORS, 'One page of the sites in the box, map-minimal, in id order',
        BboxPage, EXAMPLES.byBbox, BboxFeatureCollection)
    }
  }, (request, reply) => {
    const { partner, query } = request
    const { bbox, page } = query
    const perPage = Math.min(query.per_page, MAX_PER_PAGE)
    const ds = request.dataset!
    const area = { categories: searchCategories(partner, query.category_id), tag: query.tag }
    const { total, sites, order } = findInBox(ds, bbox, area, (page - 1) * perPage, perPage, scratch)
    request.rows = sites.length
    // The same bytes as JSON.stringify of {bbox, page, per_page, total, total_pages, sites}.
    const paging = `"bbox":[${bbox.west},${bbox.south},${bbox.east},${bbox.north}],"page":${page},` +
      `"per_page":${perPage},"total":${total},"total_pages":${Math.ceil(total / perPage)}`
    // sites by tree slot: their records laid out where the box's sites lie together
    const shown = order === undefined ? sites : { order, places: sites }
    if (query.format === 'geojson') {
      const head = `{"type":"FeatureCollection",${paging},"features":`
      return reply.sendAnswer(records.minimalPageGeo(ds, shown, head, '}'), GEOJSON_TYPE)
    }
    return reply.sendAnswer(records.minimalPage(ds, shown, `{${paging},"sites":`, '}'))
  })
}

export default areaRoutes
