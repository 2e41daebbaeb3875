// /sites/along-route and /sites/by-bbox over HTTP (inject) on a real SQLite fixture: against brute
// force over every site (test/areas-property.ts) on random routes and boxes, then named cases with
// exact bodies: the antimeridian, the poles, zero-length legs, out-and-back, edges, ties, rare
// categories, tags, the first max_results, GeoJSON, errors, rows and caching.
import t from 'tap'
import type { SiteRow } from '../../src/sites/dataset-file.ts'
import { UNLIMITED, buildTestApp, site } from '../helper.ts'
import { EARTH_KM, destination, distance, nearestOnRoute, nm, type Point } from '../route-reference.ts'
import { asFeatures, byId, checkAreas, fullRecord, minimalRecord } from '../areas-property.ts'

const DEG = Math.PI / 180
const kmOfDeg = (deg: number) => deg * DEG * EARTH_KM
const latLng = ({ lat, lng }: Point) => ({ latitude: lat, longitude: lng })

t.test('random routes and boxes against brute force over every site', async (t) => {
  // ~5,000 sites (crowded at the antimeridian, the poles and one dense region, clusters at equal
  // coordinates); ~170 carry a small tag (scanned), ~1,500 each of the others (their own index)
  await checkAreas(t, { seed: 'areas-http', sites: 5000, routes: 300, boxes: 300 })
})

