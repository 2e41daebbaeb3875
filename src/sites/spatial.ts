// Nearest-first search over kdbush sub-indexes, exact to the last record: results are ordered
// by great-circle distance and then by site position (= id order), ties at the limit included.
import KDBush from 'kdbush'

export const EARTH_RADIUS_KM = 6371
const RAD = Math.PI / 180

/** cos(latitude), exactly 0 at the poles (Math.cos(90 * RAD) is not): sites at a pole tie whatever their longitude. */
const cosOfLat = (lat: number) => lat === 90 || lat === -90 ? 0 : Math.cos(lat * RAD)

/** A kdbush index over a subset of a dataset's sites; item i is site `positions[i]`. */
export interface SubIndex {
  kd: KDBush
  positions: Uint32Array
  /**
   * Per tree slot, made at load: cos(latitude), and the position `positions[kd.ids[slot]]`, read beside the slot's
   * coordinates rather than at a random place of `positions` (a cache miss per site).
   */
  slotCosLats: Float64Array
  slotPositions: Uint32Array
}

export function subIndexOf (kd: KDBush, positions: Uint32Array): SubIndex {
  const xy = kd.coords
  const ids = kd.ids
  const slotCosLats = new Float64Array(ids.length)
  const slotPositions = new Uint32Array(ids.length)
  for (let i = 0; i < ids.length; i++) {
    slotCosLats[i] = cosOfLat(xy[2 * i + 1])
    slotPositions[i] = positions[ids[i]]
  }
  return { kd, positions, slotCosLats, slotPositions }
}

export interface Hit {
  position: number
  /** haversine of the central angle: the quantity geokdbush orders and filters by */
  h: number
  /** its slot in the tree it was found in (-1 from a scan): per-slot tables read for an answer lie together */
  slot: number
}

/** 0, 1, ..., count - 1: the positions of an index over every site. */
export function identity (count: number): Uint32Array {
  const out = new Uint32Array(count)
  for (let i = 0; i < count; i++) out[i] = i
  return out
}

export function buildSubIndex (positions: Uint32Array, lngs: Float64Array, lats: Float64Array): SubIndex {
  const kd = new KDBush(positions.length)
  for (const p of positions) kd.add(lngs[p], lats[p])
  kd.finish()
  return subIndexOf(kd, positions)
}

const haverSin = (theta: number) => {
  const s = Math.sin(theta / 2)
  return s * s
}

export const kmFromHaverSin = (h: number) => 2 * EARTH_RADIUS_KM * Math.asin(Math.sqrt(h))
/** A radius of half the circumference or more holds every site (haverSin falls again past π). */
export const maxHaverSinFor = (radiusKm: number) =>
  radiusKm >= Math.PI * EARTH_RADIUS_KM ? Infinity : haverSin(radiusKm / EARTH_RADIUS_KM)

/**
 * geokdbush's haverSinDist, same operations in the same order, so orderings agree bit for bit (but at the poles), with
 * cosOfLat(lat2) given (made once per tree slot).
 */
const haverSinDistCos = (
  lng: number, lat: number, cosLat: number, lng2: number, lat2: number, cosLat2: number
) => cosLat * cosLat2 * haverSin((lng - lng2) * RAD) + haverSin((lat - lat2) * RAD)

/** Whether a search takes a site, by its position and, in a tree's walk, its slot. */
export type Accept = (position: number, slot: number) => boolean

export interface SearchArea { lng: number, lat: number, radiusKm: number, limit: number }

/**
 * Nearest-first search with geokdbush's arithmetic: nodes visited best-first, the sites found kept in a max-heap of
 * at most `limit` by (h, position), so nothing that cannot beat the worst held is queued; a site as far as the worst
 * but with a lower position still gets in. Its typed arrays grow to the largest search and are used again: a search
 * allocates only its answer. One search at a time: each route group that searches keeps its own.
 */
export class NearbySearch {
  // nodes to visit: slots hold each node's range, axis and box; a min-heap orders slots by bound
  private nodeLeft = new Int32Array(0)
  private nodeRight = new Int32Array(0)
  private nodeAxis = new Uint8Array(0)
  private nodeBox = new Float64Array(0) // minLng, minLat, maxLng, maxLat per slot
  private queueKey = new Float64Array(0) // a lower bound of h over the node's box
  private queueSlot = new Int32Array(0)
  // sites held: a max-heap by (h, position), the worst on top
  private bestH = new Float64Array(0)
  private bestPosition = new Uint32Array(0)
  private bestSlot = new Int32Array(0)
  private slots = 0
  private queued = 0
  private held = 0
  private heldMax = 0
  /** The farthest h that can still get in: the radius until `heldMax` sites are held, then the worst held's. */
  private bound = 0

