// findNearby against brute force, over thousands of random sites and queries: near the
// antimeridian and the poles, with clusters of identical coordinates (ties by id at the limit).
import t from 'tap'
import { datasetPath, writeDataset, type SiteRow } from '../../src/sites/dataset-file.ts'
import { findNearby, loadDataset, positionOf } from '../../src/sites/dataset.ts'
import { around, distance } from 'geokdbush'
import { kmFromHaverSin, NearbySearch } from '../../src/sites/spatial.ts'
import { seededRandom } from '../../src/sites/generator.ts'
import { bruteNearby, columnValues, randomSites, site, tmpDataDir } from '../helper.ts'

const search = new NearbySearch()

const dir = tmpDataDir(t)
const sites = randomSites('spatial', 6000)
writeDataset(datasetPath(dir, 'sandbox'), sites, { source: 'test', precision: 3 })
const ds = loadDataset(datasetPath(dir, 'sandbox'), 'sandbox')

t.test('positions are id order and every site is found by id', async (t) => {
  t.equal(ds.count, sites.length)
  const sorted = sites.map((s) => s.id).sort()
  t.same(columnValues(ds.ids), sorted)
  t.equal(positionOf(ds, sorted[1234]), 1234)
  t.equal(positionOf(ds, 'no-such-id'), -1)
})

t.test('random queries agree with brute force, order and distances included', async (t) => {
  const random = seededRandom('queries')
  // every category (index of all sites), most of them (all sites, filtered), a few, one, a rare one
  const categorySets = [[2, 3, 4, 5, 6, 7, 8, 9, 10], [2, 3, 4, 5, 6, 8], [4, 7], [9], [3, 10], [5]]
  let compared = 0
  let nonEmpty = 0
  let tieAtLimit = 0
  for (let i = 0; i < 3000; i++) {
    const anchor = sites[Math.floor(random() * sites.length)]
    const kind = random()
    // around a site (dense answers, exact-coordinate ties) or anywhere (antimeridian, poles, void)
    const lat = kind < 0.6 ? Math.max(-90, Math.min(90, anchor.latitude + (random() - 0.5) * 2)) : random() * 180 - 90
    const lng = kind < 0.6 ? anchor.longitude + (random() - 0.5) * 2 : random() * 360 - 180
    const query = {
      lat,
      lng: lng > 180 ? lng - 360 : lng < -180 ? lng + 360 : lng,
      radiusKm: [1, 10, 25, 75, 300, 2500][Math.floor(random() * 6)] * (0.5 + random()),
      limit: [1, 2, 5, 17, 100][Math.floor(random() * 5)],
      categories: categorySets[Math.floor(random() * categorySets.length)],
      tag: random() < 0.3 ? ['~fuel', '~ppr', '~grass', '~none'][Math.floor(random() * 4)] : undefined
    }
    const expected = bruteNearby(sites, query)
    const hits = findNearby(ds, query, search).hits
    const got = hits.map((h) => ds.ids.at(h.position))
    if (got.join() !== expected.map((e) => e.site.id).join()) {
      t.fail('mismatch', { query, got, expected: expected.map((e) => e.site.id) })
      return
    }
    for (let k = 0; k < hits.length; k++) {
      if (Math.abs(kmFromHaverSin(hits[k].h) - expected[k].km) > 1e-9) t.fail('distance differs', { query, k })
    }
    const all = bruteNearby(sites, { ...query, limit: Infinity })
    if (all.length > query.limit && all[query.limit].km === all[query.limit - 1].km) tieAtLimit++
    compared++
    if (hits.length > 0) nonEmpty++
  }
  t.equal(compared, 3000)
  t.ok(nonEmpty > 900, `most queries find sites (${nonEmpty})`)
  t.ok(tieAtLimit > 20, `ties at the limit were exercised (${tieAtLimit})`)
})

