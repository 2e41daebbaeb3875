import { Type, type Static } from '@sinclair/typebox'
import { CategoryId, DemoFlag, Latitude, Longitude, RadiusKm, Tag } from './common.ts'

export const NearbyQuery = Type.Object({
  lat: Latitude,
  lng: Longitude,
  radius: RadiusKm,
  category_id: Type.Optional(CategoryId),
  tag: Type.Optional(Tag),
  demo: DemoFlag
})
export type NearbyQuery = Static<typeof NearbyQuery>
