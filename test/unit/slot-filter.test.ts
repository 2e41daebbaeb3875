// Searches whose category filter is read by tree slot, on a dataset of 300 categories (codes past a byte), and box
// pages found with a fresh scratch (its arrays grow during the walk of a box across the antimeridian), both against
// brute force.
import t from 'tap'
import { datasetPath, writeDataset, type SiteRow } from '../../src/sites/dataset-file.ts'
import { findNearby, loadDataset } from '../../src/sites/dataset.ts'
import { AreaScratch, findInBox, type BoundingBox } from '../../src/sites/areas.ts'
import { seededRandom } from '../../src/sites/generator.ts'
import { NearbySearch } from '../../src/sites/spatial.ts'
import { bruteNearby, site, tmpDataDir } from '../helper.ts'

const random = seededRandom('slot filter')
const round = (v: number) => Math.round(v * 1000) / 1000
// 6,000 sites of categories 1 to 300, half of them within 3 degrees of the antimeridian
const sites: SiteRow[] = Array.from({ length: 6000 }, (_, i) => {
  const lat = round(-60 + 120 * random())
  const near180 = i % 2 === 0
  const lng = near180 ? round(random() < 0.5 ? 177 + 3 * random() : -180 + 3 * random()) : round(-170 + 340 * random())
  return site(`s${String(i).padStart(5, '0')}`, 1 + Math.floor(random() * 300), lat, lng)
})
const dir = tmpDataDir(t)
writeDataset(datasetPath(dir, 'sandbox'), sites, { source: 'test', precision: 3 })
const ds = loadDataset(datasetPath(dir, 'sandbox'), 'sandbox')
// categories 1 to 200 hold about two thirds of the sites: the tree of all sites with the filter by slot
const most = Array.from({ length: 200 }, (_, i) => i + 1)
const categorySets = [most, [...most, 999], Array.from({ length: 300 }, (_, i) => i + 1), [7, 250], [300]]

t.test('nearest-first searches of most of 300 categories agree with brute force', async (t) => {
  t.equal(ds.byCategory.size, 300)
  const search = new NearbySearch()
  for (let i = 0; i < 400; i++) {
    const query = {
      lat: round(-60 + 120 * random()),
      lng: round(random() < 0.5 ? 179 + 2 * random() - 1 : -180 + 360 * random()),
      radiusKm: [50, 300, 1500][i % 3],
      limit: [1, 10, 100][Math.floor(i / 3) % 3],
      categories: categorySets[i % categorySets.length]
    }
    const got = findNearby(ds, query, search).hits.map((h) => ds.ids.at(h.position))
    const expected = bruteNearby(sites, query).map((e) => e.site.id)
    if (got.join() !== expected.join()) return t.same(got, expected, JSON.stringify(query))
  }
  t.pass('400 queries')
})

/** The ids in the box (edges inside, west > east across the antimeridian) of the categories, in id order. */
function bruteBox (box: BoundingBox, categories: readonly number[]): string[] {
  const inLng = (lng: number) =>
    box.west <= box.east ? lng >= box.west && lng <= box.east : lng >= box.west || lng <= box.east
  const inBox = (s: SiteRow) => s.latitude >= box.south && s.latitude <= box.north && inLng(s.longitude)
  return sites
    .filter((s) => categories.includes(s.category) && inBox(s))
    .map((s) => s.id)
    .sort()
}

t.test('box pages with a fresh scratch, across the antimeridian, agree with brute force', async (t) => {
  let pages = 0
  for (let i = 0; i < 200; i++) {
    const south = round(-60 + 100 * random())
    const box = {
      west: round(176 + 3 * random()), south, east: round(-179 + 3 * random()), north: round(south + 5 + 15 * random())
    }
    const categories = categorySets[i % categorySets.length]
    const expected = bruteBox(box, categories)
    for (const from of [0, 7, 150]) {
      // a new scratch each time: it starts with room for 64 slots and grows while the two halves are walked
      const { total, sites: found, order } = findInBox(ds, box, { categories }, from, 100, new AreaScratch())
      const got = Array.from(found, (k) => ds.ids.at(order === undefined ? k : order[k]))
      const want = expected.slice(from, from + 100)
      if (total !== expected.length || got.join() !== want.join()) {
        return t.same({ total, got }, { total: expected.length, got: want }, JSON.stringify({ box, from }))
      }
      pages++
    }
  }
  t.pass(`${pages} pages`)
})