t.test('a tie at the limit is broken by id, whatever the insertion order', async (t) => {
  const d = tmpDataDir(t)
  const cluster = ['m', 'c', 'x', 'a', 'q', 'b', 'z', 'k'].map((id) => site(`t-${id}`, 4, 10, 20))
  writeDataset(datasetPath(d, 'sandbox'), [...cluster, site('t-far', 4, 10.5, 20)], { source: 'test', precision: 3 })
  const small = loadDataset(datasetPath(d, 'sandbox'), 'sandbox')
  for (let limit = 1; limit <= 9; limit++) {
    const got = findNearby(small, { lat: 10.1, lng: 20.1, radiusKm: 200, limit, categories: [4] }, search).hits
      .map((h) => small.ids.at(h.position))
    const expected = ['t-a', 't-b', 't-c', 't-k', 't-m', 't-q', 't-x', 't-z', 't-far'].slice(0, limit)
    t.same(got, expected, `limit ${limit}`)
  }
})

t.test('a limit beyond the number of sites returns every site within the radius, in order', async (t) => {
  const query = {
    lat: sites[0].latitude, lng: sites[0].longitude, radiusKm: 2500, categories: [2, 3, 4, 5, 6, 7, 8, 9, 10]
  }
  const expected = bruteNearby(sites, { ...query, limit: Infinity }).map((e) => e.site.id)
  t.ok(expected.length > 100, `a wide answer (${expected.length} sites)`)
  for (const limit of [Infinity, Number.MAX_SAFE_INTEGER, sites.length, expected.length]) {
    const got = findNearby(ds, { ...query, limit }, search).hits.map((h) => ds.ids.at(h.position))
    t.same(got, expected, `limit ${limit}`)
  }
})

t.test('across the antimeridian and over the pole', async (t) => {
  const d = tmpDataDir(t)
  writeDataset(datasetPath(d, 'sandbox'), [
    site('east', 4, 0.5, 179.9), site('west', 4, 0.5, -179.9), site('pole-a', 4, 89.9, 0), site('pole-b', 4, 89.9, 180)
  ], { source: 'test', precision: 3 })
  const small = loadDataset(datasetPath(d, 'sandbox'), 'sandbox')
  const ids = (lat: number, lng: number, radiusKm: number) =>
    findNearby(small, { lat, lng, radiusKm, limit: 10, categories: [4] }, search).hits
      .map((h) => small.ids.at(h.position))
  t.same(ids(0.5, -179.95, 20), ['west', 'east'], 'both sides of 180° within 20 km')
  t.same(ids(89.95, 90, 30), ['pole-a', 'pole-b'], 'sites 180° of longitude apart near the pole')
})

t.test('sites at a pole are one point, and from a pole a parallel is one distance: ties by id', async (t) => {
  const d = tmpDataDir(t)
  const lngs = [170, -20, 45, 0, -135, 90, 179.999, -180, 12.345, -77]
  const letters = 'abcdefghij'
  const ring = (prefix: string, lat: number, tags: string[] = []) =>
    lngs.map((lng, i) => site(`${prefix}-${letters[i]}`, 4, lat, lng, tags))
  writeDataset(datasetPath(d, 'sandbox'),
    [...ring('n', 90, ['~pole']), ...ring('s', -90), ...ring('r', 89.5, ['~pole']), ...ring('q', -89.5)],
    { source: 'test', precision: 3 })
  const small = loadDataset(datasetPath(d, 'sandbox'), 'sandbox')
  const ids = (lat: number, lng: number, limit: number, tag?: string) =>
    findNearby(small, { lat, lng, radiusKm: 500, limit, categories: [4], tag }, search).hits
      .map((h) => small.ids.at(h.position))
  const byId = (prefix: string) => [...letters].map((l) => `${prefix}-${l}`)
  for (const limit of [1, 4, 10, 20]) {
    t.same(ids(90, 33, limit), [...byId('n'), ...byId('r')].slice(0, limit), `from the north pole, limit ${limit}`)
    t.same(ids(-90, -100, limit), [...byId('s'), ...byId('q')].slice(0, limit), `from the south pole, limit ${limit}`)
    t.same(ids(90, 0, limit, '~pole'), [...byId('n'), ...byId('r')].slice(0, limit),
      `from the north pole, a tag's scan, limit ${limit}`)
  }
  // from elsewhere the pole's sites still tie with one another
  const fromAfar = ids(88, -60, 20)
  t.same(fromAfar.filter((id) => id.startsWith('n-')), byId('n'), 'the pole\'s sites in id order from 88°N')
  const before = fromAfar.indexOf('n-a')
  t.same(ids(88, -60, before + 3).slice(before), ['n-a', 'n-b', 'n-c'],
    'a limit that cuts through them keeps the lowest ids')
  t.same(ids(-88, 10, 20).filter((id) => id.startsWith('s-')), byId('s'),
    'the south pole\'s sites in id order from 88°S')
})