// Named cases, each in a corner of the world of its own.
const PIECE_TIE_DEG = 0.4e-9 / EARTH_KM / DEG // 0.4 µm along the equator
const latOfKm = (km: number) => km / EARTH_KM / DEG
const fSites: SiteRow[] = [
  // the first leg (0.2°) of 40,40 → 40.2,40 → 42,40 → 44,40 holds 150 sites, the later legs 1,200;
  // all on the meridian (offset 0, along = the latitude's difference); ids run against the route
  ...Array.from({ length: 150 }, (_, k) => site(`f1-${String(149 - k).padStart(3, '0')}`, [4, 7, 4, 10][k % 4],
    40 + (k + 0.5) * 0.001, 40, [...(k % 3 === 0 ? ['~big'] : []), ...(k % 40 === 5 ? ['~small'] : [])])),
  ...Array.from({ length: 1200 }, (_, k) => site(`f2-${String(1199 - k).padStart(4, '0')}`, [7, 4, 9, 10, 4][k % 5],
    40.2 + (k + 0.5) * 0.003, 40, ['~big', ...(k % 300 === 7 ? ['~small'] : [])]))
]
const named: SiteRow[] = [
  // across the antimeridian, along 10,179.5 → 10,-179.5
  site('am-1', 4, 10, 179.8), site('am-2', 4, 10.05, -179.9), site('am-3', 7, 9.98, 180),
  site('am-4', 7, 10.02, -180), site('am-5', 4, 10, 179.45), site('am-far', 4, 10, 170),
  // over the north pole, along 88,0 → 88,180
  site('np-1', 4, 89, 0), site('np-2', 7, 90, 0), site('np-3', 4, 89, 180), site('np-4', 4, 89.5, 90),
  site('np-5', 7, 89.5, -90), site('np-6', 4, 88.5, 45), site('np-7', 4, 87.5, 0),
  // a zero-length leg: 20,20 → 20.5,20 → 20.5,20 → 21,20
  site('zl-1', 4, 20.5, 20), site('zl-2', 4, 20.5, 20.03), site('zl-3', 7, 20.7, 19.99), site('zl-4', 7, 20.3, 20),
  // out and back: 30,30 → 30.5,30 → 30,30
  site('ob-1', 4, 30.1, 30.01), site('ob-2', 4, 30.4, 29.99), site('ob-3', 7, 30.5, 30), site('ob-4', 7, 30.3, 30),
  site('ob-5', 4, 29.95, 30),
  // the equator, 0,10 → 0,11: the corridor's edge 1 m either side, and ties in along
  site('eq-start', 4, 0, 10), site('eq-end', 4, 0, 11),
  site('eq-in', 7, latOfKm(5 - 0.001), 10.5), site('eq-out', 7, -latOfKm(5 + 0.001), 10.6),
  site('tie-1', 4, 0.02, 10.3), site('tie-2', 7, -0.01, 10.3), site('tie-3', 4, 0.01, 10.3),
  // a box 60,10,61,11: corners and edges in, a thousandth of a degree beyond them out, category 1 never
  site('bx-1', 4, 10, 60), site('bx-2', 7, 11, 61), site('bx-3', 4, 10.5, 60), site('bx-4', 7, 10.5, 61),
  site('bx-5', 9, 10, 60.5), site('bx-6', 4, 11, 60.5), site('bx-7', 7, 10.5, 60.5),
  site('bx-8', 4, 9.999, 60.5), site('bx-9', 4, 11.001, 60.5), site('bx-a', 4, 10.5, 59.999),
  site('bx-b', 4, 10.5, 61.001), site('bx-c', 1, 10.5, 60.6),
  // 0,50 → 0,51 with radius 27.8 km is searched in 4 pieces of 0.25°: as far along (0.8 µm apart) on
  // either side of the first pieces' boundary, pc-b nearer the route
  site('pc-a', 4, 0.01, 50.25 - PIECE_TIE_DEG), site('pc-b', 4, -0.005, 50.25 + PIECE_TIE_DEG),
  // a crowded start, -30,60 → -29.9,60: sites on it and behind it (along 0, by their distance from it), two as
  // far behind on either side of the meridian, and one just ahead of it
  site('cs-on', 7, -30, 60), ...[1, 2, 3, 6].map((k) => site(`cs-${k}`, 4, -30 - k / 1000, 60)),
  site('cs-tie-b', 4, -30.004, 60.002), site('cs-tie-a', 7, -30.004, 59.998), site('cs-ahead', 4, -29.9995, 60),
  site('cs-c2', 4, -30.002, 59.998), site('cs-c1', 7, -30.002, 60.002), site('cs-s', 4, -30.0025, 60),
  // 0,70 → 0,70.1 at radius 8: the first cap looked at behind the start reaches 1 km; rb-b 0.2 µm inside it,
  // rb-a 0.3 µm outside, as far (to 1 µm) and first by id
  site('rb-b', 4, 0, 70 - (1 - 2e-10) / EARTH_KM / DEG),
  { ...site('rb-a', 4, 0, 0), ...latLng(destination({ lat: 0, lng: 70 }, 200 * DEG, (1 + 3e-10) / EARTH_KM)) },
  // a first leg of 3 µm, -20,-50 → north: its start is the nearest point of sites well in front of it too
  site('sl-behind', 4, -20.001, -50), site('sl-front', 4, -19.998, -49.99),
  ...fSites
]
const { app, tokens } = await buildTestApp(t, {
  sandbox: named,
  production: [site('prod-1', 4, 10, 179.9)],
  partners: [
    { name: 'Growth', slug: 'growth', tier: 'growth', limitOverrides: UNLIMITED }, // 4 and 7, 75 km, 100
    {
      name: 'Wide', slug: 'wide', tier: 'scale', categories: [2, 3, 4, 5, 6, 7, 8, 9, 10], otherCategories: true,
      maxResults: 200, limitOverrides: UNLIMITED
    },
    {
      name: 'Rare', slug: 'rare', tier: 'growth', categories: [10], otherCategories: true, maxResults: 5,
      limitOverrides: UNLIMITED
    },
    { name: 'One', slug: 'one', tier: 'growth', maxResults: 1, limitOverrides: UNLIMITED },
    { name: 'Five', slug: 'five', tier: 'growth', maxResults: 5, limitOverrides: UNLIMITED },
    { name: 'Capped', slug: 'capped', tier: 'growth', radiusCapKm: 5, limitOverrides: UNLIMITED },
    { name: 'Live', slug: 'live', tier: 'growth', environment: 'production', limitOverrides: UNLIMITED },
    { name: 'Demo', slug: 'demo', tier: 'demo', limitOverrides: UNLIMITED },
    { name: 'Rows', slug: 'rows', tier: 'growth', limitOverrides: UNLIMITED },
    { name: 'Cache', slug: 'cache', tier: 'growth', limitOverrides: UNLIMITED },
    {
      name: 'Limited', slug: 'limited', tier: 'growth',
      limitOverrides: { minute: 3, hour: 'unlimited', day: 'unlimited' }
    }
  ]
})
const get = (slug: string, path: string, headers: Record<string, string> = {}) =>
  app.inject({ url: `/v1${path}`, headers: { authorization: `Bearer ${tokens[slug]}`, ...headers } })
const json = async (slug: string, path: string) => {
  const res = await get(slug, path)
  if (res.statusCode !== 200) throw new Error(`${path}: ${res.statusCode} ${res.body}`)
  return res.json()
}
const siteOf = (id: string) => named.find((s) => s.id === id)!
/** The full record with along_nm and offset_nm given in km. */
const at = (id: string, alongKm: number, offsetKm: number) =>
  ({ ...fullRecord(siteOf(id)), along_nm: nm(alongKm), offset_nm: nm(offsetKm) })
