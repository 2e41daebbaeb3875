// A reference for routes, independent of src/sites/route.ts (which works with unit vectors): per leg,
// the textbook spherical cross-track and along-track distances from haversine distances and initial
// bearings, in plain float64. For brute-force checks of the along-route answers.

export const EARTH_KM = 6371
/** Distances closer than 1 µm are equally near (the earlier point of the route counts). */
export const TIE_KM = 1e-9
const RAD = Math.PI / 180

export interface Point { lat: number, lng: number }

/** The haversine distance in radians (atan2 form: well conditioned up to the antipode). */
export function distance (a: Point, b: Point): number {
  const sinDLat = Math.sin((b.lat - a.lat) * RAD / 2)
  const sinDLng = Math.sin((b.lng - a.lng) * RAD / 2)
  const h = sinDLat * sinDLat + Math.cos(a.lat * RAD) * Math.cos(b.lat * RAD) * sinDLng * sinDLng
  return 2 * Math.atan2(Math.sqrt(h), Math.sqrt(Math.max(0, 1 - h)))
}

/**
 * The initial bearing from a to b in radians (clockwise from north). The usual denominator
 * cos φa sin φb − sin φa cos φb cos Δλ is written as sin(φb − φa) + 2 sin φa cos φb sin²(Δλ/2),
 * which does not cancel for short distances. From a pole, "north" is the meridian of a's longitude,
 * the same for every b, so differences of bearings from a still hold.
 */
export function bearing (a: Point, b: Point): number {
  const φa = a.lat * RAD
  const φb = b.lat * RAD
  const dλ = (b.lng - a.lng) * RAD
  const sinHalf = Math.sin(dλ / 2)
  return Math.atan2(Math.sin(dλ) * Math.cos(φb),
    Math.sin(φb - φa) + 2 * Math.sin(φa) * Math.cos(φb) * sinHalf * sinHalf)
}

export interface Nearest {
  /** the site's distance from the route, km */
  offsetKm: number
  /** the distance along the route from its first point to the route's point nearest the site, km */
  alongKm: number
  leg: number
}

/**
 * The nearest point of one leg a→b: [offset, place along the leg] in radians. The site's foot on
 * the leg's great circle is at along-track `at` = atan2(sin d13 cos Δθ, cos d13) (Napier: tan at =
 * tan d13 cos Δθ), cross-track asin(sin d13 sin Δθ); outside the leg, the nearer end (the start
 * when both are as near, within 1 µm).
 */
export function nearestOnLeg (a: Point, b: Point, site: Point, length = distance(a, b)): [number, number] {
  const d13 = distance(a, site)
  if (length === 0 || d13 === 0) return [d13, 0]
  const dθ = bearing(a, site) - bearing(a, b)
  const at = Math.atan2(Math.sin(d13) * Math.cos(dθ), Math.cos(d13))
  if (at >= 0 && at <= length) return [Math.abs(Math.asin(Math.sin(d13) * Math.sin(dθ))), at]
  const d23 = distance(b, site)
  return d23 < d13 - TIE_KM / EARTH_KM ? [d23, length] : [d13, 0]
}

/** The route's point nearest a site, by every leg; where legs are as near (within 1 µm), the earliest. */
export function nearestOnRoute (points: readonly Point[], site: Point, skip?: (leg: number) => boolean): Nearest {
  const found: [number, number][] = []
  let least = Infinity
  for (let i = 0; i + 1 < points.length; i++) {
    const hit: [number, number] = skip?.(i) ? [Infinity, 0] : nearestOnLeg(points[i], points[i + 1], site)
    found.push(hit)
    least = Math.min(least, hit[0])
  }
  let leg = 0
  while (found[leg][0] > least + TIE_KM / EARTH_KM) leg++
  let along = 0
  for (let i = 0; i < leg; i++) along += distance(points[i], points[i + 1])
  return { offsetKm: found[leg][0] * EARTH_KM, alongKm: (along + found[leg][1]) * EARTH_KM, leg }
}

/** The route's length in km. */
export function routeKm (points: readonly Point[]): number {
  let sum = 0
  for (let i = 0; i + 1 < points.length; i++) sum += distance(points[i], points[i + 1])
  return sum * EARTH_KM
}

/** km as the API writes nautical miles: km / 1.852 rounded to 3 decimals. */
export const nm = (km: number) => Math.round(km / 1.852 * 1000) / 1000

/**
 * Whether an answer's nautical miles agree with a reference distance: the same after rounding, or
 * one thousandth apart where the unrounded value is within 1e-6 nm of a rounding boundary.
 */
export function nmAgrees (answered: number, km: number): boolean {
  if (answered === nm(km)) return true
  const thousandths = km / 1.852 * 1000
  const nearBoundary = Math.abs(thousandths - Math.floor(thousandths) - 0.5) < 1e-3
  return nearBoundary && Math.abs(answered - nm(km)) < 0.0011
}

/** The point at distance `d` (radians) from a on initial bearing θ (radians), longitude within -180..180. */
export function destination (a: Point, θ: number, d: number): Point {
  const φ1 = a.lat * RAD
  const sinφ2 = Math.sin(φ1) * Math.cos(d) + Math.cos(φ1) * Math.sin(d) * Math.cos(θ)
  const φ2 = Math.asin(Math.max(-1, Math.min(1, sinφ2)))
  const dλ = Math.atan2(Math.sin(θ) * Math.sin(d) * Math.cos(φ1), Math.cos(d) - Math.sin(φ1) * sinφ2)
  let lng = a.lng + dλ / RAD
  lng = lng > 180 ? lng - 360 : lng < -180 ? lng + 360 : lng
  return { lat: φ2 / RAD, lng }
}
