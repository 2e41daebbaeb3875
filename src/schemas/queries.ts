import { Type, type Static } from '@sinclair/typebox'
import { CategoryId, DemoFlag, Latitude, Longitude, RadiusKm, SiteId, Tag } from './common.ts'
import { Format } from './geojson.ts'

const nearby = {
  lat: Latitude,
  lng: Longitude,
  radius: RadiusKm,
  category_id: Type.Optional(CategoryId),
  tag: Type.Optional(Tag),
  demo: DemoFlag
}

export const NearbyQuery = Type.Object(nearby)
export type NearbyQuery = Static<typeof NearbyQuery>

export const SitesQuery = Type.Object({ ...nearby, format: Format })
export type SitesQuery = Static<typeof SitesQuery>

export const MAX_PER_PAGE = 500

export const ByTagQuery = Type.Object({
  tag: Tag,
  page: Type.Integer({
    minimum: 1, default: 1, description: 'Page number, from 1; past the last page the sites array is empty'
  }),
  per_page: Type.Integer({
    minimum: 1,
    default: 200,
    description: `Sites per page; default 200; above ${MAX_PER_PAGE} clamped to ${MAX_PER_PAGE}`
  }),
  demo: DemoFlag,
  format: Format
})
export type ByTagQuery = Static<typeof ByTagQuery>

export const SiteParams = Type.Object({ id: SiteId })
export type SiteParams = Static<typeof SiteParams>

export const DemoQuery = Type.Object({ demo: DemoFlag })
export type DemoQuery = Static<typeof DemoQuery>

export const UsageQuery = Type.Object({
  expand: Type.Optional(Type.Unsafe<'telemetry'>({
    type: 'string', enum: ['telemetry'], description: 'telemetry adds the telemetry block'
  })),
  demo: DemoFlag
})
export type UsageQuery = Static<typeof UsageQuery>