/** The full records of sites in the given order, their distances by the reference. */
const byReference = (points: Point[], ids: string[]) => ids.map((id) => {
  const s = siteOf(id)
  const n = nearestOnRoute(points, { lat: s.latitude, lng: s.longitude })
  return at(id, n.alongKm, n.offsetKm)
})
const points = (path: string) => path.split('|').map((p) => {
  const [lat, lng] = p.split(',').map(Number)
  return { lat, lng }
})

t.test('across the antimeridian: a route and boxes', async (t) => {
  const path = '10,179.5|10,-179.5'
  // am-3 (9.98, 180) and am-4 (10.02, -180) are on the leg's mid meridian: as far along, am-4 nearer
  t.same(await json('growth', `/sites/along-route?path=${path}`),
    byReference(points(path), ['am-5', 'am-1', 'am-4', 'am-3', 'am-2']))
  t.same((await json('growth', `/sites/along-route?path=${path}`))[0],
    at('am-5', 0, distance({ lat: 10, lng: 179.5 }, { lat: 10, lng: 179.45 }) * EARTH_KM), 'before the start: along 0')
  const box = async (bbox: string) =>
    (await json('growth', `/sites/by-bbox?bbox=${bbox}`)).sites.map((s: { id: string }) => s.id)
  t.same(await json('growth', '/sites/by-bbox?bbox=179.5,9.9,-179.5,10.1'), {
    bbox: [179.5, 9.9, -179.5, 10.1], page: 1, per_page: 200, total: 4, total_pages: 1,
    sites: ['am-1', 'am-2', 'am-3', 'am-4'].map((id) => minimalRecord(siteOf(id)))
  })
  t.same(await box('179.5,9.9,180,10.1'), ['am-1', 'am-3'], 'a box ending at 180 holds 180, not -180')
  t.same(await box('-180,9.9,-179.5,10.1'), ['am-2', 'am-4'], 'a box starting at -180 holds -180, not 180')
  t.same(await box('180,9.9,-180,10.1'), ['am-3', 'am-4'], '180 to -180: the antimeridian alone')
  t.same(await box('-180,9.9,180,10.1'), ['am-1', 'am-2', 'am-3', 'am-4', 'am-5', 'am-far', 'bx-1', 'bx-8'],
    'the whole world')
  t.same(await box('179.8,9.98,-179.9,10.05'), ['am-1', 'am-2', 'am-3', 'am-4'], 'edges in, on both sides')
  t.same(await box('179.801,9.981,-179.901,10.049'), ['am-4'], 'a thousandth of a degree inside them')
})

t.test('over the north pole; a box reaching it', async (t) => {
  const path = '88,0|88,180'
  // the route is the meridian 0/180: np-4 and np-5 are 0.5° off it (asin(cos 89.5°)), their foot the pole
  t.same(await json('growth', `/sites/along-route?path=${path}&radius=60`), [
    at('np-7', 0, kmOfDeg(0.5)), at('np-1', kmOfDeg(1), 0), at('np-2', kmOfDeg(2), 0),
    at('np-4', kmOfDeg(2), kmOfDeg(0.5)), at('np-5', kmOfDeg(2), kmOfDeg(0.5)), at('np-3', kmOfDeg(3), 0)
  ])
  t.same((await json('growth', `/sites/along-route?path=${path}`)).map((s: { id: string }) => s.id),
    ['np-1', 'np-2', 'np-3'], 'radius 10: the sites on the route')
  t.same((await json('growth', '/sites/along-route?path=89,-90|90,0|89,90&radius=60'))
    .map((s: { id: string }) => s.id), ['np-5', 'np-2', 'np-4'], 'through the pole itself (np-1 and np-3: 1° off)')
  t.same(await json('growth', '/sites/by-bbox?bbox=-180,89,180,90'), {
    bbox: [-180, 89, 180, 90], page: 1, per_page: 200, total: 5, total_pages: 1,
    sites: ['np-1', 'np-2', 'np-3', 'np-4', 'np-5'].map((id) => minimalRecord(siteOf(id)))
  })
  t.same((await json('growth', '/sites/by-bbox?bbox=0,89,90,90')).sites.map((s: { id: string }) => s.id),
    ['np-1', 'np-2', 'np-4'])
})

