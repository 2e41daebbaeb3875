// Sites along a route's corridor and sites in a box: the trees searchPlan picks, walked box by box.
import { searchPlan, type Dataset, type SearchPlan } from './dataset.ts'
import { capBoxes, Route, TIE_RADIANS, type Box } from './route.ts'
import { EARTH_RADIUS_KM, type Accept, type SubIndex } from './spatial.ts'

/**
 * Appends the tree slots of the index's sites in the box (edges included) that `accept` keeps. The walk stops once
 * `slots` holds over `most`: then false.
 */
function slotsInBox (index: SubIndex, box: Box, accept: Accept | undefined, slots: Growing, most = Infinity): boolean {
  const { kd, slotPositions: positions } = index
  const kept = slots.count
  const coords = kd.coords
  const nodeSize = kd.nodeSize
  const { west, south, east, north } = box
  const stack = [0, kd.ids.length - 1, 0]
  while (stack.length > 0 && slots.count <= most) {
    const axis = stack.pop()!
    const right = stack.pop()!
    const left = stack.pop()!
    if (right - left <= nodeSize) {
      for (let i = left; i <= right; i++) {
        const x = coords[2 * i]
        const y = coords[2 * i + 1]
        if (x >= west && x <= east && y >= south && y <= north) slots.push(i)
      }
      continue
    }
    const m = (left + right) >> 1
    const x = coords[2 * m]
    const y = coords[2 * m + 1]
    if (x >= west && x <= east && y >= south && y <= north) slots.push(m)
    if (axis === 0 ? west <= x : south <= y) stack.push(left, m - 1, 1 - axis)
    if (axis === 0 ? east >= x : north >= y) stack.push(m + 1, right, 1 - axis)
  }
  if (slots.count > most) return false
  if (accept) {
    const { items, count } = slots
    slots.count = kept
    for (let i = kept; i < count; i++) if (accept(positions[items[i]], items[i])) items[slots.count++] = items[i]
  }
  return true
}

/** The categories are already intersected with the partner's allow-list. */
interface AreaQuery { categories: readonly number[], tag?: string }

/** A map's box: west > east crosses the antimeridian. */
export interface BoundingBox { west: number, south: number, east: number, north: number }

/** `visit` for each site of the categories (and tag) in id order: where an index would not pay. */
function eachSite (ds: Dataset, query: AreaQuery, visit: (position: number) => void): void {
  const { categories, tag } = query
  const list = tag === undefined ? undefined : ds.tagSites.get(tag) ?? new Uint32Array(0)
  const count = list === undefined ? ds.count : list.length
  for (let i = 0; i < count; i++) {
    const p = list === undefined ? i : list[i]
    if (categories.includes(ds.categories[p])) visit(p)
  }
}

/**
 * The sites in the box (edges included) of the categories (and tag): their count, and those of ranks `from` to
 * `from + size - 1` in id order, as slots of a tree's `order` or, without one, positions. A walk that finds over a
 * sixteenth of the dataset gives way to one pass over it.
 */
export function findInBox (
  ds: Dataset, bbox: BoundingBox, query: AreaQuery, from: number, size: number, scratch: AreaScratch
): { total: number, sites: Uint32Array, order: Uint32Array | undefined } {
  const { west, south, north } = bbox
  // as given: 180 and -180 are two longitudes here (a box from 180 to -180 holds both)
  const boxes = west <= bbox.east
    ? [bbox]
    : [{ west, south, east: 180, north }, { west: -180, south, east: bbox.east, north }]
  const inOrder = () => {
    const all = new Growing()
    eachSite(ds, query, (p) => {
      const lat = ds.lats[p]
      const lng = ds.lngs[p]
      if (lat >= south && lat <= north && boxes.some((b) => lng >= b.west && lng <= b.east)) all.push(p)
    })
    return { total: all.count, sites: all.done().slice(from, from + size), order: undefined }
  }
  const { indexes, scan, accept } = searchPlan(ds, query.categories, query.tag)
  if (scan !== undefined) return inOrder()
  const most = ds.count / 16
  // the slots found, and their positions beside them (with one index, the page's records are read by slot)
  const { slots, positions } = scratch
  slots.count = positions.count = 0
  for (const index of indexes) {
    for (const box of boxes) {
      const kept = slots.count
      if (!slotsInBox(index, box, accept, slots, most)) return inOrder()
      const items = positions.reserve(slots.count)
      for (let i = kept; i < slots.count; i++) items[i] = index.slotPositions[slots.items[i]]
      positions.count = slots.count
    }
  }
  const found = positions.done()
  const order = indexes.length === 1 ? indexes[0].slotPositions : undefined
  const page = pageOf(found, from, size, ds.count, scratch.buckets, order === undefined ? found : slots.items)
  return { total: found.length, sites: page, order }
}

/**
 * The items (beside `positions`, or the positions) of ranks `from` to `from + size - 1` among `positions` (distinct,
 * below `bound`), in position order. Positions are counted into buckets and only the page's buckets sorted.
 */
