// Nearest-first search over kdbush sub-indexes with geokdbush, exact to the last record:
// results are ordered by great-circle distance and then by site position (= id order), and a tie
// at the result limit is resolved by id, which geokdbush alone leaves to chance.
import KDBush from 'kdbush'
import { around } from 'geokdbush'

export const EARTH_RADIUS_KM = 6371
const RAD = Math.PI / 180

/** A kdbush index over a subset of a dataset's sites; item i is site `positions[i]`. */
export interface SubIndex {
  kd: KDBush
  positions: Uint32Array
}

export interface Hit {
  position: number
  /** haversine of the central angle: the quantity geokdbush orders and filters by */
  h: number
}

/** 0, 1, ..., count - 1: the positions of an index over every site. */
export function identity (count: number): Uint32Array {
  const out = new Uint32Array(count)
  for (let i = 0; i < count; i++) out[i] = i
  return out
}

export function buildSubIndex (positions: Uint32Array, lngs: Float64Array, lats: Float64Array): SubIndex {
  if (positions.length === 0) throw new Error('a sub-index needs at least one site')
  const kd = new KDBush(positions.length)
  for (const p of positions) kd.add(lngs[p], lats[p])
  kd.finish()
  return { kd, positions }
}

const haverSin = (theta: number) => {
  const s = Math.sin(theta / 2)
  return s * s
}

/** Same arithmetic, in the same order, as geokdbush's haverSinDist, so orderings agree bit for bit. */
export function haverSinDist (lng: number, lat: number, cosLat: number, lng2: number, lat2: number): number {
  return cosLat * Math.cos(lat2 * RAD) * haverSin((lng - lng2) * RAD) + haverSin((lat - lat2) * RAD)
}

export const kmFromHaverSin = (h: number) => 2 * EARTH_RADIUS_KM * Math.asin(Math.sqrt(h))
export const maxHaverSinFor = (radiusKm: number) => haverSin(radiusKm / EARTH_RADIUS_KM)

const byDistanceThenId = (a: Hit, b: Hit) => (a.h - b.h) || (a.position - b.position)

export interface SearchArea {
  lng: number
  lat: number
  radiusKm: number
  limit: number
}

export interface SiteCoordinates {
  lngs: Float64Array
  lats: Float64Array
}

/**
 * The `limit` sites nearest to the point within the radius, over the union of `sources` (disjoint
 * sets of sites), keeping only positions that `accept` (when given). Each source is searched for
 * limit + 1 items; a source cut off exactly at the distance of the last kept hit is searched again
 * for every item at that distance, so ties at the limit are decided by id, not by chance.
 */
export function searchNearby (coords: SiteCoordinates, sources: SubIndex[], area: SearchArea, accept?: (position: number) => boolean): Hit[] {
  const { lng, lat, radiusKm, limit } = area
  if (limit <= 0) return []
  const cosLat = Math.cos(lat * RAD)
  let hits: (Hit & { source: number })[] = []

  /** Adds the source's items nearest first; returns how many geokdbush gave and the last h. */
  const collect = (s: number, maxResults: number, maxKm: number, onlyH?: number) => {
    const { kd, positions } = sources[s]
    const predicate = accept && ((item: number) => accept(positions[item]))
    const items = around(kd, lng, lat, maxResults, maxKm, predicate)
    let lastH = -1
    for (const item of items) {
      const position = positions[item]
      const h = haverSinDist(lng, lat, cosLat, coords.lngs[position], coords.lats[position])
      lastH = h
      if (onlyH === undefined || h === onlyH) hits.push({ position, h, source: s })
    }
    return { count: items.length, lastH }
  }

  const cut = new Map<number, number>() // source → h of its last item, for sources cut at limit + 1
  for (let s = 0; s < sources.length; s++) {
    const { count, lastH } = collect(s, limit + 1, radiusKm)
    if (count === limit + 1) cut.set(s, lastH)
  }
  hits.sort(byDistanceThenId)
  if (hits.length <= limit) return hits

  // A source cut at limit + 1 holds every item closer than its last one; only items exactly at
  // the boundary distance may be missing from it.
  const boundary = hits[limit - 1].h
  const redo = [...cut].filter(([, lastH]) => lastH === boundary).map(([s]) => s)
  if (redo.length > 0) {
    hits = hits.filter((hit) => !(hit.h === boundary && redo.includes(hit.source)))
    const boundaryKm = kmFromHaverSin(boundary) * (1 + 1e-9) + 1e-9
    for (const s of redo) collect(s, Infinity, boundaryKm, boundary)
    hits.sort(byDistanceThenId)
  }
  return hits.slice(0, limit)
}

/** Binary search in an ascending Uint32Array; -1 when absent. */
export function indexOfSorted (values: Uint32Array, value: number): number {
  let lo = 0
  let hi = values.length - 1
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1
    const v = values[mid]
    if (v === value) return mid
    if (v < value) lo = mid + 1
    else hi = mid - 1
  }
  return -1
}

/** Exhaustive version of searchNearby for small candidate lists (rare tags): same order, same filter. */
export function scanNearby (coords: SiteCoordinates, candidates: Uint32Array, area: SearchArea, accept?: (position: number) => boolean): Hit[] {
  const { lng, lat, radiusKm, limit } = area
  const cosLat = Math.cos(lat * RAD)
  const maxH = maxHaverSinFor(radiusKm)
  const hits: Hit[] = []
  for (const position of candidates) {
    if (accept && !accept(position)) continue
    const h = haverSinDist(lng, lat, cosLat, coords.lngs[position], coords.lats[position])
    if (h <= maxH) hits.push({ position, h })
  }
  hits.sort(byDistanceThenId)
  return hits.length > limit ? hits.slice(0, limit) : hits
}