t.test('a zero-length leg; out and back', async (t) => {
  const zero = '20,20|20.5,20|20.5,20|21,20'
  t.same(await json('growth', `/sites/along-route?path=${zero}`), [
    at('zl-4', kmOfDeg(0.3), 0), at('zl-1', kmOfDeg(0.5), 0), ...byReference(points(zero), ['zl-2', 'zl-3'])
  ])
  t.same(await json('growth', '/sites/along-route?path=20.5,20|20.5,20&radius=30'),
    byReference(points('20.5,20|20.5,20'), ['zl-1', 'zl-2', 'zl-4', 'zl-3']).map((r) => ({ ...r, along_nm: 0 })),
    'a route of one point twice: the sites around it by distance')
  const back = '30,30|30.5,30|30,30'
  const out = points('30,30|30.5,30')
  const expected = [
    at('ob-5', 0, kmOfDeg(0.05)), ...byReference(out, ['ob-1']), at('ob-4', kmOfDeg(0.3), 0),
    ...byReference(out, ['ob-2']), at('ob-3', kmOfDeg(0.5), 0)
  ]
  t.same(await json('growth', `/sites/along-route?path=${back}`), expected, 'each site once, on the way out')
  t.same(await json('growth', `/sites/along-route?path=${back}|30.5,30`), expected, 'out, back and out again')
})

t.test('the corridor\'s edge; ties in along', async (t) => {
  const path = '0,10|0,11'
  // on the equator: a site's foot is its own longitude, its offset its latitude
  const expected = [
    at('eq-start', 0, 0), at('tie-2', kmOfDeg(0.3), kmOfDeg(0.01)), at('tie-3', kmOfDeg(0.3), kmOfDeg(0.01)),
    at('tie-1', kmOfDeg(0.3), kmOfDeg(0.02)), at('eq-in', kmOfDeg(0.5), 4.999), at('eq-end', kmOfDeg(1), 0)
  ]
  t.same(await json('growth', `/sites/along-route?path=${path}&radius=5`), expected,
    '1 m inside the edge in, 1 m outside out; as far along: by offset, then by id')
  t.same((await json('growth', `/sites/along-route?path=${path}&radius=5.002`)).map((s: { id: string }) => s.id),
    ['eq-start', 'tie-2', 'tie-3', 'tie-1', 'eq-in', 'eq-out', 'eq-end'])
  t.same((await json('growth', `/sites/along-route?path=${path}&radius=4.998`)).map((s: { id: string }) => s.id),
    ['eq-start', 'tie-2', 'tie-3', 'tie-1', 'eq-end'])
  t.same(await json('capped', `/sites/along-route?path=${path}&radius=75`), expected,
    'a radius above the partner\'s cap is the cap')
  t.same((await json('growth', '/sites/along-route?path=0,11|0,10&radius=5')).map((s: { id: string }) => s.id),
    ['eq-end', 'eq-in', 'tie-2', 'tie-3', 'tie-1', 'eq-start'], 'the other way')
  // less than 1 µm apart along the route is as far along, wherever the search cuts the route
  const pieces = '/sites/along-route?path=0,50|0,51&radius=27.8'
  t.same((await json('growth', pieces)).map((s: { id: string }) => s.id), ['pc-b', 'pc-a'])
  t.same(await json('one', pieces), [at('pc-b', kmOfDeg(0.25), kmOfDeg(0.005))], 'max_results 1: the nearer')
})

t.test('a crowded start: the sites behind it lie at along 0, nearest first', async (t) => {
  const path = '-30,60|-29.9,60'
  // cs-s is nearer than cs-c1 and cs-c2, yet only they lie in a box of cs-2's distance around the start
  const behind = ['cs-on', 'cs-1', 'cs-2', 'cs-s', 'cs-c1', 'cs-c2', 'cs-3', 'cs-tie-a', 'cs-tie-b', 'cs-6']
  const all = byReference(points(path), [...behind, 'cs-ahead'])
  t.same(all.map((s) => s.along_nm), [...behind.map(() => 0), nm(0.5 / 1000 * DEG * EARTH_KM)])
  t.same(await json('growth', `/sites/along-route?path=${path}&radius=2`), all, 'fewer behind it than max_results')
  t.same(await json('five', `/sites/along-route?path=${path}&radius=2`), all.slice(0, 5),
    'more behind it than max_results: the nearest, ties by id')
  t.same(await json('one', `/sites/along-route?path=${path}&radius=2`), all.slice(0, 1))
  t.same(await json('five', `/sites/along-route?path=${path}&radius=2&category_id=4`),
    all.filter((s) => s.category === '4').slice(0, 5), 'of one category')
})

t.test('the sites behind the start as far as the last of max_results, to 1 µm, are ordered by id', async (t) => {
  const path = '0,70|0,70.1'
  const [a, b] = byReference(points(path), ['rb-a', 'rb-b'])
  t.same([a.along_nm, a.offset_nm, b.along_nm, b.offset_nm], [0, nm(1), 0, nm(1)])
  t.same(await json('one', `/sites/along-route?path=${path}&radius=8`), [a])
  t.same(await json('growth', `/sites/along-route?path=${path}&radius=8`), [a, b])
})

