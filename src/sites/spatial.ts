// Nearest-first search over kdbush sub-indexes, exact to the last record: results are ordered
// by great-circle distance and then by site position (= id order), ties at the limit included.
import KDBush from 'kdbush'

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

// ---------------------------------------------------------------------------------------------
// Best-first search over a kdbush tree: geokdbush's algorithm and arithmetic (haversine of the
// central angle, box lower bounds), rewritten to allocate nothing per query and to order the
// queue by (h, then nodes before sites, then site position). Sites therefore come out exactly in
// (distance, id) order, ties included, and the first `limit` popped are the answer.

/** Scratch space shared by all searches (the service answers one request at a time). */
const scratch = {
  cap: 0,
  key: new Float64Array(0), // h, or a node's lower bound of h
  tie: new Float64Array(0), // site position, or -1 for a node
  ref: new Int32Array(0), // >= 0: item of a site; < 0: -(node slot + 1)
  nodes: 0,
  nodeCap: 0,
  nodeLeft: new Int32Array(0),
  nodeRight: new Int32Array(0),
  nodeAxis: new Uint8Array(0),
  nodeBox: new Float64Array(0) // minLng, minLat, maxLng, maxLat per slot
}

function growHeap (size: number) {
  const cap = Math.max(1024, size * 2)
  const key = new Float64Array(cap); key.set(scratch.key.subarray(0, scratch.cap))
  const tie = new Float64Array(cap); tie.set(scratch.tie.subarray(0, scratch.cap))
  const ref = new Int32Array(cap); ref.set(scratch.ref.subarray(0, scratch.cap))
  Object.assign(scratch, { cap, key, tie, ref })
}

function growNodes (size: number) {
  const cap = Math.max(1024, size * 2)
  const left = new Int32Array(cap); left.set(scratch.nodeLeft.subarray(0, scratch.nodeCap))
  const right = new Int32Array(cap); right.set(scratch.nodeRight.subarray(0, scratch.nodeCap))
  const axis = new Uint8Array(cap); axis.set(scratch.nodeAxis.subarray(0, scratch.nodeCap))
  const box = new Float64Array(cap * 4); box.set(scratch.nodeBox.subarray(0, scratch.nodeCap * 4))
  Object.assign(scratch, { nodeCap: cap, nodeLeft: left, nodeRight: right, nodeAxis: axis, nodeBox: box })
}

const before = (ka: number, ta: number, kb: number, tb: number) => ka < kb || (ka === kb && ta < tb)

let heapSize = 0

function heapPush (key: number, tie: number, ref: number) {
  if (heapSize === scratch.cap) growHeap(heapSize + 1)
  const { key: K, tie: T, ref: R } = scratch
  let i = heapSize++
  while (i > 0) {
    const parent = (i - 1) >> 1
    if (!before(key, tie, K[parent], T[parent])) break
    K[i] = K[parent]; T[i] = T[parent]; R[i] = R[parent]
    i = parent
  }
  K[i] = key; T[i] = tie; R[i] = ref
}

/** Removes the top entry (read it from index 0 first). */
function heapPop () {
  const { key: K, tie: T, ref: R } = scratch
  const last = --heapSize
  if (last === 0) return
  const key = K[last]; const tie = T[last]; const ref = R[last]
  let i = 0
  const half = last >> 1
  while (i < half) {
    let child = 2 * i + 1
    const right = child + 1
    if (right < last && before(K[right], T[right], K[child], T[child])) child = right
    if (!before(K[child], T[child], key, tie)) break
    K[i] = K[child]; T[i] = T[child]; R[i] = R[child]
    i = child
  }
  K[i] = key; T[i] = tie; R[i] = ref
}

function pushNode (left: number, right: number, axis: number, minLng: number, minLat: number, maxLng: number, maxLat: number, lng: number, lat: number, cosLat: number, maxH: number) {
  if (left > right) return
  const bound = boxDist(lng, lat, cosLat, minLng, minLat, maxLng, maxLat)
  if (bound > maxH) return
  if (scratch.nodes === scratch.nodeCap) growNodes(scratch.nodes + 1)
  const slot = scratch.nodes++
  scratch.nodeLeft[slot] = left
  scratch.nodeRight[slot] = right
  scratch.nodeAxis[slot] = axis
  const b = slot * 4
  scratch.nodeBox[b] = minLng; scratch.nodeBox[b + 1] = minLat; scratch.nodeBox[b + 2] = maxLng; scratch.nodeBox[b + 3] = maxLat
  heapPush(bound, -1, -(slot + 1))
}

/** geokdbush's lower bound of h from the point to any point of the box. */
function boxDist (lng: number, lat: number, cosLat: number, minLng: number, minLat: number, maxLng: number, maxLat: number): number {
  if (lng >= minLng && lng <= maxLng) {
    if (lat < minLat) return haverSin((lat - minLat) * RAD)
    if (lat > maxLat) return haverSin((lat - maxLat) * RAD)
    return 0
  }
  const haverSinDLng = Math.min(haverSin((lng - minLng) * RAD), haverSin((lng - maxLng) * RAD))
  const extremumLat = vertexLat(lat, haverSinDLng)
  if (extremumLat > minLat && extremumLat < maxLat) return haverSinDistPartial(haverSinDLng, cosLat, lat, extremumLat)
  return Math.min(haverSinDistPartial(haverSinDLng, cosLat, lat, minLat), haverSinDistPartial(haverSinDLng, cosLat, lat, maxLat))
}

