// A flight route on the sphere: great-circle legs between its points, and for any site the route's
// point nearest to it (its distance off the route and along it). Unit vectors and atan2 throughout,
// so that distances of a few metres keep their precision.
import { EARTH_RADIUS_KM } from './spatial.ts'

const RAD = Math.PI / 180

/** Radians in 1 µm: distances closer than this are equally near, and the earlier point counts. */
export const TIE_RADIANS = 1e-9 / EARTH_RADIUS_KM

export interface LatLng { lat: number, lng: number }

/** A point on the route: the leg it lies on and its distance from the leg's start, in radians. */
export interface RoutePlace { leg: number, t: number }

/** An ECEF-like unit vector (x towards 0,0; z towards the north pole). */
const unit = (lat: number, lng: number, out: Float64Array, at: number) => {
  const cosLat = Math.cos(lat * RAD)
  out[at] = cosLat * Math.cos(lng * RAD)
  out[at + 1] = cosLat * Math.sin(lng * RAD)
  out[at + 2] = Math.sin(lat * RAD)
}

export class Route {
  /** the points' unit vectors, 3 numbers each */
  private readonly p: Float64Array
  /** per leg: the unit tangent at its start, towards its end (0 for a leg of zero length) */
  private readonly u: Float64Array
  /** per leg: its length in radians */
  readonly legs: Float64Array
  /** per point: the distance along the route from the first point, in radians */
  readonly starts: Float64Array
  /** the route's length in radians */
  readonly length: number
  /** per leg: the unit vector of its middle, and cos and sin of half its length */
  private readonly mid: Float64Array
  private readonly half: Float64Array
  private readonly cosHalf: Float64Array
  private readonly sinHalf: Float64Array
  /** per leg, filled by locate: the site's distance to it (Infinity when skipped) and the place on it */
  private readonly legOffsets: Float64Array
  private readonly legTs: Float64Array
  /** what locate found last: the distance off the route and along it (radians), and the place */
  offset = 0
  along = 0
  leg = 0
  t = 0

  constructor (readonly points: readonly LatLng[]) {
    const n = points.length
    if (n < 2) throw new Error('a route has at least two points')
    this.p = new Float64Array(3 * n)
    points.forEach(({ lat, lng }, i) => unit(lat, lng, this.p, 3 * i))
    this.u = new Float64Array(3 * (n - 1))
    this.legs = new Float64Array(n - 1)
    this.starts = new Float64Array(n)
    const p = this.p
    for (let i = 0; i < n - 1; i++) {
      const a = 3 * i
      const b = 3 * i + 3
      // normal a × b; its norm is sin(length)
      const nx = p[a + 1] * p[b + 2] - p[a + 2] * p[b + 1]
      const ny = p[a + 2] * p[b] - p[a] * p[b + 2]
      const nz = p[a] * p[b + 1] - p[a + 1] * p[b]
      const sin = Math.hypot(nx, ny, nz)
      const cos = p[a] * p[b] + p[a + 1] * p[b + 1] + p[a + 2] * p[b + 2]
      const length = Math.atan2(sin, cos)
      this.legs[i] = length
      this.starts[i + 1] = this.starts[i] + length
      if (sin > 0) {
        // tangent n × a, with n = (a × b) / sin
        this.u[a] = (ny * p[a + 2] - nz * p[a + 1]) / sin
        this.u[a + 1] = (nz * p[a] - nx * p[a + 2]) / sin
        this.u[a + 2] = (nx * p[a + 1] - ny * p[a]) / sin
      }
    }
    this.length = this.starts[n - 1]
    this.mid = new Float64Array(3 * (n - 1))
    this.half = this.legs.map((length) => length / 2)
    this.cosHalf = this.half.map(Math.cos)
    this.sinHalf = this.half.map(Math.sin)
    this.legOffsets = new Float64Array(n - 1)
    this.legTs = new Float64Array(n - 1)
    for (let i = 0; i < n - 1; i++) {
      const { lat, lng } = this.pointAt(i, this.half[i])
      unit(lat, lng, this.mid, 3 * i)
    }
  }

  /** The route's length in km. */
  get lengthKm (): number {
    return this.length * EARTH_RADIUS_KM
  }