t.test('a first leg of a few micrometres: sites in front of its start that lie at along 0', async (t) => {
  const path = '-20,-50|-19.999999999973,-50'
  const expected = byReference(points(path), ['sl-behind', 'sl-front'])
  t.same(expected.map((s) => s.along_nm), [0, 0])
  t.same(await json('growth', `/sites/along-route?path=${path}&radius=5`), expected)
})

const fIds = (filter: (s: SiteRow) => boolean, n: number) =>
  fSites.filter(filter).sort((a, b) => a.latitude - b.latitude).slice(0, n)
    .map((s) => at(s.id, kmOfDeg(s.latitude - 40), 0))
const F = '/sites/along-route?path=40,40|40.2,40|42,40|44,40'

t.test('the first max_results along the route, whatever the later legs hold', async (t) => {
  const first = await json('growth', F)
  t.equal(first.length, 100)
  t.same(first, fIds((s) => [4, 7].includes(s.category), 100))
  t.ok(first.every((s: { id: string }) => s.id.startsWith('f1-')), 'all on the first leg')
  const wide = await json('wide', F)
  t.same(wide, fIds(() => true, 200), 'max_results 200: the first leg\'s 150, then the next 50')
  t.same(wide.slice(148, 152).map((s: { id: string }) => s.id), ['f1-001', 'f1-000', 'f2-1199', 'f2-1198'])
  t.same(await json('growth', `${F}&category_id=7`), fIds((s) => s.category === 7, 100), 'category_id')
  t.same(await json('growth', `${F}&tag=~big`), fIds((s) => [4, 7].includes(s.category) && s.tags.includes('~big'),
    100), 'a tag with its own index')
  t.same(await json('wide', `${F}&tag=~small`), fIds((s) => s.tags.includes('~small'), 200), 'a small tag, scanned')
  t.equal((await json('wide', `${F}&tag=~small`)).length, 8)
  t.same(await json('growth', `${F}&tag=~big&category_id=4`),
    fIds((s) => s.category === 4 && s.tags.includes('~big'), 100))
  t.same(await json('growth', `${F}&tag=~nothing`), [])
})

t.test('a partner of rare categories (10 only, with other categories)', async (t) => {
  t.same(await json('rare', F), fIds((s) => s.category === 10, 5))
  t.same(await json('rare', `${F}&category_id=10&tag=~big`), fIds((s) => s.category === 10 && s.tags.includes('~big'),
    5))
  t.same(await json('rare', '/sites/along-route?path=0,10|0,11&radius=5'), [], 'none of its categories there')
  t.same((await json('rare', '/sites/by-bbox?bbox=39,40,41,40.01')).sites.map((s: { id: string }) => s.id),
    fSites.filter((s) => s.category === 10 && s.latitude <= 40.01).map((s) => s.id).sort())
  t.same((await json('wide', '/sites/by-bbox?bbox=60,10,61,11')).sites.map((s: { id: string }) => s.id),
    ['bx-1', 'bx-2', 'bx-3', 'bx-4', 'bx-5', 'bx-6', 'bx-7'], 'edges inside; category 1 never')
})

