// The site searches: near a point (/sites, /sites/nearest), by tag, along a flight route, in a map's box, and one
// site by id. Each writes its answer's JSON (or GeoJSON with format=geojson) with src/answers/records.ts.
import { Type } from '@sinclair/typebox'
import { Nullable } from '../schemas/common.ts'
import type { FastifyReply } from 'fastify'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ApiError } from '../errors.ts'
import type { PartnerProfile } from '../partners/permissions.ts'
import { GEOJSON_TYPE, NULL_JSON, nmFromKm, type Placed } from '../answers/records.ts'
import { AREA_ERRORS, BY_TAG_ERRORS, SEARCH_ERRORS, SITE_ERRORS } from '../schemas/errors.ts'
import { responses } from '../schemas/responses.ts'
import { EXAMPLES } from '../schemas/examples.ts'
import {
  AlongRouteQuery, ByBboxQuery, ByTagQuery, DemoQuery, MAX_PER_PAGE, NearbyQuery, SiteParams, SitesQuery
} from '../schemas/queries.ts'
import {
  BboxFeatureCollection, BboxPage, NearestRecord, RouteFeatureCollection, RouteRecord, SiteFeatureCollection,
  SiteRecord, TagFeatureCollection, TagPage
} from '../schemas/records.ts'
import { findNearby, positionOf, tagPage, type Dataset } from '../sites/dataset.ts'
import { AreaScratch, findAlongRoute, findInBox } from '../sites/areas.ts'
import { EARTH_RADIUS_KM, NearbySearch } from '../sites/spatial.ts'

/** The categories to search: the allow-list, or the one asked for if it is in the allow-list. */
function searchCategories (partner: PartnerProfile, categoryId: number | undefined): readonly number[] {
  if (categoryId === undefined) return partner.allowedCategories
  if (!partner.allowedCategories.includes(categoryId)) throw new ApiError('svc_partner_api_category_not_permitted')
  return [categoryId]
}

const nm = (radians: number) => nmFromKm(radians * EARTH_RADIUS_KM)

const sitesRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { records } = app
  const nearby = new NearbySearch()
  const scratch = new AreaScratch()

  /**
   * A page of map-minimal records after its paging fields, as JSON or as a GeoJSON FeatureCollection: the bytes
   * JSON.stringify makes of {…, page, per_page, total, total_pages, sites} after what the page is of (a tag, a box).
   */
  const sendPage = (
    reply: FastifyReply, ds: Dataset, sites: Placed | Uint32Array, of: string,
    query: { page: number, format: string }, perPage: number, total: number
  ) => {
    const paging = `${of},"page":${query.page},"per_page":${perPage},"total":${total},` +
      `"total_pages":${Math.ceil(total / perPage)}`
    if (query.format !== 'geojson') return reply.sendAnswer(records.minimalPage(ds, sites, `{${paging},"sites":`, '}'))
    const head = `{"type":"FeatureCollection",${paging},"features":`
    return reply.sendAnswer(records.minimalPageGeo(ds, sites, head, '}'), GEOJSON_TYPE)
  }

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
        Nullable(NearestRecord), EXAMPLES.nearest)
    }
  }, (request, reply) => {
    const { ds, found: { hits } } = search(request, 1)
    request.rows = hits.length
    return reply.sendAnswer(hits.length === 0 ? NULL_JSON : records.nearest(ds, hits[0].position, hits[0].h))
  })

  app.get('/sites/by-tag', {
    config: { endpoint: 'by-tag', cache: true },
    schema: {
      operationId: 'sitesByTag', tags: ['sites'], summary: 'Sites of one tag, map-minimal, in id order, paginated',
      querystring: ByTagQuery,
      response: responses(BY_TAG_ERRORS, 'One page of the tag\'s sites, map-minimal, in id order',
        TagPage, EXAMPLES.byTag, TagFeatureCollection)
    }
  }, (request, reply) => {
    const { query } = request
    const perPage = Math.min(query.per_page, MAX_PER_PAGE)
    const ds = request.dataset!
    const sites = tagPage(ds, query.tag, request.partner.allowedCategories, query.page, perPage)
    request.rows = sites.places.length
    // the tag is ASCII by its pattern
    return sendPage(reply, ds, sites, `"tag":${JSON.stringify(query.tag)}`, query, perPage, sites.total)
  })

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
    const { bbox } = query
    const perPage = Math.min(query.per_page, MAX_PER_PAGE)
    const ds = request.dataset!
    const area = { categories: searchCategories(partner, query.category_id), tag: query.tag }
    const { total, sites, order } = findInBox(ds, bbox, area, (query.page - 1) * perPage, perPage, scratch)
    request.rows = sites.length
    // sites by tree slot: their records laid out where the box's sites lie together
    const shown = order === undefined ? sites : { order, places: sites }
    const of = `"bbox":[${bbox.west},${bbox.south},${bbox.east},${bbox.north}]`
    return sendPage(reply, ds, shown, of, query, perPage, total)
  })

  app.get('/sites/:id', {
    config: { endpoint: 'site', cache: true },
    schema: {
      operationId: 'siteById', tags: ['sites'],
      summary: 'One site by id, or null when it is unknown or outside the allow-list',
      params: SiteParams,
      querystring: DemoQuery,
      response: responses(SITE_ERRORS, 'The full record, or null', Nullable(SiteRecord), EXAMPLES.site)
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

export default sitesRoutes
