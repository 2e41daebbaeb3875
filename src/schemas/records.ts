// The site answers: their records and pages, and their GeoJSON (RFC 7946) forms, where each record becomes the
// properties of a Point feature at [longitude, latitude] whose id is the site id.
import { Type, type Static, type TProperties, type TSchema } from '@sinclair/typebox'

const fields = {
  id: Type.String({ description: 'Site ID' }),
  category: Type.String({ description: 'Category ID' }),
  name: Type.String({ description: 'Site name' }),
  region: Type.String({ description: 'Region code, three upper-case letters (continent)' }),
  country: Type.String({ description: 'Country code, two upper-case letters' }),
  latitude: Type.Number({ description: 'Obscured, approximate latitude' }),
  longitude: Type.Number({ description: 'Obscured, approximate longitude' }),
  distance_nm: Type.Number({
    description: 'Great-circle distance from the query point in nautical miles (km / 1.852, 3 decimals)'
  }),
  helipaddy_link: Type.String({ description: 'Page of the site in the pilot web app' }),
  along_nm: Type.Number({
    description: 'Distance along the route from its first point to the route\'s point nearest the site, ' +
      'in nautical miles (3 decimals)'
  }),
  offset_nm: Type.Number({ description: 'Distance of the site from the route in nautical miles (3 decimals)' })
}

/** A record of these fields, in this order, and no other. */
function record<K extends keyof typeof fields> (keys: K[], description: string) {
  const properties = Object.fromEntries(keys.map((key) => [key, fields[key]])) as Pick<typeof fields, K>
  return Type.Object(properties, { additionalProperties: false, description })
}

const FULL = ['id', 'category', 'name', 'region', 'country', 'latitude', 'longitude', 'helipaddy_link'] as const

export const SiteRecord = record([...FULL], 'Full site record')
export type SiteRecord = Static<typeof SiteRecord>

export const NearestRecord = record(
  ['id', 'category', 'name', 'latitude', 'longitude', 'distance_nm', 'helipaddy_link'], 'Nearest site record')
export type NearestRecord = Static<typeof NearestRecord>

export const RouteRecord = record([...FULL, 'along_nm', 'offset_nm'], 'Full site record with its place along the route')

export const MapMinimalRecord = record(['id', 'category', 'latitude', 'longitude', 'helipaddy_link'],
  'Map-minimal site record')
export type MapMinimalRecord = Static<typeof MapMinimalRecord>

/** The paging fields of a page of sites, after what the page is of (a tag, a box), in JSON and GeoJSON. */
const paging = (totalIs: string) => ({
  page: Type.Integer(), per_page: Type.Integer(),
  total: Type.Integer({ description: totalIs }), total_pages: Type.Integer()
})

const tagPaging = { tag: Type.String(), ...paging('Sites of the tag the partner may see') }

export const TagPage = Type.Object({ ...tagPaging, sites: Type.Array(MapMinimalRecord) })

const bboxPaging = {
  bbox: Type.Array(Type.Number(), { minItems: 4, maxItems: 4, description: 'west, south, east, north, as asked' }),
  ...paging('Sites in the box the partner may see')
}

export const BboxPage = Type.Object({ ...bboxPaging, sites: Type.Array(MapMinimalRecord) })

const Point = Type.Object({
  type: Type.Literal('Point'),
  coordinates: Type.Array(Type.Number(),
    { minItems: 2, maxItems: 2, description: '[longitude, latitude], obscured as in the record' })
}, { additionalProperties: false })

const feature = <T extends TSchema>(properties: T, record: string) => Type.Object({
  type: Type.Literal('Feature'), id: Type.String({ description: 'Site ID' }), geometry: Point, properties
}, { additionalProperties: false, description: `A site as a GeoJSON Point feature; its properties are the ${record}` })

/** A FeatureCollection; a page's paging fields are foreign members beside `type`. */
const collection = <F extends TSchema, P extends TProperties = {}>(features: F, description: string, paging?: P) =>
  Type.Object({ type: Type.Literal('FeatureCollection'), ...paging, features: Type.Array(features) },
    { additionalProperties: false, description })

const SAME_SITES = 'format=geojson: the same sites, in the same order, as a FeatureCollection'
const SAME_PAGE = 'format=geojson: the same page as a FeatureCollection, the paging fields as foreign members'
const MapMinimalFeature = feature(MapMinimalRecord, 'map-minimal record')

export const SiteFeatureCollection = collection(feature(SiteRecord, 'full record'), SAME_SITES)
export const RouteFeatureCollection =
  collection(feature(RouteRecord, 'full record with along_nm and offset_nm'), SAME_SITES)
export const BboxFeatureCollection = collection(MapMinimalFeature, SAME_PAGE, bboxPaging)
export const TagFeatureCollection = collection(MapMinimalFeature, SAME_PAGE, tagPaging)
