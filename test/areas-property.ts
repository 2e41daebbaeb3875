// The property check of /sites/along-route and /sites/by-bbox: random routes and boxes over HTTP
// (inject) against brute force over every site, with test/route-reference.ts (independent of
// src/sites/route.ts). test/routes/areas.test.ts runs a few hundred; test/slow/areas.test.ts more.
import type { Test } from 'tap'
import { seededRandom } from '../src/sites/generator.ts'
import type { SiteRow } from '../src/sites/dataset-file.ts'
import { UNLIMITED, buildTestApp, randomSites } from './helper.ts'
import {
  EARTH_KM, TIE_KM, bearing, destination, distance, nearestOnRoute, nmAgrees, routeKm, type Point
} from './route-reference.ts'

const DEG = Math.PI / 180
const EDGE_KM = 1e-6 // a site within 1 mm of the corridor's edge may be in or out

export const fullRecord = (s: SiteRow) => ({
  id: s.id, category: String(s.category), name: s.name, region: s.region, country: s.country,
  latitude: s.latitude, longitude: s.longitude, helipaddy_link: `https://pilot.test/pad/${s.id}`
})
export const minimalRecord = (s: SiteRow) => ({
  id: s.id, category: String(s.category), latitude: s.latitude, longitude: s.longitude,
  helipaddy_link: `https://pilot.test/pad/${s.id}`
})
export const byId = (a: SiteRow, b: SiteRow) => a.id < b.id ? -1 : a.id > b.id ? 1 : 0
export const asFeatures = (records: Record<string, unknown>[]) => records.map((r) => ({
  type: 'Feature', id: r.id, geometry: { type: 'Point', coordinates: [r.longitude, r.latitude] }, properties: r
}))
export const pathOf = (points: Point[], bar = '|') => points.map((p) => `${p.lat},${p.lng}`).join(bar)

export interface Expected { site: SiteRow, alongKm: number, offsetKm: number }

/** Sorts by along, then offset (each within 1 µm equal), then id. */
const alongOrder = (a: Expected, b: Expected) => {
  const da = a.alongKm - b.alongKm
  if (Math.abs(da) > TIE_KM) return da
  const dd = a.offsetKm - b.offsetKm
  if (Math.abs(dd) > TIE_KM) return dd
  return byId(a.site, b.site)
}

/** Unit vectors, for the brute force's quick bound (a leg farther than its middle less half its length). */
const unitOf = (p: Point) => [
  Math.cos(p.lat * DEG) * Math.cos(p.lng * DEG), Math.cos(p.lat * DEG) * Math.sin(p.lng * DEG), Math.sin(p.lat * DEG)
]

/**
 * Brute force over every site: those of the categories (and tag) within `radiusKm` + 1 mm of the
 * route, in the answer's order, without a limit.
 */
export function bruteAlong (sites: SiteRow[], units: number[][], points: Point[],
  q: { radiusKm: number, categories: readonly number[], tag?: string }): Expected[] {
  const legs = points.slice(1).map((b, i) => {
    const a = points[i]
    const length = distance(a, b)
    const mid = unitOf(destination(a, bearing(a, b), length / 2))
    return { mid, reach: Math.cos(Math.min(Math.PI, q.radiusKm / EARTH_KM + length / 2 + 1e-6)) }
  })
  const out: Expected[] = []
  sites.forEach((s, i) => {
    if (!q.categories.includes(s.category) || (q.tag !== undefined && !s.tags.includes(q.tag))) return
    const u = units[i]
    const far = legs.map((l) => u[0] * l.mid[0] + u[1] * l.mid[1] + u[2] * l.mid[2] < l.reach)
    if (far.every(Boolean)) return
    const n = nearestOnRoute(points, { lat: s.latitude, lng: s.longitude }, (leg) => far[leg])
    if (n.offsetKm <= q.radiusKm + EDGE_KM) out.push({ site: s, alongKm: n.alongKm, offsetKm: n.offsetKm })
  })
  return out.sort(alongOrder)
}

export interface RouteRecord { id: string, along_nm: number, offset_nm: number, [field: string]: unknown }

/**
 * Why an answer is not the first `limit` of the brute force's sites (in order, records and
 * distances as the reference's), or undefined. Only sites within 1 mm of the corridor's edge may
 * be left out (and so let a later one in).
 */
export function compareAlong (
  got: RouteRecord[], expected: Expected[], radiusKm: number, limit: number
): string | undefined {
  if (got.length > limit) return `${got.length} sites, more than ${limit}`
  const edge = (e: Expected) => e.offsetKm > radiusKm - EDGE_KM
  let j = 0
  for (const [k, g] of got.entries()) {
    while (j < expected.length && expected[j].site.id !== g.id) {
      if (!edge(expected[j])) return `site ${k}: ${g.id}; expected ${expected[j].site.id}`
      j++
    }
    if (j === expected.length) return `site ${k}: ${g.id} is not expected there`
    const e = expected[j++]
    const { along_nm: along, offset_nm: offset, ...record } = g
    if (JSON.stringify(record) !== JSON.stringify(fullRecord(e.site))) return `${g.id}: record ${JSON.stringify(g)}`
    if (!nmAgrees(along, e.alongKm) || !nmAgrees(offset, e.offsetKm)) {
      return `${g.id}: along_nm ${along}, offset_nm ${offset}; reference ${e.alongKm / 1.852}, ${e.offsetKm / 1.852}`
    }
  }
  if (got.length < limit) {
    const missed = expected.slice(j).find((e) => !edge(e))
    if (missed) return `${missed.site.id} is missing (${got.length} of at most ${limit})`
  }
  return undefined
}

