// Sites along a route's corridor and sites in a box: the sub-indexes' trees walked box by box
// (kdbush's range search), with the same choice of indexes as the nearest-first search.
import { searchPlan, type Dataset } from './dataset.ts'
import { capBoxes, Route, TIE_RADIANS, type Box } from './route.ts'
import { EARTH_RADIUS_KM, type SubIndex } from './spatial.ts'

/** Calls `visit` with the tree slot of each site of the index inside the box, edges included. */
export function eachInBox (index: SubIndex, box: Box, visit: (slot: number) => void): void {
  const { kd } = index
  const coords = kd.coords
  const nodeSize = kd.nodeSize
  const { west, south, east, north } = box
  const stack = [0, kd.ids.length - 1, 0]
  while (stack.length > 0) {
    const axis = stack.pop()!
    const right = stack.pop()!
    const left = stack.pop()!
    if (right - left <= nodeSize) {
      for (let i = left; i <= right; i++) {
        const x = coords[2 * i]
        const y = coords[2 * i + 1]
        if (x >= west && x <= east && y >= south && y <= north) visit(i)
      }
      continue
    }
    const m = (left + right) >> 1
    const x = coords[2 * m]
    const y = coords[2 * m + 1]
    if (x >= west && x <= east && y >= south && y <= north) visit(m)
    if (axis === 0 ? west <= x : south <= y) stack.push(left, m - 1, 1 - axis)
    if (axis === 0 ? east >= x : north >= y) stack.push(m + 1, right, 1 - axis)
  }
}

export interface AreaQuery {
  /** allowed categories (already intersected with the partner's allow-list) */
  categories: readonly number[]
  tag?: string
}

/** A map's box: west > east crosses the antimeridian. */
export interface BoundingBox { west: number, south: number, east: number, north: number }

/** Positions (= id order) of the sites in the box, edges included, of the allowed categories (and tag). */
export function findInBox (ds: Dataset, bbox: BoundingBox, query: AreaQuery): Uint32Array {
  const { indexes, scan, accept } = searchPlan(ds, query.categories, query.tag)
  const { south, north } = bbox
  const boxes = bbox.west <= bbox.east
    ? [bbox]
    : [{ west: bbox.west, south, east: 180, north }, { west: -180, south, east: bbox.east, north }]
  const found = new Growing()
  if (scan !== undefined) {
    for (const p of scan) {
      if (accept && !accept(p)) continue
      const lng = ds.lngs[p]
      const lat = ds.lats[p]
      if (boxes.some((b) => lng >= b.west && lng <= b.east && lat >= b.south && lat <= b.north)) found.push(p)
    }
    return found.done() // a tag's sites are in id order already
  }
  for (const index of indexes) {
    const positions = index.slotPositions
    for (const box of boxes) {
      eachInBox(index, box, (slot) => {
        const p = positions[slot]
        if (!accept || accept(p)) found.push(p)
      })
    }
  }
  return found.done().sort()
}

export interface RouteQuery extends AreaQuery {
  /** the corridor's half-width */
  radiusKm: number
  limit: number
}

/** Sites along a route, ordered by along, then offset, then position; distances in radians. */
export interface AlongRoute {
  positions: Uint32Array
  along: Float64Array
  offset: Float64Array
}

/** Pieces a route is cut into at most, whatever its corridor's width. */
const MAX_PIECES = 512

/**
 * The first `limit` sites along the route within `radiusKm` of it. The route is walked in pieces
 * of about the corridor's width, each searched in the boxes of a cap around it; a site is taken in
 * the piece that holds its nearest point of the route, so once `limit` sites lie before the end of
 * a piece, no later piece can hold one that comes first.
 */