export function pageOf (
  positions: Uint32Array, from: number, size: number, bound: number, buckets: Uint32Array, items = positions
): Uint32Array {
  const to = Math.min(from + size, positions.length)
  if (from >= to) return new Uint32Array(0)
  const shift = Math.max(0, Math.ceil(Math.log2(bound / buckets.length)))
  buckets.fill(0)
  for (let i = 0; i < positions.length; i++) buckets[positions[i] >>> shift]++
  // the page lies in buckets `first` to `last`; `before` positions lie in the buckets before them
  let first = 0
  let before = 0
  while (before + buckets[first] <= from) before += buckets[first++]
  let last = first
  let through = before + buckets[first]
  while (through < to) through += buckets[++last]
  // each held as position * scale + its place among the held (exact: positions are below 2^32), sorted
  const count = through - before
  const scale = 2 ** Math.ceil(Math.log2(count + 1))
  if (scale > 2 ** 21) throw new RangeError(`${count} sites held for a page: at most 2^21 - 1 can be`)
  const held = new Float64Array(count)
  const heldItems = new Uint32Array(count)
  let k = 0
  for (let i = 0; i < positions.length; i++) {
    const b = positions[i] >>> shift
    if (b >= first && b <= last) {
      heldItems[k] = items[i]
      held[k] = positions[i] * scale + k
      k++
    }
  }
  held.sort()
  const page = new Uint32Array(to - from)
  for (let j = 0; j < page.length; j++) {
    const key = held[from - before + j]
    page[j] = heldItems[key - Math.floor(key / scale) * scale]
  }
  return page
}

/** Pieces a route is cut into at most, whatever its corridor's width. */
const MAX_PIECES = 512
/** A corridor at least this wide (radians) is searched in one pass: its pieces' boxes would overlap over and over. */
const WIDE = 500 / EARTH_RADIUS_KM

/**
 * The first `limit` sites along the route within `radiusKm` (the corridor's half-width) of it, by along, offset and
 * position (distances in radians), walked in pieces of half the corridor's width. A site is taken in the piece of its
 * nearest route point: once `limit` lie before a piece's end, the search is done.
 */
export function findAlongRoute (
  ds: Dataset, route: Route, query: AreaQuery & { radiusKm: number, limit: number }, scratch: AreaScratch
) {
  const radius = query.radiusKm / EARTH_RADIUS_KM
  const plan = searchPlan(ds, query.categories, query.tag)
  const found = new Found(query.limit)
  if (plan.scan !== undefined || radius >= WIDE) {
    eachSite(ds, query, (p) => { if (route.locate(ds.lats[p], ds.lngs[p], 0, radius) <= radius) found.add(p, route) })
    return found.sorted()
  }
  const { slots } = scratch
  const behind = sitesBehindStart(plan, route, query.limit, radius, found, slots)
  if (behind === 'all') return found.sorted()
  const pieceLength = Math.max(radius / 2, route.length / MAX_PIECES)
  for (let leg = 0; leg < route.legs.length; leg++) {
    const pieces = Math.max(1, Math.ceil(route.legs[leg] / pieceLength))
    const step = route.legs[leg] / pieces
    const pieceOf = (t: number) => pieces === 1 ? 0 : Math.min(pieces - 1, Math.floor(t / step))
    for (let k = 0; k < pieces; k++) {
      const cap = capBoxes(route.pointAt(leg, (k + 0.5) * step), step / 2 + radius)
      eachLocated(plan, cap, route, leg, radius, slots, (p) => {
        if (route.leg !== leg || pieceOf(route.t) !== k) return
        if (behind === 'held' && route.along <= TIE_RADIANS) return
        found.add(p, route)
      })
      // every site still to be found lies along the route at or past this piece's end
      const end = k === pieces - 1 ? route.starts[leg + 1] : route.starts[leg] + (k + 1) * step
      if (found.lastAlong < end - 2 * TIE_RADIANS) return found.sorted()
    }
  }
  return found.sorted()
}

/**
 * Sites behind the start all lie at along 0: the first `limit` are found in a half cap behind it, grown until it
 * holds that many, not by locating the whole first piece (a city's helipad has many). 'all': `found` holds the
 * answer; 'held': every site within TIE_RADIANS of along 0 and no other; 'none': nothing.
 */
function sitesBehindStart (
  plan: SearchPlan, route: Route, limit: number, radius: number, found: Found, slots: Growing
): 'all' | 'held' | 'none' {
  let reach = radius / 8
  for (;;) {
    let within = 0
    // sites past `reach` (but for ties) cannot be among the first `limit` when it holds that many
    const bound = Math.min(radius, reach + 2 * TIE_RADIANS)
    eachLocated(plan, route.behindBoxes(reach + 2 * TIE_RADIANS), route, 0, bound, slots, (p, offset) => {
      if (route.along > TIE_RADIANS) return
      found.add(p, route)
      if (offset <= reach) within++
    })
    if (within >= limit) return 'all'
    if (reach === radius) return found.count === 0 ? 'none' : 'held'
    found.count = 0
    // the next cap should hold `limit`, if the sites are spread as evenly as in this one
    reach = Math.min(radius, within === 0 ? 4 * reach : 1.2 * reach * Math.sqrt(limit / within))
  }
}