export const inBox = (s: SiteRow, [west, south, east, north]: number[]) =>
  s.latitude >= south && s.latitude <= north &&
  (west <= east ? s.longitude >= west && s.longitude <= east : s.longitude >= west || s.longitude <= east)

const wrap = (lng: number) => lng > 180 ? lng - 360 : lng < -180 ? lng + 360 : lng
const round = (v: number, digits: number) => Math.round(v * 10 ** digits) / 10 ** digits

/**
 * Random routes (dense, across the antimeridian, polar, anywhere, with a zero-length leg, out and
 * back) and boxes (small to large, edges on sites, across the antimeridian, to a pole) by partners of
 * different allow-lists, caps and max_results, with and without category_id and tags (indexed and
 * scanned); every answer compared with brute force over every site.
 */
export async function checkAreas (t: Test, options: { seed: string, sites: number, routes: number, boxes: number }) {
  // ~5,000 sites (crowded at the antimeridian, the poles and one dense region, clusters at equal
  // coordinates); ~170 carry a small tag (scanned), ~1,500 each of the others (their own index)
  const sites = randomSites(options.seed, options.sites, 's')
    .map((s, i) => i % 29 === 0 ? { ...s, tags: [...s.tags, '~small'] } : s)
  const units = sites.map((s) => unitOf({ lat: s.latitude, lng: s.longitude }))
  const partners = [
    {
      name: 'Wide', slug: 'wide', tier: 'scale' as const, categories: [2, 3, 4, 5, 6, 7, 8, 9, 10],
      otherCategories: true, radiusCapKm: 150, maxResults: 100, limitOverrides: UNLIMITED
    },
    {
      name: 'Narrow', slug: 'narrow', tier: 'growth' as const, categories: [4, 7, 9], radiusCapKm: 20, maxResults: 7,
      limitOverrides: UNLIMITED
    },
    {
      name: 'Most', slug: 'most', tier: 'growth' as const, categories: [2, 3, 4, 5, 6, 7], maxResults: 20,
      limitOverrides: UNLIMITED
    },
    {
      name: 'Rare', slug: 'rare', tier: 'growth' as const, categories: [10], otherCategories: true, radiusCapKm: 100,
      maxResults: 3, limitOverrides: UNLIMITED
    },
    {
      name: 'Many', slug: 'many', tier: 'scale' as const, categories: [2, 3, 4, 5, 6, 7, 8, 9, 10],
      otherCategories: true, radiusCapKm: 60, maxResults: 400, limitOverrides: UNLIMITED
    },
    {
      name: 'Huge', slug: 'huge', tier: 'scale' as const, categories: [3, 5, 8], otherCategories: true,
      radiusCapKm: 4000, maxResults: 50, limitOverrides: UNLIMITED
    }
  ]
  const allowed: Record<string, number[]> = {
    wide: [2, 3, 4, 5, 6, 7, 8, 9, 10], narrow: [4, 7], most: [2, 3, 4, 5, 6, 7], rare: [10],
    many: [2, 3, 4, 5, 6, 7, 8, 9, 10], huge: [3, 5, 8]
  }
  const caps: Record<string, number> = { wide: 150, narrow: 20, most: 75, rare: 100, many: 60, huge: 4000 }
  const { app, tokens } = await buildTestApp(t, { sandbox: sites, partners })
  const random = seededRandom(`${options.seed}-queries`)
  const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]
  const filters = (slug: string) => {
    const categoryId = random() < 0.15 ? pick(allowed[slug]) : undefined
    const tag = random() < 0.25 ? pick(['~fuel', '~small', '~ppr', '~none']) : undefined
    const categories = categoryId === undefined ? allowed[slug] : [categoryId]
    const params = (categoryId === undefined ? '' : `&category_id=${categoryId}`) + (tag ? `&tag=${tag}` : '')
    return { categories, tag, params }
  }

  const ROUTES = options.routes
  const kinds: Record<string, number> = {}
  let found = 0
  let full = 0
  for (let r = 0; r < ROUTES; r++) {
    const partner = pick(partners)
    const kind = pick(['dense', 'dense', 'antimeridian', 'polar', 'anywhere', 'zero-leg', 'out-and-back'])
    const pole = random() < 0.5 ? 1 : -1
    let start: Point
    if (kind === 'antimeridian') start = { lat: random() * 140 - 70, lng: wrap(178.5 + random() * 3) }
    else if (kind === 'polar') start = { lat: pole * (85 + random() * 5), lng: random() * 360 - 180 }
    else if (kind === 'anywhere') start = { lat: random() * 180 - 90, lng: random() * 360 - 180 }
    else start = { lat: 49.8 + random() * 2.4, lng: random() * 3 }
    let points = [start]
    const count = 2 + Math.floor(random() * 6)
    for (let i = 1; i < count; i++) {
      const km = (kind === 'polar' ? 250 : kind === 'dense' ? 60 : 150) * random()
      points.push(destination(points[i - 1], random() * 2 * Math.PI, km / EARTH_KM))
    }
    points = points.map((p) => ({ lat: round(p.lat, 5), lng: round(p.lng, 5) }))
    if (kind === 'zero-leg') points.splice(1, 0, { ...points[1] })
    if (kind === 'out-and-back') points.push(...points.slice(0, -1).reverse())
    if (routeKm(points) > 1850 || points.some((p) => p.lat === 0 && p.lng === 0)) continue
    kinds[kind] = (kinds[kind] ?? 0) + 1
    const radius = random() < 0.2 ? undefined : round(random() < 0.1 ? 3000 * random() : 0.5 + random() * 99.5, 3)
    const radiusKm = Math.min(radius ?? 10, caps[partner.slug])
    const { categories, tag, params } = filters(partner.slug)
    const url = `/v1/sites/along-route?path=${pathOf(points, random() < 0.5 ? '|' : '%7C')}` +
      (radius === undefined ? '' : `&radius=${radius}`) + params
    const res = await app.inject({ url, headers: { authorization: `Bearer ${tokens[partner.slug]}` } })
    if (res.statusCode !== 200) { t.fail(`${res.statusCode} for ${url}: ${res.body}`); return }
    const expected = bruteAlong(sites, units, points, { radiusKm, categories, tag })
    const got = res.json() as RouteRecord[]
    const wrong = compareAlong(got, expected, radiusKm, partner.maxResults)
    if (wrong) {
      t.fail(`along-route differs from brute force: ${wrong}`, {
        url, partner: partner.slug, got: got.map((g) => g.id), expected: expected.map((e) => e.site.id)
      })
      return
    }
    if (got.length > 0) found++
    if (got.length === partner.maxResults) full++
  }
  t.ok(found > ROUTES / 3, `${found} of the routes found sites, ${full} up to max_results: ${JSON.stringify(kinds)}`)

  const BOXES = options.boxes
  let boxesFound = 0
  let crossing = 0
  for (let b = 0; b < BOXES; b++) {
    const partner = pick(partners)
    const anchor = pick(sites)
    const width = pick([0.01, 0.3, 3, 30]) * random()
    const height = pick([0.01, 0.3, 3, 30]) * random()
    let west = round(wrap(anchor.longitude - width * random()), 3)
    let east = round(wrap(west + width), 3)
    let south = round(Math.max(-90, anchor.latitude - height * random()), 3)
    let north = round(Math.min(90, south + height), 3)
    const shape = random()
    if (shape < 0.1) [west, east] = [anchor.longitude, anchor.longitude] // edges on a site
    else if (shape < 0.2) [south, north] = [anchor.latitude, anchor.latitude]
    else if (shape < 0.25) [west, south, east, north] = [-180, round(south, 0), 180, 90]
    else if (shape < 0.3) [west, east] = [round(170 + random() * 10, 3), round(-180 + random() * 10, 3)]
    if (west === 0 && south === 0 && east === 0 && north === 0) continue
    const bbox = [west, south, east, north]
    if (west > east) crossing++
    const { categories, tag, params } = filters(partner.slug)
    const inside = sites
      .filter((s) => categories.includes(s.category) && (tag === undefined || s.tags.includes(tag)) && inBox(s, bbox))
      .sort(byId)
    const perPage = random() < 0.3 ? undefined : 1 + Math.floor(random() * 600)
    const per = Math.min(perPage ?? 200, 500)
    const totalPages = Math.ceil(inside.length / per)
    const page = 1 + Math.floor(random() * (totalPages + 1))
    const url = `/v1/sites/by-bbox?bbox=${bbox.join(',')}&page=${page}` +
      (perPage === undefined ? '' : `&per_page=${perPage}`) + params
    const res = await app.inject({ url, headers: { authorization: `Bearer ${tokens[partner.slug]}` } })
    const expected = JSON.stringify({
      bbox, page, per_page: per, total: inside.length, total_pages: totalPages,
      sites: inside.slice((page - 1) * per, page * per).map(minimalRecord)
    })
    if (res.body !== expected) { // byte for byte
      t.fail('by-bbox differs from brute force', { url, partner: partner.slug, got: res.body.slice(0, 400), expected })
      return
    }
    if (inside.length > 0) boxesFound++
  }
  t.ok(boxesFound > BOXES / 3, `${boxesFound} of ${BOXES} boxes found sites, ${crossing} across the antimeridian`)
}