  /**
   * Finds the route's point nearest to a site and sets offset, along, leg and t; returns the offset
   * in radians. Of the legs within TIE_RADIANS of the nearest, the earliest counts; `hint`, a leg
   * likely near, is measured first so that legs that cannot be as near are skipped.
   */
  locate (lat: number, lng: number, hint = 0): number {
    const cosLat = Math.cos(lat * RAD)
    const x = cosLat * Math.cos(lng * RAD)
    const y = cosLat * Math.sin(lng * RAD)
    const z = Math.sin(lat * RAD)
    const { legs, legOffsets, legTs } = this
    let least = this.measure(hint, x, y, z)
    legOffsets[hint] = least
    legTs[hint] = this.t
    // a leg is skipped when even its nearest possible point (its middle less half its length) is
    // farther than the least found: cos of that bound, updated when the least changes
    let cosLeast = Math.cos(least)
    let sinLeast = Math.sin(least)
    for (let i = 0; i < legs.length; i++) {
      if (i === hint) continue
      const m = 3 * i
      const dot = x * this.mid[m] + y * this.mid[m + 1] + z * this.mid[m + 2]
      const reach = least + this.half[i] + 2 * TIE_RADIANS
      if (reach < Math.PI && dot < cosLeast * this.cosHalf[i] - sinLeast * this.sinHalf[i] - 1e-12) {
        legOffsets[i] = Infinity
        continue
      }
      const d = this.measure(i, x, y, z)
      legOffsets[i] = d
      legTs[i] = this.t
      if (d < least) {
        least = d
        cosLeast = Math.cos(least)
        sinLeast = Math.sin(least)
      }
    }
    let leg = 0
    while (legOffsets[leg] > least + TIE_RADIANS) leg++
    this.leg = leg
    this.t = legTs[leg]
    this.offset = legOffsets[leg]
    this.along = this.starts[leg] + this.t
    return this.offset
  }

  /** The distance from a site's unit vector to leg `i` (radians); sets t to the nearest point's place on it. */
  private measure (i: number, x: number, y: number, z: number): number {
    const { p, u, legs } = this
    const a = 3 * i
    // the site in the leg's frame: along its start a, along the tangent u, along the normal a × u
    const ca = x * p[a] + y * p[a + 1] + z * p[a + 2]
    const cu = x * u[a] + y * u[a + 1] + z * u[a + 2]
    const angle = Math.atan2(cu, ca)
    if (legs[i] > 0 && angle >= 0 && angle <= legs[i]) {
      // the site's foot on the great circle lies within the leg
      const ux = u[a]
      const uy = u[a + 1]
      const uz = u[a + 2]
      const cn = x * (p[a + 1] * uz - p[a + 2] * uy) + y * (p[a + 2] * ux - p[a] * uz) + z * (p[a] * uy - p[a + 1] * ux)
      this.t = angle
      return Math.atan2(Math.abs(cn), Math.sqrt(ca * ca + cu * cu))
    }
    // an end of the leg: its start unless its end is nearer
    const toStart = angleTo(x, y, z, p, a)
    this.t = 0
    if (legs[i] === 0) return toStart
    const toEnd = angleTo(x, y, z, p, a + 3)
    if (toEnd < toStart - TIE_RADIANS) {
      this.t = legs[i]
      return toEnd
    }
    return toStart
  }

  /** The point at distance `t` (radians) along leg `leg`. */
  pointAt (leg: number, t: number): LatLng {
    const { p, u } = this
    const a = 3 * leg
    const c = Math.cos(t)
    const s = Math.sin(t)
    const x = c * p[a] + s * u[a]
    const y = c * p[a + 1] + s * u[a + 1]
    const z = c * p[a + 2] + s * u[a + 2]
    return { lat: Math.atan2(z, Math.hypot(x, y)) / RAD, lng: Math.atan2(y, x) / RAD }
  }
}

/** The angle between a unit vector and the point at `at` of `p`: atan2 of |cross| and dot. */
function angleTo (x: number, y: number, z: number, p: Float64Array, at: number): number {
  const cx = y * p[at + 2] - z * p[at + 1]
  const cy = z * p[at] - x * p[at + 2]
  const cz = x * p[at + 1] - y * p[at]
  return Math.atan2(Math.sqrt(cx * cx + cy * cy + cz * cz), x * p[at] + y * p[at + 1] + z * p[at + 2])
}

/** A box in degrees, west ≤ east (one side of the antimeridian). */
export interface Box { west: number, south: number, east: number, north: number }

/**
 * The boxes (one, or two across the antimeridian) that hold every point within `radius` radians
 * of a point: the bounds of a spherical cap, a little wider for rounding.
 */
export function capBoxes (center: LatLng, radius: number): Box[] {
  const margin = 1e-9
  const r = radius / RAD + margin
  const south = Math.max(-90, center.lat - r)
  const north = Math.min(90, center.lat + r)
  if (south === -90 || north === 90 || radius >= Math.PI / 2) return [{ west: -180, south, east: 180, north }]
  const ratio = Math.sin(radius) / Math.cos(center.lat * RAD)
  if (ratio >= 1) return [{ west: -180, south, east: 180, north }]
  const spread = Math.asin(ratio) / RAD + margin
  return lngBoxes(center.lng - spread, center.lng + spread, south, north)
}

/** Longitudes from `west` to `east` (east - west < 360) as boxes within -180 to 180. */
export function lngBoxes (west: number, east: number, south: number, north: number): Box[] {
  if (east - west >= 360) return [{ west: -180, south, east: 180, north }]
  if (west < -180) return [{ west: west + 360, south, east: 180, north }, { west: -180, south, east, north }]
  if (east > 180) return [{ west, south, east: 180, north }, { west: -180, south, east: east - 360, north }]
  return [{ west, south, east, north }]
}