  /** The `limit` sites nearest to the point within the radius, of `sources` (disjoint) and `accept`, by (h, id). */
  search (sources: SubIndex[], area: SearchArea, accept?: Accept): Hit[] {
    if (area.limit <= 0 || sources.length === 0) return []
    let sites = 0
    for (const source of sources) sites += source.positions.length
    const cosLat = this.start(area, sites)
    for (const source of sources) this.around(source, area.lng, area.lat, cosLat, accept)
    return this.hits()
  }

  /** As search, over a few candidates (a rare tag's sites), each one measured; their slots are -1. */
  scan (ds: { lngs: Float64Array, lats: Float64Array }, candidates: Uint32Array, area: SearchArea, accept?: Accept) {
    if (area.limit <= 0 || candidates.length === 0) return []
    const cosLat = this.start(area, candidates.length)
    for (const position of candidates) {
      if (accept && !accept(position, -1)) continue
      const lat2 = ds.lats[position]
      const h = haverSinDistCos(area.lng, area.lat, cosLat, ds.lngs[position], lat2, cosOfLat(lat2))
      if (h <= this.bound) this.offer(h, position, -1)
    }
    return this.hits()
  }

  /** Empties the held sites for a search of `sites` at most; returns cos(latitude) of its point. */
  private start (area: SearchArea, sites: number): number {
    this.heldMax = Math.min(area.limit, sites) // no more can be held than there are sites
    this.makeRoomForBest(this.heldMax)
    this.held = 0
    this.bound = maxHaverSinFor(area.radiusKm)
    return cosOfLat(area.lat)
  }

  /** Offers one sub-index's sites within the bound. */
  private around (source: SubIndex, lng: number, lat: number, cosLat: number, accept: Accept | undefined): void {
    const { kd, slotCosLats: cosLats, slotPositions: positions } = source
    const count = positions.length
    const xy = kd.coords
    const nodeSize = kd.nodeSize
    this.slots = 0
    this.queued = 0
    this.pushNode(0, count - 1, 0, -180, -90, 180, 90, lng, lat, cosLat, Infinity)
    while (this.queued > 0) {
      if (this.queueKey[0] > this.bound) break // no node left can hold a site that gets in
      const slot = this.queueSlot[0]
      this.queuePop()
      const left = this.nodeLeft[slot]
      const right = this.nodeRight[slot]
      if (right - left <= nodeSize) { // leaf: offer its sites
        for (let i = left; i <= right; i++) {
          const h = haverSinDistCos(lng, lat, cosLat, xy[2 * i], xy[2 * i + 1], cosLats[i])
          if (h > this.bound) continue
          const position = positions[i]
          if (accept && !accept(position, i)) continue
          this.offer(h, position, i)
        }
        continue
      }
      const axis = this.nodeAxis[slot]
      const box = this.nodeBox
      const b = slot * 4
      const minLng = box[b]; const minLat = box[b + 1]; const maxLng = box[b + 2]; const maxLat = box[b + 3]
      const m = (left + right) >> 1
      const midLng = xy[2 * m]
      const midLat = xy[2 * m + 1]
      const h = haverSinDistCos(lng, lat, cosLat, midLng, midLat, cosLats[m])
      if (h <= this.bound) {
        const position = positions[m]
        if (!accept || accept(position, m)) this.offer(h, position, m)
      }
      const nextAxis = 1 - axis
      this.pushNode(left, m - 1, nextAxis,
        minLng, minLat, axis === 0 ? midLng : maxLng, axis === 1 ? midLat : maxLat, lng, lat, cosLat, this.bound)
      this.pushNode(m + 1, right, nextAxis,
        axis === 0 ? midLng : minLng, axis === 1 ? midLat : minLat, maxLng, maxLat, lng, lat, cosLat, this.bound)
    }
  }

  /** The held sites, nearest first: the worst taken off the top, last place first. */
  private hits (): Hit[] {
    const H = this.bestH
    const P = this.bestPosition
    const S = this.bestSlot
    const hits = new Array<Hit>(this.held)
    for (let size = this.held; size > 0; size--) {
      hits[size - 1] = { position: P[0], h: H[0], slot: S[0] }
      if (size > 1) this.bestSiftDown(size - 1, H[size - 1], P[size - 1], S[size - 1])
    }
    return hits
  }

  private growNodes (size: number) {
    const cap = Math.max(1024, size * 2)
    const grown = <T extends Int32Array | Uint8Array | Float64Array>(from: T, next: T) => {
      next.set(from)
      return next
    }
    this.nodeLeft = grown(this.nodeLeft, new Int32Array(cap))
    this.nodeRight = grown(this.nodeRight, new Int32Array(cap))
    this.nodeAxis = grown(this.nodeAxis, new Uint8Array(cap))
    this.nodeBox = grown(this.nodeBox, new Float64Array(4 * cap))
    this.queueKey = grown(this.queueKey, new Float64Array(cap))
    this.queueSlot = grown(this.queueSlot, new Int32Array(cap))
  }

  private makeRoomForBest (limit: number) {
    if (this.bestH.length >= limit) return
    const cap = Math.max(128, limit)
    this.bestH = new Float64Array(cap)
    this.bestPosition = new Uint32Array(cap)
    this.bestSlot = new Int32Array(cap)
  }

