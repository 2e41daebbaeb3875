// Nearest-first search over kdbush sub-indexes, exact to the last record: results are ordered
// by great-circle distance and then by site position (= id order), ties at the limit included.
import KDBush from 'kdbush'

export const EARTH_RADIUS_KM = 6371
const RAD = Math.PI / 180

/** A kdbush index over a subset of a dataset's sites; item i is site `positions[i]`. */
export interface SubIndex {
  kd: KDBush
  positions: Uint32Array
  /**
   * Per slot of the tree, in the tree's order, made with the index (12 bytes a site): cos(latitude),
   * one Math.cos less per site looked at; and the site's position, `positions[kd.ids[slot]]`, read
   * where the slot's coordinates are read instead of at a random place of `positions` (a cache
   * miss per site found: about a quarter of an r=25 search over a million sites). Made at load,
   * not by the first search: for a million sites that took 57-113 ms of the first request.
   */
  slotCosLats: Float64Array
  slotPositions: Uint32Array
}

/** The SubIndex of a finished kdbush tree. */
export function subIndexOf (kd: KDBush, positions: Uint32Array): SubIndex {
  const xy = kd.coords
  const ids = kd.ids
  const slotCosLats = new Float64Array(ids.length)
  const slotPositions = new Uint32Array(ids.length)
  for (let i = 0; i < ids.length; i++) {
    slotCosLats[i] = Math.cos(xy[2 * i + 1] * RAD)
    slotPositions[i] = positions[ids[i]]
  }
  return { kd, positions, slotCosLats, slotPositions }
}

export interface Hit {
  position: number
  /** haversine of the central angle: the quantity geokdbush orders and filters by */
  h: number
  /**
   * The site's slot in the tree of the sub-index it was found in (-1 from a scan): the sites of
   * one answer lie in a few leaves, so per-slot tables read for them lie together in memory.
   */
  slot: number
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
  return subIndexOf(kd, positions)
}

const haverSin = (theta: number) => {
  const s = Math.sin(theta / 2)
  return s * s
}


export const kmFromHaverSin = (h: number) => 2 * EARTH_RADIUS_KM * Math.asin(Math.sqrt(h))
export const maxHaverSinFor = (radiusKm: number) => haverSin(radiusKm / EARTH_RADIUS_KM)

/** haverSinDist with cos(lat2 * RAD) given (made once per tree slot): the same operations in the same order. */
const haverSinDistCos = (lng: number, lat: number, cosLat: number, lng2: number, lat2: number, cosLat2: number) =>
  cosLat * cosLat2 * haverSin((lng - lng2) * RAD) + haverSin((lat - lat2) * RAD)

/** Same arithmetic, in the same order, as geokdbush's haverSinDist, so orderings agree bit for bit. */
export const haverSinDist = (lng: number, lat: number, cosLat: number, lng2: number, lat2: number): number =>
  haverSinDistCos(lng, lat, cosLat, lng2, lat2, Math.cos(lat2 * RAD))

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
// Nearest-first search over a kdbush tree with geokdbush's arithmetic (haversine of the central
// angle, box lower bounds). Nodes are visited best-first; the sites found so far are kept in a
// max-heap of at most `limit`, ordered by (h, position), so a site or node that cannot beat the
// worst one held is never queued. The answer is exactly the first `limit` sites in (distance, id)
// order, ties included: a site as far as the worst held but with a lower position still gets in.
// Nothing is allocated per query but the answer.

/** Scratch space shared by all searches (the service answers one request at a time). */
const scratch = {
  // nodes to visit: slots hold each node's range, axis and box; a min-heap orders slots by bound
  nodeCap: 0,
  nodeLeft: new Int32Array(0),
  nodeRight: new Int32Array(0),
  nodeAxis: new Uint8Array(0),
  nodeBox: new Float64Array(0), // minLng, minLat, maxLng, maxLat per slot
  queueKey: new Float64Array(0), // a lower bound of h over the node's box
  queueSlot: new Int32Array(0),
  // sites held: a max-heap by (h, position), the worst on top
  bestCap: 0,
  bestH: new Float64Array(0),
  bestPosition: new Uint32Array(0),
  bestSlot: new Uint32Array(0)
}
let slots = 0
let queued = 0
let held = 0
let heldMax = 0
/** The farthest h that can still get in: the radius until `heldMax` sites are held, then the worst held. */
let bound = 0

function growNodes (size: number) {
  const cap = Math.max(1024, size * 2)
  const grown = <T extends Int32Array | Uint8Array | Float64Array>(old: T, make: (n: number) => T, per = 1) => {
    const next = make(cap * per)
    next.set(old.subarray(0, scratch.nodeCap * per))
    return next
  }
  scratch.nodeLeft = grown(scratch.nodeLeft, (n) => new Int32Array(n))
  scratch.nodeRight = grown(scratch.nodeRight, (n) => new Int32Array(n))
  scratch.nodeAxis = grown(scratch.nodeAxis, (n) => new Uint8Array(n))
  scratch.nodeBox = grown(scratch.nodeBox, (n) => new Float64Array(n), 4)
  scratch.queueKey = grown(scratch.queueKey, (n) => new Float64Array(n))
  scratch.queueSlot = grown(scratch.queueSlot, (n) => new Int32Array(n))
  scratch.nodeCap = cap
}

function makeRoomForBest (limit: number) {
  if (scratch.bestCap >= limit) return
  scratch.bestCap = Math.max(128, limit)
  scratch.bestH = new Float64Array(scratch.bestCap)
  scratch.bestPosition = new Uint32Array(scratch.bestCap)
  scratch.bestSlot = new Uint32Array(scratch.bestCap)
}