t.test('around the poles, with sites at exactly ±90°, agree with brute force', async (t) => {
  const random = seededRandom('poles')
  const polar: SiteRow[] = []
  for (let i = 0; i < 3000; i++) {
    const north = random() < 0.5
    const lat = random() < 0.3 ? 90 : [89.999, 89.9, 89.5, 88][Math.floor(random() * 4)]
    const lng = Math.round((random() * 360 - 180) * 1000) / 1000
    const id = `p${Math.floor(random() * 1e9).toString(36)}-${i}`
    const category = 2 + Math.floor(random() * 3)
    polar.push(site(id, category, north ? lat : -lat, lng, random() < 0.3 ? ['~fuel'] : []))
  }
  const d = tmpDataDir(t)
  writeDataset(datasetPath(d, 'sandbox'), polar, { source: 'test', precision: 3 })
  const polarDs = loadDataset(datasetPath(d, 'sandbox'), 'sandbox')
  let compared = 0
  let withTies = 0
  for (let i = 0; i < 600; i++) {
    const north = random() < 0.5
    const lat = (north ? 1 : -1) * [90, 89.95, 89, 87][Math.floor(random() * 4)]
    const query = {
      lat,
      lng: random() * 360 - 180,
      radiusKm: [5, 100, 400][Math.floor(random() * 3)],
      limit: [1, 3, 30, 200][Math.floor(random() * 4)],
      categories: random() < 0.5 ? [2, 3, 4] : [3],
      tag: random() < 0.2 ? '~fuel' : undefined
    }
    const brute = bruteNearby(polar, query)
    const expected = brute.map((e) => e.site.id)
    const got = findNearby(polarDs, query, search).hits.map((h) => polarDs.ids.at(h.position))
    if (got.join() !== expected.join()) {
      t.fail('mismatch', { query, got, expected })
      return
    }
    compared++
    if (brute.some((e, k) => k > 0 && e.km === brute[k - 1].km)) withTies++
  }
  t.equal(compared, 600)
  t.ok(withTies > 100, `answers holding sites at one distance (${withTies})`)
})

t.test('the search agrees with geokdbush itself (its distances, its order up to ties)', async (t) => {
  const random = seededRandom('geokdbush')
  const index = ds.all!
  for (let i = 0; i < 500; i++) {
    const anchor = sites[Math.floor(random() * sites.length)]
    const lat = Math.max(-90, Math.min(90, anchor.latitude + random() - 0.5))
    const lng = Math.max(-180, Math.min(180, anchor.longitude + random() - 0.5))
    const radiusKm = 1 + random() * 500
    const limit = 1 + Math.floor(random() * 60)
    const ours = findNearby(ds, { lat, lng, radiusKm, limit, categories: [2, 3, 4, 5, 6, 7, 8, 9, 10] }, search).hits
    const theirs = around(index.kd, lng, lat, limit, radiusKm).map((item) => index.positions[item])
    const km = (p: number) => distance(lng, lat, ds.lngs[p], ds.lats[p])
    if (ours.length !== theirs.length || ours.some((hit, k) => km(hit.position) !== km(theirs[k]))) {
      t.fail('differs from geokdbush', { lat, lng, radiusKm, limit })
      return
    }
  }
  t.pass('500 queries: same count, same distance at every rank')
})