/**
 * Locates each site of the plan in the boxes against the route (`hint`: a leg likely near); `visit` for those within
 * the radius (the route holds the rest of where it lies).
 */
function eachLocated (
  { indexes, accept }: SearchPlan, boxes: Box[], route: Route, hint: number, radius: number, slots: Growing,
  visit: (position: number, offset: number) => void
): void {
  for (const box of boxes) {
    for (const index of indexes) {
      // the coordinates by tree slot: read where the walk is, not at random places of lats and lngs
      const { slotPositions: positions, slotCosLats: cosLats, kd: { coords } } = index
      slots.count = 0
      slotsInBox(index, box, accept, slots)
      for (let i = 0; i < slots.count; i++) {
        const slot = slots.items[i]
        const offset = route.locate(coords[2 * slot + 1], coords[2 * slot], hint, radius, cosLats[slot])
        if (offset <= radius) visit(positions[slot], offset)
      }
    }
  }
}

/** Positions in a typed array that doubles as it fills. */
class Growing {
  items = new Uint32Array(64)
  count = 0

  push (p: number): void {
    this.reserve(this.count + 1)[this.count++] = p
  }

  done (): Uint32Array {
    return this.items.subarray(0, this.count)
  }

  /** The items (every one kept, `count` aside), with room for `size` of them. */
  reserve (size: number): Uint32Array {
    if (this.items.length < size) {
      const more = new Uint32Array(Math.max(size, 2 * this.items.length))
      more.set(this.items)
      this.items = more
    }
    return this.items
  }
}

/**
 * What area searches use again: the tree slots a walk finds, a box's positions beside them, and a page's counts by
 * bucket. One search at a time: each route group that searches keeps its own.
 */
export class AreaScratch {
  readonly slots = new Growing()
  readonly positions = new Growing()
  readonly buckets = new Uint32Array(1024)
}

/** The first `limit` sites along a route by along, offset, position (within TIE_RADIANS equal): a max-heap. */
class Found {
  private readonly positions: Uint32Array
  private readonly along: Float64Array
  private readonly offset: Float64Array
  count = 0

  constructor (private readonly limit: number) {
    this.positions = new Uint32Array(limit)
    this.along = new Float64Array(limit)
    this.offset = new Float64Array(limit)
  }

  /** Whether the site at `i` comes after a site with these values. */
  private after (i: number, along: number, offset: number, position: number): boolean {
    const da = this.along[i] - along
    if (da > TIE_RADIANS || da < -TIE_RADIANS) return da > 0
    const dd = this.offset[i] - offset
    if (dd > TIE_RADIANS || dd < -TIE_RADIANS) return dd > 0
    return this.positions[i] > position
  }

  /** The along of the last site held once `limit` are held, else Infinity. */
  get lastAlong (): number {
    return this.count < this.limit ? Infinity : this.along[0]
  }

  add (position: number, route: Route): void {
    const { along, offset } = route
    if (this.count === this.limit) {
      if (!this.after(0, along, offset, position)) return
      this.sink(0, along, offset, position)
      return
    }
    // sift up from the new leaf
    let i = this.count++
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (this.after(parent, along, offset, position)) break
      this.put(i, this.along[parent], this.offset[parent], this.positions[parent])
      i = parent
    }
    this.put(i, along, offset, position)
  }

  /** Puts a site at `i` in place of the top, moving it down below the ones that come after it. */
  private sink (i: number, along: number, offset: number, position: number): void {
    for (;;) {
      let child = 2 * i + 1
      if (child >= this.count) break
      const right = child + 1
      if (right < this.count && this.after(right, this.along[child], this.offset[child], this.positions[child])) child++
      if (!this.after(child, along, offset, position)) break
      this.put(i, this.along[child], this.offset[child], this.positions[child])
      i = child
    }
    this.put(i, along, offset, position)
  }

  private put (i: number, along: number, offset: number, position: number): void {
    this.positions[i] = position
    this.along[i] = along
    this.offset[i] = offset
  }

  /** The sites held, first to last (the heap emptied). */
  sorted () {
    const n = this.count
    const out = { positions: new Uint32Array(n), along: new Float64Array(n), offset: new Float64Array(n) }
    for (let k = n - 1; k >= 0; k--) {
      out.positions[k] = this.positions[0]
      out.along[k] = this.along[0]
      out.offset[k] = this.offset[0]
      const last = --this.count
      if (last > 0) this.sink(0, this.along[last], this.offset[last], this.positions[last])
    }
    return out
  }
}
