// GeoJSON (RFC 7946) forms of the site answers: each record becomes the properties of a Point
// feature at [longitude, latitude]; the feature's id is the site id.
import { Type, type TProperties, type TSchema } from '@sinclair/typebox'
import { bboxPaging, MapMinimalRecord, RouteRecord, SiteRecord, tagPaging } from './records.ts'

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

export const Format = Type.Unsafe<'json' | 'geojson'>({
  type: 'string',
  enum: ['json', 'geojson'],
  default: 'json',
  description: 'json (default), or geojson for a GeoJSON FeatureCollection (RFC 7946) of the same records, ' +
    'sent as application/geo+json'
})