t.test('by-bbox: edges inside, pages, filters', async (t) => {
  const ids = ['bx-1', 'bx-2', 'bx-3', 'bx-4', 'bx-6', 'bx-7'] // growth: 4 and 7, not bx-5 (9)
  const page = (n: number, sites: string[]) => ({
    bbox: [60, 10, 61, 11], page: n, per_page: 4, total: 6, total_pages: 2,
    sites: sites.map((id) => minimalRecord(siteOf(id)))
  })
  t.same(await json('growth', '/sites/by-bbox?bbox=60,10,61,11&per_page=4'), page(1, ids.slice(0, 4)))
  t.same(await json('growth', '/sites/by-bbox?bbox=60,10,61,11&per_page=4&page=2'), page(2, ids.slice(4)))
  t.same(await json('growth', '/sites/by-bbox?bbox=60,10,61,11&per_page=4&page=3'), page(3, []),
    'past the last page: no sites, true totals')
  t.same(await json('growth', '/sites/by-bbox?bbox=60.0,10,61,11.000&per_page=100000'), {
    bbox: [60, 10, 61, 11], page: 1, per_page: 500, total: 6, total_pages: 1,
    sites: ids.map((id) => minimalRecord(siteOf(id)))
  }, 'per_page above 500 is 500')
  t.same(await json('growth', '/sites/by-bbox?bbox=60,10,61,11&category_id=7'), {
    bbox: [60, 10, 61, 11], page: 1, per_page: 200, total: 3, total_pages: 1,
    sites: ['bx-2', 'bx-4', 'bx-7'].map((id) => minimalRecord(siteOf(id)))
  })
  t.same(await json('growth', '/sites/by-bbox?bbox=50,-10,70,11&tag=~big'), {
    bbox: [50, -10, 70, 11], page: 1, per_page: 200, total: 0, total_pages: 0, sites: []
  }, 'nothing: total_pages 0')
  const small = fSites.filter((s) => s.tags.includes('~small') && [4, 7].includes(s.category)).sort(byId)
  t.same((await json('growth', '/sites/by-bbox?bbox=39,39,41,45&tag=~small')).sites,
    small.map(minimalRecord), 'a small tag, scanned')
  const big = fSites.filter((s) => s.tags.includes('~big') && s.category === 4 && s.latitude <= 41).sort(byId)
  const bigPage = await json('growth', '/sites/by-bbox?bbox=39,39,41,41&tag=~big&category_id=4&per_page=50&page=2')
  t.same([bigPage.total, bigPage.sites], [big.length, big.slice(50, 100).map(minimalRecord)], 'a tag with its index')
  t.same((await json('live', '/sites/by-bbox?bbox=179,9,-179,11')).sites.map((s: { id: string }) => s.id),
    ['prod-1'], 'a production partner: production data')
  t.same((await json('live', '/sites/by-bbox?bbox=179,9,-179,11&demo=true')).total, 5, 'demo=true: the sandbox')
  const am = '/sites/along-route?path=10,179.5|10,-179.5'
  t.same((await json('live', am)).map((s: { id: string }) => s.id), ['prod-1'], 'along-route too')
  t.same((await json('live', `${am}&demo=1`)).map((s: { id: string }) => s.id),
    ['am-5', 'am-1', 'am-4', 'am-3', 'am-2'])
})

t.test('GeoJSON', async (t) => {
  const route = '/sites/along-route?path=0,10|0,11&radius=5'
  const records = await json('growth', route)
  const geo = await get('growth', `${route}&format=geojson`)
  t.equal(geo.headers['content-type'], 'application/geo+json; charset=utf-8')
  t.equal(geo.body, JSON.stringify({ type: 'FeatureCollection', features: asFeatures(records) }))
  t.same(geo.json().features[1].properties, at('tie-2', kmOfDeg(0.3), kmOfDeg(0.01)),
    'along_nm, offset_nm in properties')
  const box = '/sites/by-bbox?bbox=60,10,61,11&per_page=4&page=2'
  const page = await json('growth', box)
  const geoBox = await get('growth', `${box}&format=geojson`)
  t.equal(geoBox.headers['content-type'], 'application/geo+json; charset=utf-8')
  t.equal(geoBox.body, JSON.stringify({
    type: 'FeatureCollection', bbox: [60, 10, 61, 11], page: 2, per_page: 4, total: 6, total_pages: 2,
    features: asFeatures(page.sites)
  }))
  t.equal(page.sites.length, 2)
})