  private queuePush (key: number, slot: number) {
    const K = this.queueKey
    const S = this.queueSlot
    let i = this.queued++
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (K[parent] <= key) break
      K[i] = K[parent]; S[i] = S[parent]
      i = parent
    }
    K[i] = key; S[i] = slot
  }

  /** Removes the node on top of the queue (read it from index 0 first). */
  private queuePop () {
    const K = this.queueKey
    const S = this.queueSlot
    const last = --this.queued
    if (last === 0) return
    const key = K[last]; const slot = S[last]
    let i = 0
    const half = last >> 1
    while (i < half) {
      let child = 2 * i + 1
      if (child + 1 < last && K[child + 1] < K[child]) child++
      if (K[child] >= key) break
      K[i] = K[child]; S[i] = S[child]
      i = child
    }
    K[i] = key; S[i] = slot
  }

  private bestSiftDown (size: number, h: number, position: number, slot: number) {
    const H = this.bestH
    const P = this.bestPosition
    const S = this.bestSlot
    let i = 0
    const half = size >> 1
    while (i < half) {
      let child = 2 * i + 1
      if (child + 1 < size && after(H[child + 1], P[child + 1], H[child], P[child])) child++
      if (!after(H[child], P[child], h, position)) break
      H[i] = H[child]; P[i] = P[child]; S[i] = S[child]
      i = child
    }
    H[i] = h; P[i] = position; S[i] = slot
  }

  /** A site within the bound: held if there is room or if it comes before the worst held. */
  private offer (h: number, position: number, slot: number) {
    const H = this.bestH
    const P = this.bestPosition
    const S = this.bestSlot
    if (this.held < this.heldMax) {
      // sift up from the new leaf
      let i = this.held++
      while (i > 0) {
        const parent = (i - 1) >> 1
        if (!after(h, position, H[parent], P[parent])) break
        H[i] = H[parent]; P[i] = P[parent]; S[i] = S[parent]
        i = parent
      }
      H[i] = h; P[i] = position; S[i] = slot
      if (this.held === this.heldMax) this.bound = H[0]
    } else if (after(H[0], P[0], h, position)) {
      this.bestSiftDown(this.held, h, position, slot)
      this.bound = H[0]
    }
  }

  private pushNode (
    left: number, right: number, axis: number,
    minLng: number, minLat: number, maxLng: number, maxLat: number,
    lng: number, lat: number, cosLat: number, maxH: number
  ) {
    if (left > right) return
    const bound = boxDist(lng, lat, cosLat, minLng, minLat, maxLng, maxLat)
    if (bound > maxH) return
    if (this.slots === this.nodeLeft.length) this.growNodes(this.slots + 1)
    const slot = this.slots++
    this.nodeLeft[slot] = left
    this.nodeRight[slot] = right
    this.nodeAxis[slot] = axis
    const box = this.nodeBox
    const b = slot * 4
    box[b] = minLng; box[b + 1] = minLat; box[b + 2] = maxLng; box[b + 3] = maxLat
    this.queuePush(bound, slot)
  }
}

/** (ha, pa) comes after (hb, pb) in (distance, id) order. */
const after = (ha: number, pa: number, hb: number, pb: number) => ha > hb || (ha === hb && pa > pb)

/** geokdbush's lower bound of h from the point to any point of the box. */
function boxDist (
  lng: number, lat: number, cosLat: number, minLng: number, minLat: number, maxLng: number, maxLat: number
): number {
  if (lng >= minLng && lng <= maxLng) {
    if (lat < minLat) return haverSin((lat - minLat) * RAD)
    if (lat > maxLat) return haverSin((lat - maxLat) * RAD)
    return 0
  }
  const haverSinDLng = Math.min(haverSin((lng - minLng) * RAD), haverSin((lng - maxLng) * RAD))
  const extremumLat = vertexLat(lat, haverSinDLng)
  if (extremumLat > minLat && extremumLat < maxLat) return haverSinDistPartial(haverSinDLng, cosLat, lat, extremumLat)
  return Math.min(
    haverSinDistPartial(haverSinDLng, cosLat, lat, minLat),
    haverSinDistPartial(haverSinDLng, cosLat, lat, maxLat)
  )
}

// cosOfLat as for the sites, so a box's bound at a pole is its pole sites' h, not above it
const haverSinDistPartial = (haverSinDLng: number, cosLat1: number, lat1: number, lat2: number) =>
  cosLat1 * cosOfLat(lat2) * haverSinDLng + haverSin((lat1 - lat2) * RAD)

function vertexLat (lat: number, haverSinDLng: number): number {
  const cosDLng = 1 - 2 * haverSinDLng
  if (cosDLng <= 0) return lat > 0 ? 90 : -90
  return Math.atan(Math.tan(lat * RAD) / cosDLng) / RAD
}