export function findAlongRoute (ds: Dataset, route: Route, query: RouteQuery): AlongRoute {
  const radius = query.radiusKm / EARTH_RADIUS_KM
  const { indexes, scan, accept } = searchPlan(ds, query.categories, query.tag)
  const { lats, lngs } = ds
  const found = new Found()
  if (scan !== undefined) {
    for (const p of scan) {
      if ((!accept || accept(p)) && route.locate(lats[p], lngs[p]) <= radius) found.add(p, route)
    }
    return found.first(query.limit)
  }
  const pieceLength = Math.max(radius, route.length / MAX_PIECES)
  for (let leg = 0; leg < route.legs.length; leg++) {
    const pieces = Math.max(1, Math.ceil(route.legs[leg] / pieceLength))
    const step = route.legs[leg] / pieces
    const pieceOf = (t: number) => pieces === 1 ? 0 : Math.min(pieces - 1, Math.floor(t / step))
    for (let k = 0; k < pieces; k++) {
      for (const box of capBoxes(route.pointAt(leg, (k + 0.5) * step), step / 2 + radius)) {
        for (const index of indexes) {
          const positions = index.slotPositions
          eachInBox(index, box, (slot) => {
            const p = positions[slot]
            if (accept && !accept(p)) return
            if (route.locate(lats[p], lngs[p], leg) > radius || route.leg !== leg || pieceOf(route.t) !== k) return
            found.add(p, route)
          })
        }
      }
      // every site still to be found lies along the route at or past this piece's end
      const end = k === pieces - 1 ? route.starts[leg + 1] : route.starts[leg] + (k + 1) * step
      if (found.count >= query.limit && found.countBefore(end - 2 * TIE_RADIANS) >= query.limit) {
        return found.first(query.limit)
      }
    }
  }
  return found.first(query.limit)
}

/** Positions in a typed array that doubles as it fills. */
class Growing {
  private items = new Uint32Array(64)
  count = 0

  push (p: number): void {
    if (this.count === this.items.length) {
      const more = new Uint32Array(2 * this.count)
      more.set(this.items)
      this.items = more
    }
    this.items[this.count++] = p
  }

  done (): Uint32Array {
    return this.items.subarray(0, this.count)
  }
}

/** Sites found along a route with their distances, in typed arrays that double as they fill. */
class Found {
  private positions = new Uint32Array(64)
  private along = new Float64Array(64)
  private offset = new Float64Array(64)
  count = 0

  add (p: number, route: Route): void {
    if (this.count === this.positions.length) {
      const grow = <T extends Uint32Array | Float64Array>(a: T, b: T) => {
        b.set(a)
        return b
      }
      this.positions = grow(this.positions, new Uint32Array(2 * this.count))
      this.along = grow(this.along, new Float64Array(2 * this.count))
      this.offset = grow(this.offset, new Float64Array(2 * this.count))
    }
    this.positions[this.count] = p
    this.along[this.count] = route.along
    this.offset[this.count] = route.offset
    this.count++
  }

  countBefore (along: number): number {
    let n = 0
    for (let i = 0; i < this.count; i++) if (this.along[i] < along) n++
    return n
  }

  /**
   * The first `limit` by along, then offset, then position; values within TIE_RADIANS of each
   * other are equal.
   */
  first (limit: number): AlongRoute {
    const { positions, along, offset } = this
    const order = new Uint32Array(this.count)
    for (let i = 0; i < order.length; i++) order[i] = i
    order.sort((i, j) => {
      const da = along[i] - along[j]
      if (da > TIE_RADIANS || da < -TIE_RADIANS) return da
      const dd = offset[i] - offset[j]
      if (dd > TIE_RADIANS || dd < -TIE_RADIANS) return dd
      return positions[i] - positions[j]
    })
    const n = Math.min(limit, order.length)
    const out = { positions: new Uint32Array(n), along: new Float64Array(n), offset: new Float64Array(n) }
    for (let k = 0; k < n; k++) {
      out.positions[k] = positions[order[k]]
      out.along[k] = along[order[k]]
      out.offset[k] = offset[order[k]]
    }
    return out
  }
}
