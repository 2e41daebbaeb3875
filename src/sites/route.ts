// A flight route on the sphere: great-circle legs, and for any site its nearest route point (offset and along).
// Unit vectors and atan2 throughout, so that distances of a few metres keep their precision.
import { EARTH_RADIUS_KM } from './spatial.ts'

const RAD = Math.PI / 180

/** Radians in 1 µm: distances closer than this are equally near, and the earlier point counts. */
export const TIE_RADIANS = 1e-9 / EARTH_RADIUS_KM

export interface LatLng { lat: number, lng: number }

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
  /** per leg (0 for a leg of zero length): unit tangent at its start, normal of its great circle, tangent at its end */
  private readonly u: Float64Array
  private readonly n: Float64Array
  private readonly w: Float64Array
  /** per leg: its length in radians */
  readonly legs: Float64Array
  /** per point: the distance along the route from the first point, in radians */
  readonly starts: Float64Array
  /** the route's length in radians */
  readonly length: number
  /** per leg: the unit vector of its middle, and cos and sin of half its length */
  private readonly mid: Float64Array
  private readonly cosHalf: Float64Array
  private readonly sinHalf: Float64Array
  private readonly half: Float64Array
  /** per leg, filled by locate: the chord from the site to it (Infinity when skipped) and where it ends */
  private readonly legChords: Float64Array
  private readonly legEnds: Uint8Array
  private within = Infinity
  private withinChord = Infinity
  /** what locate found last: the distance off the route and along it (radians), and the place */
  offset = 0
  along = 0
  leg = 0
  t = 0

  constructor (readonly points: readonly LatLng[]) {
    const count = points.length
    if (count < 2) throw new Error('a route has at least two points')
    const legCount = count - 1
    const p = this.p = new Float64Array(3 * count)
    points.forEach(({ lat, lng }, i) => unit(lat, lng, p, 3 * i))
    this.u = new Float64Array(3 * legCount)
    this.n = new Float64Array(3 * legCount)
    this.w = new Float64Array(3 * legCount)
    this.legs = new Float64Array(legCount)
    this.starts = new Float64Array(count)
    for (let i = 0; i < legCount; i++) {
      const a = 3 * i
      const b = 3 * i + 3
      // a × b, whose norm is sin(length)
      const nx = p[a + 1] * p[b + 2] - p[a + 2] * p[b + 1]
      const ny = p[a + 2] * p[b] - p[a] * p[b + 2]
      const nz = p[a] * p[b + 1] - p[a + 1] * p[b]
      const sin = Math.sqrt(nx * nx + ny * ny + nz * nz)
      const length = Math.atan2(sin, p[a] * p[b] + p[a + 1] * p[b + 1] + p[a + 2] * p[b + 2])
      this.legs[i] = length
      this.starts[i + 1] = this.starts[i] + length
      if (sin === 0) continue
      this.n.set([nx / sin, ny / sin, nz / sin], a)
      // u = n × a; w = cos(length) u - sin(length) a
      const [ux, uy, uz] = [(ny * p[a + 2] - nz * p[a + 1]) / sin, (nz * p[a] - nx * p[a + 2]) / sin,
        (nx * p[a + 1] - ny * p[a]) / sin]
      this.u.set([ux, uy, uz], a)
      const c = Math.cos(length)
      const s = Math.sin(length)
      this.w.set([c * ux - s * p[a], c * uy - s * p[a + 1], c * uz - s * p[a + 2]], a)
    }
    this.length = this.starts[legCount]
    this.half = this.legs.map((length) => length / 2)
    this.cosHalf = this.half.map(Math.cos)
    this.sinHalf = this.half.map(Math.sin)
    this.mid = new Float64Array(3 * legCount)
    for (let i = 0; i < legCount; i++) {
      const { lat, lng } = this.pointAt(i, this.half[i])
      unit(lat, lng, this.mid, 3 * i)
    }
    this.legChords = new Float64Array(legCount)
    this.legEnds = new Uint8Array(legCount)
  }

  /** The route's length in km. */
  get lengthKm (): number {
    return this.length * EARTH_RADIUS_KM
  }

  /**
   * Sets offset, along, leg and t of the route point nearest to a site and returns the offset (radians), or Infinity
   * when farther than `within`. Of legs within TIE_RADIANS of the nearest the earliest counts. `hint` (a leg likely
   * near) is measured first, so legs that cannot be as near are skipped; chords are compared, angles made once.
   */
  locate (lat: number, lng: number, hint = 0, within = Infinity, cosLat = Math.cos(lat * RAD)): number {
    const x = cosLat * Math.cos(lng * RAD)
    const y = cosLat * Math.sin(lng * RAD)
    const z = Math.sin(lat * RAD)
    const { legChords, mid, cosHalf, sinHalf } = this
    const legCount = legChords.length
    let least = legChords[hint] = this.chordTo(hint, x, y, z)
    // a leg is skipped when even its nearest possible point (its middle less half its length) is
    // farther than the least found: cos and sin of the least angle, updated when it changes
    let cosLeast = 1 - least * least / 2
    let sinLeast = least * Math.sqrt(1 - least * least / 4)
    for (let i = 0; i < legCount; i++) {
      if (i === hint) continue
      const m = 3 * i
      const dot = x * mid[m] + y * mid[m + 1] + z * mid[m + 2]
      if (this.half[i] + Math.PI / 2 * least < 3 && dot < cosLeast * cosHalf[i] - sinLeast * sinHalf[i] - 1e-12) {
        legChords[i] = Infinity
        continue
      }
      const chord = legChords[i] = this.chordTo(i, x, y, z)
      if (chord < least) {
        least = chord
        cosLeast = 1 - least * least / 2
        sinLeast = least * Math.sqrt(1 - least * least / 4)
      }
    }
    if (within !== this.within) {
      this.within = within
      this.withinChord = within >= Math.PI ? Infinity : 2 * Math.sin(within / 2)
    }
    if (least > this.withinChord) return Infinity
    const offset = 2 * Math.asin(Math.min(1, least / 2))
    let leg = 0
    while (legChords[leg] > least + TIE_RADIANS) leg++
    this.leg = leg
    this.offset = offset
    const end = this.legEnds[leg]
    if (end === START) this.t = 0
    else if (end === END) this.t = this.legs[leg]
    else {
      const a = 3 * leg
      const { p, u } = this
      const cu = (x - p[a]) * u[a] + (y - p[a + 1]) * u[a + 1] + (z - p[a + 2]) * u[a + 2]
      this.t = Math.atan2(cu, x * p[a] + y * p[a + 1] + z * p[a + 2])
    }
    this.along = this.starts[leg] + this.t
    return offset
  }

  /**
   * The chord from a site's unit vector to leg `i`, and which of its points is nearest (start, end, between). Products
   * of the site's offsets from the leg's ends: a short leg's less exact normal costs no precision near it.
   */
  private chordTo (i: number, x: number, y: number, z: number): number {
    const { p, u, n, w } = this
    const a = 3 * i
    const dx = x - p[a]
    const dy = y - p[a + 1]
    const dz = z - p[a + 2]
    const toStart = Math.sqrt(dx * dx + dy * dy + dz * dz)
    this.legEnds[i] = START
    if (this.legs[i] === 0) return toStart
    const ex = x - p[a + 3]
    const ey = y - p[a + 4]
    const ez = z - p[a + 5]
    if (dx * u[a] + dy * u[a + 1] + dz * u[a + 2] >= 0 && ex * w[a] + ey * w[a + 1] + ez * w[a + 2] <= 0) {
      // the site's foot on the great circle lies within the leg: with cn its part along the normal
      // and s = √(1 - cn²) the rest, the chord² is cn² + (1 - s)², and 1 - s = cn² / (1 + s)
      const cn = dx * n[a] + dy * n[a + 1] + dz * n[a + 2]
      const cn2 = cn * cn
      const rest = cn2 / (1 + Math.sqrt(Math.max(0, 1 - cn2)))
      this.legEnds[i] = BETWEEN
      return Math.sqrt(cn2 + rest * rest)
    }
    const toEnd = Math.sqrt(ex * ex + ey * ey + ez * ez)
    if (toEnd < toStart - TIE_RADIANS) {
      this.legEnds[i] = END
      return toEnd
    }
    return toStart
  }

  /**
   * Boxes of the points within `reach` of the start whose nearest route point is the start: the half cap behind the
   * first leg (and a hair in front); the whole cap's at a pole or when the first leg is too short.
   */
  behindBoxes (reach: number): Box[] {
    const { lat, lng } = this.points[0]
    const phi = lat * RAD
    // the start is the nearest point of points behind it, a hair in front (cos(bearing - the leg's) ≤ hair), near it
    // (the margin below), and of points as near the first leg's end as its start (to TIE_RADIANS): those too lie
    // within a hair of the half when the leg is over 4 TIE_RADIANS / hair long
    const hair = 1e-6
    const cap = this.legs[0] <= 4 * TIE_RADIANS / hair || Math.abs(phi) + reach >= Math.PI / 2 - 1e-6
    if (cap) return capBoxes(this.points[0], reach)
    const [sinPhi, cosPhi, sinR, cosR] = [Math.sin(phi), Math.cos(phi), Math.sin(reach), Math.cos(reach)]
    // the first leg's direction at the start, towards north and east
    const lam = lng * RAD
    const u = this.u
    const north = -sinPhi * (Math.cos(lam) * u[0] + Math.sin(lam) * u[1]) + cosPhi * u[2]
    const east = -Math.sin(lam) * u[0] + Math.cos(lam) * u[1]
    const behind = (cosB: number, sinB: number) => cosB * north + sinB * east <= hair
    // latitude: sin(lat) = sin(phi) cos(d) + cos(phi) sin(d) cos(b) for a point at distance d ≤ reach, bearing b;
    // cos(b) at its largest (smallest) over the half, the ends of the half at ±|east| (+ hair)
    const side = Math.min(1, Math.abs(east) + hair)
    const extreme = (cosB: number, sign: number) => {
      const c = cosPhi * cosB
      let best = Math.max(sign * sinPhi, sign * (sinPhi * cosR + c * sinR))
      const turn = Math.atan2(sign * c, sign * sinPhi) // where sign * (sin(phi) cos d + c sin d) is greatest
      if (turn >= 0 && turn <= reach) best = Math.hypot(sinPhi, c)
      return sign * best
    }
    const south = Math.asin(Math.max(-1, extreme(behind(-1, 0) ? -1 : -side, -1))) / RAD
    const top = Math.asin(Math.min(1, extreme(behind(1, 0) ? 1 : side, 1))) / RAD
    // longitude: along each bearing it moves one way (the cap holds no pole), so it lies between the start's, the
    // rim's at the half's ends, and the rim's east and west extremes where they are behind
    const rimLng = (cosB: number, sinB: number) => {
      const sinLat = sinPhi * cosR + cosPhi * sinR * cosB
      return Math.atan2(sinB * sinR * cosPhi, cosR - sinPhi * sinLat) / RAD
    }
    // the ends of the half: the leg's bearing ± (90° - hair) (± acos(hair), within hair³ / 6; the margin covers it)
    const [cosH, sinH] = [Math.cos(Math.PI / 2 - hair), Math.sin(Math.PI / 2 - hair)]
    const ends = [rimLng(north * cosH - east * sinH, east * cosH + north * sinH),
      rimLng(north * cosH + east * sinH, east * cosH - north * sinH)]
    let west = Math.min(0, ...ends)
    let eastmost = Math.max(0, ...ends)
    const cosE = Math.tan(reach) * Math.tan(phi) // cos of the bearing of the cap's easternmost point
    const sinE = Math.sqrt(Math.max(0, 1 - cosE * cosE))
    const spread = Math.asin(Math.min(1, sinR / cosPhi)) / RAD
    if (behind(cosE, sinE)) eastmost = spread
    if (behind(cosE, -sinE)) west = -spread
    // a margin of `hair` radians all round, for rounding and the points a hair in front
    const margin = hair / RAD
    const lngMargin = margin / Math.cos(Math.max(Math.abs(south), Math.abs(top)) * RAD)
    return lngBoxes(lng + west - lngMargin, lng + eastmost + lngMargin, Math.max(-90, south - margin),
      Math.min(90, top + margin))
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
    return { lat: Math.atan2(z, Math.sqrt(x * x + y * y)) / RAD, lng: Math.atan2(y, x) / RAD }
  }
}

const START = 0
const END = 1
const BETWEEN = 2

/** A box in degrees, west ≤ east (one side of the antimeridian). */
export interface Box { west: number, south: number, east: number, north: number }

/** The boxes (two across the antimeridian) of a spherical cap, a little wider for rounding. */
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

/** Longitudes from `west` to `east` as boxes within -180 to 180. */
function lngBoxes (west: number, east: number, south: number, north: number): Box[] {
  if (east - west >= 360) return [{ west: -180, south, east: 180, north }]
  if (west < -180) return [{ west: west + 360, south, east: 180, north }, { west: -180, south, east, north }]
  if (east > 180) return [{ west, south, east: 180, north }, { west: -180, south, east: east - 360, north }]
  return [{ west, south, east, north }]
}