t.test('errors, in order', async (t) => {
  const missing = (param: string) => ({
    code: 'rest_missing_callback_param', message: `Missing parameter(s): ${param}.`,
    data: { status: 400, params: [param] }
  })
  const coordinates = (params: Record<string, string>) => ({
    code: 'svc_partner_api_invalid_coordinates',
    message: 'Latitude must be a number from -90 to 90 and longitude a number from -180 to 180.',
    data: { status: 400, params }
  })
  const ambiguous = {
    code: 'svc_partner_api_ambiguous_coordinates', message: 'Coordinates 0,0 are ambiguous. Use a real-world location.',
    data: { status: 400 }
  }
  const malformed = (params: Record<string, string>) => ({
    code: 'rest_invalid_param', message: `Invalid parameter(s): ${Object.keys(params).join(', ')}.`,
    data: { status: 400, params }
  })
  const notPermitted = {
    code: 'svc_partner_api_category_not_permitted', message: 'The category is not in the allow-list of this partner.',
    data: { status: 403 }
  }
  const LAT = 'latitude must be a number from -90 to 90'
  const LNG = 'longitude must be a number from -180 to 180'
  const BBOX = 'bbox must be four numbers: west,south,east,north (longitudes and latitudes in degrees)'
  const RADIUS = 'radius must be a number greater than 0'
  const A = '/sites/along-route'
  const B = '/sites/by-bbox'
  const hundredAndOne = Array.from({ length: 101 }, (_, i) => `${40 + i / 1000},5`).join('|')
  const cases: [string, number, object][] = [
    [`${A}`, 400, missing('path')],
    [`${A}?radius=-1&category_id=x&format=kml`, 400, missing('path')],
    [`${A}?path=91,0|50,1`, 400, coordinates({ path: `point 1: ${LAT}` })],
    [`${A}?path=50,1|50,-181&radius=x&category_id=99`, 400, coordinates({ path: `point 2: ${LNG}` })],
    [`${A}?path=50,1|x,1`, 400, coordinates({ path: `point 2: ${LAT}` })],
    [`${A}?path=0,0|91,1`, 400, coordinates({ path: `point 2: ${LAT}` })],
    [`${A}?path=0,0|50,1&radius=0`, 400, ambiguous],
    [`${A}?path=50,1|-0.0,0.000&radius=x&category_id=99`, 400, ambiguous],
    [`${A}?path=0,1|0,20|0,0`, 400, ambiguous],
    [`${A}?path=91,0|50`, 400, malformed({ path: 'point 2: "50" is not a lat,lng pair' })],
    [`${A}?path=50,1%7C50,2,3&radius=0`, 400, malformed({
      path: 'point 2: "50,2,3" is not a lat,lng pair', radius: RADIUS
    })],
    [`${A}?path=`, 400, malformed({ path: 'path must be 2 to 100 lat,lng points separated by |; it has 0' })],
    [`${A}?path=50,1`, 400, malformed({ path: 'path must be 2 to 100 lat,lng points separated by |; it has 1' })],
    [`${A}?path=${hundredAndOne}`, 400, malformed({
      path: 'path must be 2 to 100 lat,lng points separated by |; it has 101'
    })],
    [`${A}?path=50,1|50,2&path=50,1|50,2`, 400, malformed({ path: 'path was given more than once' })],
    [`${A}?path=0,1|0,20`, 400, malformed({ path: 'path is 1140.8 nm long; a route may be at most 1000 nm' })],
    [`${A}?path=50,1|50,2&radius=abc`, 400, malformed({ radius: RADIUS })],
    [`${A}?path=50,1|50,2&radius=5&radius=6`, 400, malformed({ radius: 'radius was given more than once' })],
    [`${A}?path=50,1|50,2&category_id=99`, 403, notPermitted],
    [`${A}?path=50,1|50,2&category_id=10`, 403, notPermitted],
    [`${B}`, 400, missing('bbox')],
    [`${B}?page=0`, 400, missing('bbox')],
    [`${B}?bbox=181,0,1,1&page=0`, 400, coordinates({ bbox: `west: ${LNG}` })],
    [`${B}?bbox=1,0,1,90.5`, 400, coordinates({ bbox: `north: ${LAT}` })],
    [`${B}?bbox=1,0,1e400,1`, 400, coordinates({ bbox: `east: ${LNG}` })],
    [`${A}?path=50,1|1e400,2`, 400, coordinates({ path: `point 2: ${LAT}` })],
    [`${B}?bbox=0,10,1,5`, 400, coordinates({ bbox: 'south must not be greater than north' })],
    [`${B}?bbox=0,0,0,0&per_page=x`, 400, ambiguous],
    [`${B}?bbox=1,2,3`, 400, malformed({ bbox: BBOX })],
    [`${B}?bbox=`, 400, malformed({ bbox: BBOX })],
    [`${B}?bbox=1,2,3,x&page=0`, 400, malformed({ bbox: BBOX, page: 'page must be an integer from 1' })],
    [`${B}?bbox=1,2,3,4&bbox=1,2,3,4`, 400, malformed({ bbox: 'bbox was given more than once' })],
    [`${B}?bbox=1,2,3,4&per_page=0`, 400, malformed({ per_page: 'per_page must be an integer from 1' })],
    [`${B}?bbox=1,2,3,4&category_id=5`, 403, notPermitted]
  ]
  for (const [path, status, expected] of cases) {
    const res = await get('growth', path)
    t.equal(res.statusCode, status, path.slice(0, 80))
    t.same(res.json(), expected, path.slice(0, 80))
  }
  const demoTier = {
    code: 'svc_partner_api_feature_disabled',
    message: 'This endpoint is not open to the demo tier. Ask the operator for the growth or scale tier.',
    data: { status: 403, reason: 'tier' }
  }
  for (const path of [`${A}?path=50,1|50,2`, `${B}?bbox=1,2,3,4`, A, `${B}?bbox=x`]) {
    const res = await get('demo', path)
    t.equal(res.statusCode, 403, `demo tier: ${path}`)
    t.same(res.json(), demoTier, `demo tier: ${path}`)
  }
  const anonymous = await app.inject(`/v1${A}?path=50,1|50,2`)
  t.same([anonymous.statusCode, anonymous.json().code], [401, 'svc_partner_api_missing_key'])
})

const usage = async (slug: string) => json(slug, '/usage?expand=telemetry')