const haverSinDistPartial = (haverSinDLng: number, cosLat1: number, lat1: number, lat2: number) =>
  cosLat1 * Math.cos(lat2 * RAD) * haverSinDLng + haverSin((lat1 - lat2) * RAD)

function vertexLat (lat: number, haverSinDLng: number): number {
  const cosDLng = 1 - 2 * haverSinDLng
  if (cosDLng <= 0) return lat > 0 ? 90 : -90
  return Math.atan(Math.tan(lat * RAD) / cosDLng) / RAD
}

/**
 * Appends to `out` the `limit` sites of one sub-index nearest to the point within `maxH`, in
 * (h, position) order, keeping only positions that `accept` (when given).
 */
function around (source: SubIndex, lng: number, lat: number, cosLat: number, limit: number, maxH: number,
  accept: ((position: number) => boolean) | undefined, out: Hit[]) {
  const { kd, positions } = source
  const ids = kd.ids
  const xy = kd.coords
  const nodeSize = kd.nodeSize
  heapSize = 0
  scratch.nodes = 0
  let found = 0
  pushNode(0, ids.length - 1, 0, -180, -90, 180, 90, lng, lat, cosLat, Infinity)
  while (heapSize > 0 && found < limit) {
    const key = scratch.key[0]
    if (key > maxH) break
    const ref = scratch.ref[0]
    const tie = scratch.tie[0]
    heapPop()
    if (ref >= 0) { // a site: nothing left in the queue comes before it
      out.push({ position: tie, h: key })
      found++
      continue
    }
    const slot = -ref - 1
    const left = scratch.nodeLeft[slot]
    const right = scratch.nodeRight[slot]
    const axis = scratch.nodeAxis[slot]
    const b = slot * 4
    const minLng = scratch.nodeBox[b]; const minLat = scratch.nodeBox[b + 1]; const maxLng = scratch.nodeBox[b + 2]; const maxLat = scratch.nodeBox[b + 3]
    // Only what can lie within the radius enters the queue (geokdbush queues all and stops at
    // the first too far): in dense areas most of a leaf is beyond the radius.
    if (right - left <= nodeSize) { // leaf: queue its sites
      for (let i = left; i <= right; i++) {
        const h = haverSinDist(lng, lat, cosLat, xy[2 * i], xy[2 * i + 1])
        if (h > maxH) continue
        const position = positions[ids[i]]
        if (accept && !accept(position)) continue
        heapPush(h, position, i)
      }
      continue
    }
    const m = (left + right) >> 1
    const midLng = xy[2 * m]
    const midLat = xy[2 * m + 1]
    const h = haverSinDist(lng, lat, cosLat, midLng, midLat)
    if (h <= maxH) {
      const position = positions[ids[m]]
      if (!accept || accept(position)) heapPush(h, position, m)
    }
    const nextAxis = 1 - axis
    pushNode(left, m - 1, nextAxis, minLng, minLat, axis === 0 ? midLng : maxLng, axis === 1 ? midLat : maxLat, lng, lat, cosLat, maxH)
    pushNode(m + 1, right, nextAxis, axis === 0 ? midLng : minLng, axis === 1 ? midLat : minLat, maxLng, maxLat, lng, lat, cosLat, maxH)
  }
}

/**
 * The `limit` sites nearest to the point within the radius, over the union of `sources` (disjoint
 * sets of sites), keeping only positions that `accept` (when given), in (distance, id) order.
 * Each source gives its own first `limit` exactly; the answer is the first `limit` of their merge.
 */
export function searchNearby (sources: SubIndex[], area: SearchArea, accept?: (position: number) => boolean): Hit[] {
  const { limit } = area
  if (limit <= 0 || sources.length === 0) return []
  const cosLat = Math.cos(area.lat * RAD)
  const maxH = maxHaverSinFor(area.radiusKm)
  const lists: Hit[][] = []
  for (const source of sources) {
    const list: Hit[] = []
    around(source, area.lng, area.lat, cosLat, limit, maxH, accept, list)
    lists.push(list)
  }
  return merge(lists, limit)
}

/** The first `max` hits of lists each in (h, position) order, in that order. */
function merge (lists: Hit[][], max: number): Hit[] {
  if (lists.length === 1) return lists[0]
  const heads = new Array<number>(lists.length).fill(0)
  const out: Hit[] = []
  while (out.length < max) {
    let best = -1
    let bestHit: Hit | undefined
    for (let s = 0; s < lists.length; s++) {
      const hit = lists[s][heads[s]]
      if (hit !== undefined && (bestHit === undefined || byDistanceThenId(hit, bestHit) < 0)) {
        best = s
        bestHit = hit
      }
    }
    if (best < 0) break
    out.push(bestHit!)
    heads[best]++
  }
  return out
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