function queuePush (key: number, slot: number) {
  const K = scratch.queueKey
  const S = scratch.queueSlot
  let i = queued++
  while (i > 0) {
    const parent = (i - 1) >> 1
    if (K[parent] <= key) break
    K[i] = K[parent]; S[i] = S[parent]
    i = parent
  }
  K[i] = key; S[i] = slot
}

/** Removes the node on top of the queue (read it from index 0 first). */
function queuePop () {
  const K = scratch.queueKey
  const S = scratch.queueSlot
  const last = --queued
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

/** (ha, pa) comes after (hb, pb) in (distance, id) order. */
const after = (ha: number, pa: number, hb: number, pb: number) => ha > hb || (ha === hb && pa > pb)

function bestSiftUp (i: number, h: number, position: number, slot: number) {
  const H = scratch.bestH
  const P = scratch.bestPosition
  const S = scratch.bestSlot
  while (i > 0) {
    const parent = (i - 1) >> 1
    if (!after(h, position, H[parent], P[parent])) break
    H[i] = H[parent]; P[i] = P[parent]; S[i] = S[parent]
    i = parent
  }
  H[i] = h; P[i] = position; S[i] = slot
}

function bestSiftDown (size: number, h: number, position: number, slot: number) {
  const H = scratch.bestH
  const P = scratch.bestPosition
  const S = scratch.bestSlot
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
function offer (h: number, position: number, slot: number) {
  const H = scratch.bestH
  if (held < heldMax) {
    bestSiftUp(held++, h, position, slot)
    if (held === heldMax) bound = H[0]
  } else if (after(H[0], scratch.bestPosition[0], h, position)) {
    bestSiftDown(held, h, position, slot)
    bound = H[0]
  }
}

function pushNode (left: number, right: number, axis: number, minLng: number, minLat: number, maxLng: number, maxLat: number, lng: number, lat: number, cosLat: number, maxH: number) {
  if (left > right) return
  const bound = boxDist(lng, lat, cosLat, minLng, minLat, maxLng, maxLat)
  if (bound > maxH) return
  if (slots === scratch.nodeCap) growNodes(slots + 1)
  const slot = slots++
  scratch.nodeLeft[slot] = left
  scratch.nodeRight[slot] = right
  scratch.nodeAxis[slot] = axis
  const b = slot * 4
  scratch.nodeBox[b] = minLng; scratch.nodeBox[b + 1] = minLat; scratch.nodeBox[b + 2] = maxLng; scratch.nodeBox[b + 3] = maxLat
  queuePush(bound, slot)
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
 * The `limit` sites of one sub-index nearest to the point within `maxH`, in
 * (h, position) order, keeping only positions that `accept` (when given).
 */
function around (source: SubIndex, lng: number, lat: number, cosLat: number, limit: number, maxH: number,
  accept: ((position: number) => boolean) | undefined): Hit[] {
  const { kd, slotCosLats: cosLats, slotPositions: positions } = source
  const count = positions.length
  const xy = kd.coords
  const nodeSize = kd.nodeSize
  heldMax = Math.min(limit, count) // no more can be held than the index has sites
  makeRoomForBest(heldMax)
  const H = scratch.bestH
  const P = scratch.bestPosition
  const S = scratch.bestSlot
  slots = 0
  queued = 0
  held = 0
  bound = maxH
  pushNode(0, count - 1, 0, -180, -90, 180, 90, lng, lat, cosLat, Infinity)
  while (queued > 0) {
    if (scratch.queueKey[0] > bound) break // no node left can hold a site that gets in
    const slot = scratch.queueSlot[0]
    queuePop()
    const left = scratch.nodeLeft[slot]
    const right = scratch.nodeRight[slot]
    if (right - left <= nodeSize) { // leaf: offer its sites
      for (let i = left; i <= right; i++) {
        const h = haverSinDistCos(lng, lat, cosLat, xy[2 * i], xy[2 * i + 1], cosLats[i])
        if (h > bound) continue
        const position = positions[i]
        if (accept && !accept(position)) continue
        offer(h, position, i)
      }
      continue
    }
    const axis = scratch.nodeAxis[slot]
    const b = slot * 4
    const minLng = scratch.nodeBox[b]; const minLat = scratch.nodeBox[b + 1]; const maxLng = scratch.nodeBox[b + 2]; const maxLat = scratch.nodeBox[b + 3]
    const m = (left + right) >> 1
    const midLng = xy[2 * m]
    const midLat = xy[2 * m + 1]
    const h = haverSinDistCos(lng, lat, cosLat, midLng, midLat, cosLats[m])
    if (h <= bound) {
      const position = positions[m]
      if (!accept || accept(position)) offer(h, position, m)
    }
    const nextAxis = 1 - axis
    pushNode(left, m - 1, nextAxis, minLng, minLat, axis === 0 ? midLng : maxLng, axis === 1 ? midLat : maxLat, lng, lat, cosLat, bound)
    pushNode(m + 1, right, nextAxis, axis === 0 ? midLng : minLng, axis === 1 ? midLat : minLat, maxLng, maxLat, lng, lat, cosLat, bound)
  }
  // the held sites, nearest first: take the worst off the top, last place first
  const hits = new Array<Hit>(held)
  for (let size = held; size > 0; size--) {
    hits[size - 1] = { position: P[0], h: H[0], slot: S[0] }
    if (size > 1) bestSiftDown(size - 1, H[size - 1], P[size - 1], S[size - 1])
  }
  return hits
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
    lists.push(around(source, area.lng, area.lat, cosLat, limit, maxH, accept))
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
    if (h <= maxH) hits.push({ position, h, slot: -1 })
  }
  hits.sort(byDistanceThenId)
  return hits.length > limit ? hits.slice(0, limit) : hits
}