t.test('rows: the answer\'s sites', async (t) => {
  const before = (await usage('rows')).windows.minute.rows
  t.equal((await json('rows', F)).length, 100)
  let report = await usage('rows')
  t.match(report.telemetry.recent_events[0], { endpoint: 'along-route', status: 200, rows: 100 })
  t.equal(report.windows.minute.rows, before + 100)
  t.equal((await json('rows', '/sites/by-bbox?bbox=60,10,61,11&per_page=4&page=2')).sites.length, 2)
  report = await usage('rows')
  t.match(report.telemetry.recent_events[0], { endpoint: 'by-bbox', status: 200, rows: 2 })
  t.equal(report.windows.minute.rows, before + 102, 'a page counts its sites, not the total')
  await json('rows', '/sites/along-route?path=0,10|0,11&radius=5&format=geojson')
  report = await usage('rows')
  t.match(report.telemetry.recent_events[0], { endpoint: 'along-route', status: 200, rows: 6 })
  await get('rows', '/sites/along-route?path=91,0|50,1')
  report = await usage('rows')
  t.match(report.telemetry.recent_events[0], { endpoint: 'along-route', status: 400, rows: 0 })
  t.equal(report.windows.minute.rows, before + 108)
})

t.test('rate limits: counted, with their fields, 429 past the limit', async (t) => {
  const first = await get('limited', '/sites/along-route?path=50,1|50,2')
  t.equal(first.headers['x-ratelimit-used'], '1')
  t.equal(first.headers['ratelimit-policy'], '"minute";q=3;w=60')
  const bad = await get('limited', '/sites/by-bbox?bbox=1,2,3')
  t.same([bad.statusCode, bad.headers['x-ratelimit-used']], [400, '2'], 'a malformed request counts')
  await get('limited', '/sites/by-bbox?bbox=1,2,3,4')
  const limited = await get('limited', '/sites/by-bbox?bbox=1,2,3,4')
  t.equal(limited.statusCode, 429)
  t.match(limited.json(), { code: 'svc_partner_api_rate_limited', data: { status: 429, window: 'minute' } })
  t.ok(Number(limited.headers['retry-after']) >= 1)
})

t.test('caching: hits, ETags, 304, one entry for one route however written', async (t) => {
  const cacheOf = async () => (await usage('cache')).telemetry.recent_events[0].cache
  const route = '/sites/along-route?path=0,10|0,11&radius=4.5' // asked by no other test (a partner of the same
  const first = await get('cache', route) // permissions shares the entry)
  t.equal(await cacheOf(), 'miss')
  t.equal(first.headers['cache-control'], 'private, max-age=60')
  t.match(first.headers.etag, /^"[A-Za-z0-9_-]{27}"$/)
  const again = await get('cache', route)
  t.equal(await cacheOf(), 'hit')
  t.same([again.body, again.headers.etag], [first.body, first.headers.etag])
  const notModified = await get('cache', route, { 'if-none-match': first.headers.etag as string })
  t.same([notModified.statusCode, notModified.body], [304, ''])
  for (const alias of [
    '/sites/along-route?path=0,10%7C0,11&radius=4.5', '/sites/along-route?radius=4.500&path=0.0,10.0|-0,11.00',
    '/sites/along-route?path=0,1e1|0,%2B11&radius=45e-1&demo=false&unknown=1'
  ]) {
    const res = await get('cache', alias)
    t.equal(await cacheOf(), 'hit', alias)
    t.same([res.body, res.headers.etag], [first.body, first.headers.etag], alias)
  }
  const other = await get('cache', '/sites/along-route?path=0,10|0,11.0001&radius=4.5')
  t.equal(await cacheOf(), 'miss', 'another route, another entry')
  t.not(other.headers.etag, first.headers.etag)
  const defaults = await get('cache', '/sites/along-route?path=20,20|21,20')
  t.equal(await cacheOf(), 'miss')
  t.equal((await get('cache', '/sites/along-route?path=20,20|21,20&radius=10')).headers.etag, defaults.headers.etag)
  t.equal(await cacheOf(), 'hit', 'the default radius written out')
  const box = await get('cache', '/sites/by-bbox?bbox=60,10,61,11')
  t.equal(await cacheOf(), 'miss')
  const sameBox = await get('cache', '/sites/by-bbox?bbox=60.0,10,61.00,11&page=1&per_page=200')
  t.equal(await cacheOf(), 'hit')
  t.same([sameBox.body, sameBox.headers.etag], [box.body, box.headers.etag])
  const boxNotModified = await get('cache', '/sites/by-bbox?bbox=60,10,61,11', {
    'if-none-match': box.headers.etag as string
  })
  t.equal(boxNotModified.statusCode, 304)
})
