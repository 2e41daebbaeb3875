import { Type, type Static } from '@sinclair/typebox'
import { CategoryId, DemoFlag, Latitude, Longitude, SiteId, Tag } from './common.ts'
import type { BoundingBox } from '../sites/areas.ts'
import type { Route } from '../sites/route.ts'

/** A radius in km, clamped to the partner's cap. */
const radius = (what: string, km: number) => Type.Number({
  exclusiveMinimum: 0, default: km,
  description: `${what} in km; default ${km}; above the partner cap (75 by default) it is clamped to the cap`
})

/** What narrows a search's sites, as on every search. */
const filters = { category_id: Type.Optional(CategoryId), tag: Type.Optional(Tag), demo: DemoFlag }
const nearby = { lat: Latitude, lng: Longitude, radius: radius('Search radius', 25), ...filters }

const Format = Type.Unsafe<'json' | 'geojson'>({
  type: 'string', enum: ['json', 'geojson'], default: 'json',
  description: 'json (default), or geojson for a GeoJSON FeatureCollection (RFC 7946) of the same records, ' +
    'sent as application/geo+json'
})

export const NearbyQuery = Type.Object(nearby)
export type NearbyQuery = Static<typeof NearbyQuery>

export const SitesQuery = Type.Object({ ...nearby, format: Format })

export const MAX_PER_PAGE = 500

const page = Type.Integer({
  minimum: 1, default: 1, description: 'Page number, from 1; past the last page the sites array is empty'
})
const perPage = Type.Integer({
  minimum: 1, default: 200, description: `Sites per page; default 200; above ${MAX_PER_PAGE} clamped to ${MAX_PER_PAGE}`
})

/** `x-parse` names the reader of a value made of several coordinates (src/http/area-params.ts). */
export const AlongRouteQuery = Type.Object({
  path: Type.Unsafe<Route>({
    type: 'string', 'x-parse': 'route',
    description: 'The route: 2 to 100 lat,lng points in decimal degrees separated by | (or %7C), ' +
      'flown along great circles, at most 1,000 nm in all; e.g. 51.47,-0.454|50.95,1.85|48.857,2.352'
  }),
  radius: radius('Half-width of the corridor', 10),
  ...filters,
  format: Format
})

export const ByBboxQuery = Type.Object({
  bbox: Type.Unsafe<BoundingBox>({
    type: 'string', 'x-parse': 'bbox',
    description: 'The box: west,south,east,north in decimal degrees (RFC 7946 order), edges included; ' +
      'west greater than east crosses the antimeridian; e.g. -0.2,51.45,-0.05,51.55'
  }),
  page, per_page: perPage, ...filters, format: Format
})

export const ByTagQuery = Type.Object({ tag: Tag, page, per_page: perPage, demo: DemoFlag, format: Format })

export const SiteParams = Type.Object({ id: SiteId })

export const DemoQuery = Type.Object({ demo: DemoFlag })

export const UsageQuery = Type.Object({
  expand: Type.Optional(Type.Unsafe<'telemetry'>({
    type: 'string', enum: ['telemetry'], description: 'telemetry adds the telemetry block'
  })),
  demo: DemoFlag
})
