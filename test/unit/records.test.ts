// The pre-serialised answers are byte for byte JSON.stringify of the records, whatever the names.
import t from 'tap'
import { datasetPath, writeDataset } from '../../src/sites/dataset-file.ts'
import { findNearby, loadDataset, positionOf, tagPage, tagSitesIn, type Dataset } from '../../src/sites/dataset.ts'
import { FragmentMemory } from '../../src/answers/fragment-memory.ts'
import { FragmentStore, RecordJson, nmFromKm, type AnswerSites, type Placed } from '../../src/answers/records.ts'
import type { MapMinimalRecord, NearestRecord, SiteRecord } from '../../src/schemas/records.ts'
import { kmFromHaverSin, maxHaverSinFor, NearbySearch } from '../../src/sites/spatial.ts'
import { seededRandom } from '../../src/sites/generator.ts'
import { buildTestApp, randomSites, site, tmpDataDir, UNLIMITED } from '../helper.ts'

const search = new NearbySearch()

// the records of the three forms as objects: what the fragments must equal, JSON.stringify'd
function siteRecord (ds: Dataset, position: number, links: string): SiteRecord {
  const id = ds.ids.at(position)
  return {
    id,
    category: String(ds.categories[position]),
    name: ds.names.at(position),
    region: ds.regions.at(position),
    country: ds.countries.at(position),
    latitude: ds.lats[position],
    longitude: ds.lngs[position],
    helipaddy_link: links + id
  }
}

function nearestRecord (ds: Dataset, position: number, h: number, links: string): NearestRecord {
  const { region, country, helipaddy_link: link, ...rest } = siteRecord(ds, position, links)
  return { ...rest, distance_nm: nmFromKm(kmFromHaverSin(h)), helipaddy_link: link }
}

function mapMinimalRecord (ds: Dataset, position: number, links: string): MapMinimalRecord {
  const { name, region, country, ...rest } = siteRecord(ds, position, links)
  return rest
}

// one RecordJson per link prefix (`${pilotAppUrl}/pad/`), kept, as the service keeps its one
const recordJson = new Map<string, RecordJson>()
const records = (links: string) => {
  let made = recordJson.get(links)
  if (made === undefined) recordJson.set(links, made = new RecordJson(links.replace(/\/pad\/$/, '')))
  return made
}
const siteJson = (ds: Dataset, p: number, links: string) => records(links).site(ds, p)
const nearestJson = (ds: Dataset, p: number, h: number, links: string) => records(links).nearest(ds, p, h)
const sitesJson = (ds: Dataset, sites: AnswerSites, links: string) => records(links).sites(ds, sites)
const sitesGeoJson = (ds: Dataset, sites: AnswerSites, links: string) => records(links).sitesGeo(ds, sites)
const minimalSitesJson = (ds: Dataset, page: Placed, links: string, head = '', tail = '') =>
  records(links).minimalPage(ds, page, head, tail)
const minimalSitesGeoJson = (ds: Dataset, page: Placed, links: string, head: string, tail: string) =>
  records(links).minimalPageGeo(ds, page, head, tail)

// names as odd as a dataset file may hold (control characters are refused at load)
const NAMES = [
  'Quote "inside"', 'Back\\slash', 'Ünïcödé ✈ Héliport', 'Line\u2028separator', 'Lone \ud800 surrogate', ' Padded ',
  'Emoji 🚁', '</script>', 'Zero\u200bwidth\ufeff', 'n'.repeat(200)
]
const sites = NAMES.map((name, i) => site(`n-${i}`, 4, 10 + i / 100, 20, ['~odd'], {
  name, latitude: i % 2 ? -0.001 : 89.999, longitude: i % 3 ? 179.999 : -180
}))

t.test('fragments equal JSON.stringify of the records', async (t) => {
  const dir = tmpDataDir(t)
  writeDataset(datasetPath(dir, 'sandbox'), sites, { source: 't', precision: 3 })
  const ds = loadDataset(datasetPath(dir, 'sandbox'), 'sandbox')
  const links = 'https://pilot.example/x/pad/'
  const all = Array.from({ length: ds.count }, (_, i) => i)
  const reversed = [...all].reverse()
  // map-minimal records come as pages of a list (a tag's)
  const listed = (positions: number[]) => ({ order: Uint32Array.from(positions), places: positions.map((_, i) => i) })
  for (const positions of [all, reversed, [3], []]) {
    t.equal(sitesJson(ds, positions, links).toString(), JSON.stringify(positions.map((p) => siteRecord(ds, p, links))))
    t.equal(minimalSitesJson(ds, listed(positions), links).toString(),
      JSON.stringify(positions.map((p) => mapMinimalRecord(ds, p, links))))
  }
  for (const p of all) t.equal(siteJson(ds, p, links).toString(), JSON.stringify(siteRecord(ds, p, links)))
  t.equal(sitesJson(ds, all, 'https://other/pad/').toString(),
    JSON.stringify(all.map((p) => siteRecord(ds, p, 'https://other/pad/'))), 'another link prefix, other fragments')
  const odd = 'https://x.example/a"b\\c/pad/'
  t.equal(sitesJson(ds, all, odd).toString(), JSON.stringify(all.map((p) => siteRecord(ds, p, odd))),
    'a link prefix that needs escaping')
  t.equal(minimalSitesJson(ds, listed(all), odd).toString(),
    JSON.stringify(all.map((p) => mapMinimalRecord(ds, p, odd))))
})

t.test('answers whose spans are read by tree slot equal JSON.stringify of the records', async (t) => {
  const dir = tmpDataDir(t)
  const sites = randomSites('slots', 4000)
  writeDataset(datasetPath(dir, 'sandbox'), sites, { source: 't', precision: 3 })
  const ds = loadDataset(datasetPath(dir, 'sandbox'), 'sandbox')
  const links = 'https://pilot.example/pad/'
  const random = seededRandom('slot answers')
  const sources = new Map<string, number>()
  let compared = 0
  for (let i = 0; i < 600; i++) {
    const anchor = sites[Math.floor(random() * sites.length)]
    const query = {
      lat: anchor.latitude + (random() - 0.5),
      lng: anchor.longitude + (random() - 0.5),
      radiusKm: [25, 75, 400][i % 3],
      limit: [1, 17, 100][Math.floor(random() * 3)],
      // the index of all sites, unfiltered and filtered; one category's index; a tag's index
      categories: [[2, 3, 4, 5, 6, 7, 8, 9, 10], [2, 3, 4, 5, 6, 7, 8], [9], [2, 3, 4, 5, 6, 7, 8, 9, 10]][i % 4],
      tag: i % 4 === 3 ? '~fuel' : undefined
    }
    const found = findNearby(ds, query, search)
    const { hits, index } = found
    if (index === undefined) { t.fail('no single sub-index', query); return }
    const name = index === ds.all
      ? 'all'
      : index === ds.byCategory.get(9) ? 'category 9' : index === ds.tagIndexes.get('~fuel') ? 'tag ~fuel' : 'other'
    sources.set(name, (sources.get(name) ?? 0) + 1)
    const positions = hits.map((h) => h.position)
    for (const h of hits) {
      if (index.slotPositions[h.slot] !== h.position) t.fail('a hit\'s slot is not its site\'s', { query, h })
    }
    const bySlots = found // one sub-index: read by slot
    // every other answer first by slot (the fragments made there), then by position, and the other way round
    const bySlot = () => sitesJson(ds, bySlots, links).toString()
    const byPosition = () => sitesJson(ds, positions, links).toString()
    const [first, second] = i % 2 === 0 ? [bySlot(), byPosition()] : [byPosition(), bySlot()]
    const expected = JSON.stringify(positions.map((p) => siteRecord(ds, p, links)))
    if (first !== expected || second !== expected) { t.fail('answer differs', { query }); return }
    if (sitesGeoJson(ds, bySlots, links).toString() !== sitesGeoJson(ds, positions, links).toString()) {
      t.fail('GeoJSON differs', { query })
      return
    }
    compared++
  }
  t.equal(compared, 600)
  t.same(Object.fromEntries(sources), { all: 300, 'category 9': 150, 'tag ~fuel': 150 },
    'each kind of sub-index answered')
})

t.test('hits from several sub-indexes (merged) or from a scan name no single one', async (t) => {
  const dir = tmpDataDir(t)
  const sites = randomSites('slots', 2000) // tags of about 600 sites: scanned, no index of their own
  writeDataset(datasetPath(dir, 'sandbox'), sites, { source: 't', precision: 3 })
  const ds = loadDataset(datasetPath(dir, 'sandbox'), 'sandbox')
  const at = { lat: sites[0].latitude, lng: sites[0].longitude, radiusKm: 500, limit: 50 }
  const merged = findNearby(ds, { ...at, categories: [4, 9] }, search)
  t.equal(merged.index, undefined)
  t.ok(merged.hits.length > 0)
  const scanned = findNearby(ds, { ...at, categories: [2, 3, 4, 5, 6, 7, 8, 9, 10], tag: '~ppr' }, search)
  t.equal(ds.tagIndexes.has('~ppr'), false, 'a tag too small for an index of its own')
  t.equal(scanned.index, undefined)
  t.ok(scanned.hits.length > 0 && scanned.hits.every((h) => h.slot === -1))
})

t.test('a nearest answer (fragment with the distance put in) equals JSON.stringify of its record', async (t) => {
  const dir = tmpDataDir(t)
  writeDataset(datasetPath(dir, 'sandbox'), sites, { source: 't', precision: 3 })
  const ds = loadDataset(datasetPath(dir, 'sandbox'), 'sandbox')
  // distances from 0 to half the globe, with round, long and exponent-free texts alike
  const hs = [
    0, 1e-15, 1e-9, 2.5e-7, maxHaverSinFor(0.001), maxHaverSinFor(1.852), maxHaverSinFor(25), maxHaverSinFor(500),
    maxHaverSinFor(9999), 0.5, 1
  ]
  for (let i = 1; i <= 40; i++) hs.push(maxHaverSinFor(i * 12.345678))
  let compared = 0
  for (const links of ['https://pilot.example/x/pad/', 'https://x.example/a"b\\c/pad/', 'https://ü.example/✈/pad/']) {
    for (let p = 0; p < ds.count; p++) {
      for (const h of hs) {
        const theirs = JSON.stringify(nearestRecord(ds, p, h, links))
        const ours = nearestJson(ds, p, h, links).toString()
        if (ours !== theirs) t.fail(`site ${p}, h ${h}, links ${links}: ${ours} != ${theirs}`)
        compared++
      }
    }
  }
  t.equal(compared, 3 * ds.count * hs.length, 'every site, distance and link prefix compared')
  t.equal(nearestJson(ds, 2, 0, 'https://p/pad/').toString(), JSON.stringify(nearestRecord(ds, 2, 0, 'https://p/pad/')))
})

t.test('answers over HTTP are byte for byte JSON.stringify of the records', async (t) => {
  const { app, tokens } = await buildTestApp(t, {
    sandbox: sites,
    partners: [{ name: 'A', slug: 'a', tier: 'scale', siteById: true, limitOverrides: UNLIMITED }]
  })
  const get = async (url: string) => (await app.inject({ method: 'GET', url: `${url}&api_key=${tokens.a}` })).body
  // names as stored: SQLite keeps text as UTF-8: a lone surrogate comes back as three U+FFFD
  const ds = app.datasets.get('sandbox')
  const storedName = (id: string) => ds.names.at(positionOf(ds, id))
  t.equal(storedName('n-4'), 'Lone \ufffd\ufffd\ufffd surrogate')
  const record = (s: typeof sites[number]) => ({
    id: s.id,
    category: '4',
    name: storedName(s.id),
    region: 'EUR',
    country: 'GB',
    latitude: s.latitude,
    longitude: s.longitude,
    helipaddy_link: `https://pilot.test/pad/${s.id}`
  })
  const byId = [...sites].sort((a, b) => a.id < b.id ? -1 : 1)
  t.equal(await get('/v1/sites/n-0?demo=false'), JSON.stringify(record(sites[0])))
  t.equal(await get('/v1/sites/by-tag?tag=~odd&per_page=3&page=2'), JSON.stringify({
    tag: '~odd', page: 2, per_page: 3, total: 10, total_pages: 4,
    sites: byId.slice(3, 6).map((s) => ({
      id: s.id,
      category: '4',
      latitude: s.latitude,
      longitude: s.longitude,
      helipaddy_link: `https://pilot.test/pad/${s.id}`
    }))
  }))
  const body = await get('/v1/sites?lat=89.999&lng=-180&radius=75')
  const answered = JSON.parse(body) as { id: string }[]
  t.equal(body, JSON.stringify(answered.map((r) => record(sites.find((s) => s.id === r.id)!))))
})

t.test('fragments across many chunks, and one larger than a chunk, come back byte for byte', async (t) => {
  // 100 kB fragments fill an 8 MB chunk after 83; site 150 alone is larger than a chunk
  const text = (p: number) => JSON.stringify({
    p, pad: (p === 150 ? 'é' : String.fromCharCode(97 + (p % 26))).repeat(p === 150 ? 5_000_000 : 100_000 + p)
  })
  const store = new FragmentStore(300, text)
  const order = Array.from({ length: 300 }, (_, i) => (i * 7) % 300) // made out of position order
  const answer = store.array(order, '{"x":', '}')
  t.equal(answer.toString(), `{"x":[${order.map(text).join(',')}]}`)
  t.equal(store.one(299).toString(), text(299))
  t.equal(store.one(150).toString(), text(150))
  t.equal(store.array([]).toString(), '[]')
})

t.test('fragments made one after another are copied as one run, but never across chunks', async (t) => {
  // fragment 0 and its comma fill the first chunk exactly, so fragment 1 starts the next chunk
  // at the address just past that comma: adjacent by number, not by memory
  const text = (p: number) => p === 0 ? `"${'a'.repeat(FragmentMemory.CHUNK_BYTES - 3)}"` : JSON.stringify({ p })
  const store = new FragmentStore(6, text)
  const expected = (order: number[]) => `[${order.map(text).join(',')}]`
  const orders = [
    [0, 1], [0, 1, 2, 3], [1, 2, 3, 4, 5], [3, 4, 5, 1, 2], [5, 4, 3], [2, 2, 3], [1, 3, 5], [4, 5, 0, 1, 2]
  ]
  for (const order of orders) {
    t.equal(store.array(order).toString(), expected(order), `sites ${order.join(', ')}`)
  }
  t.equal(store.one(0).toString(), text(0))
  t.equal(store.one(1).toString(), text(1), 'one fragment without its comma')
  const bare = new FragmentStore(3, (p) => p === 1 ? '' : String(p))
  t.equal(bare.array([0, 1, 2]).toString(), '[0,,2]', 'an empty fragment keeps its commas')
  t.equal(bare.array([1, 0]).toString(), '[,0]', 'a run that starts with an empty fragment')
  const siteText = (p: number) => JSON.stringify({ p, name: 'é'.repeat(p % 7) })
  const sites = new FragmentStore(1000, siteText)
  const page = Array.from({ length: 500 }, (_, i) => 200 + i)
  t.equal(sites.array(page, '{"sites":', '}').toString(), `{"sites":[${page.map(siteText).join(',')}]}`,
    'a page made by its first request')
  // the point of runs: the page's 500 fragments, made one after another, go into the answer in one copy
  const copies = t.capture(Uint8Array.prototype, 'set', Uint8Array.prototype.set)
  const again = sites.array(page, '{"sites":', '}').toString()
  const made = copies().length
  copies.restore()
  t.equal(again, `{"sites":[${page.map(siteText).join(',')}]}`, 'the same page again')
  t.equal(made, 1, 'copied as one run')
  const mixed = [...page.slice(100, 150), 1, 2, ...page.slice(0, 10), 999]
  t.equal(sites.array(mixed).toString(), `[${mixed.map(siteText).join(',')}]`, 'runs and single fragments mixed')
})

t.test('tag pages equal JSON.stringify of the records, whatever allow-list made their fragments first', async (t) => {
  const dir = tmpDataDir(t)
  const sites = randomSites('pages', 3000) // each tag on about 900 sites, a site on 0 to 7 tags
  writeDataset(datasetPath(dir, 'sandbox'), sites, { source: 't', precision: 3 })
  const ds = loadDataset(datasetPath(dir, 'sandbox'), 'sandbox')
  const links = 'https://pilot.example/pad/'
  const random = seededRandom('tag pages')
  const tags = [...ds.tagSites.keys()]
  const allowLists = [[2, 3, 4, 5, 6, 7, 8, 9, 10], [2, 3, 4, 5, 6, 7, 8], [9], [4, 10]]
  const head = '{"x":1,"sites":'
  const feature = (p: number) => ({
    type: 'Feature',
    id: ds.ids.at(p),
    geometry: { type: 'Point', coordinates: [ds.lngs[p], ds.lats[p]] },
    properties: mapMinimalRecord(ds, p, links)
  })
  let compared = 0
  for (let i = 0; i < 800; i++) {
    // allow-lists in turn: each page's sites were often made first in another allow-list's order
    const tag = tags[Math.floor(random() * tags.length)]
    const categories = allowLists[i % allowLists.length]
    const perPage = [1, 7, 100, 500][Math.floor(random() * 4)]
    const visible = [...ds.tagSites.get(tag)!].filter((p) => categories.includes(ds.categories[p]))
    const page = 1 + Math.floor(random() * (Math.ceil(visible.length / perPage) + 1)) // past the last page too
    const found = tagPage(ds, tag, categories, page, perPage)
    const positions = visible.slice((page - 1) * perPage, page * perPage)
    if (found.total !== visible.length) { t.fail('total differs', { tag, categories, page, perPage }); return }
    const expected = `${head}${JSON.stringify(positions.map((p) => mapMinimalRecord(ds, p, links)))}}`
    if (minimalSitesJson(ds, found, links, head, '}').toString() !== expected) {
      t.fail('page differs', { tag, categories, page, perPage })
      return
    }
    const expectedGeo = `${head}${JSON.stringify(positions.map(feature))}}`
    if (minimalSitesGeoJson(ds, found, links, head, '}').toString() !== expectedGeo) {
      t.fail('GeoJSON page differs', { tag, categories, page, perPage })
      return
    }
    compared++
  }
  t.equal(compared, 800)
  t.equal(tagSitesIn(ds, tags[0], [2, 3, 4, 5, 6, 7, 8, 9, 10]), ds.tagSites.get(tags[0]),
    'every category: the tag\'s own list')
  t.equal(tagSitesIn(ds, tags[0], [4, 10]), tagSitesIn(ds, tags[0], [4, 10]), 'an allow-list\'s list made once')
  const none = tagPage(ds, '~nothing', [4], 1, 10)
  t.same([none.total, minimalSitesJson(ds, none, links, head, '}').toString()], [0, `${head}[]}`], 'an unknown tag')
})

t.test('a laid-out order\'s sites are copied again after one another, ' +
  'while the copies\' bytes stay within those made', async (t) => {
  const text = (p: number) => JSON.stringify({ p })
  const store = new FragmentStore(10, text)
  const all = Array.from({ length: 10 }, (_, i) => i)
  const expected = (positions: number[]) => `[${positions.map(text).join(',')}]`
  t.equal(store.array(all).toString(), expected(all), 'made in position order')
  const count = (make: () => Buffer) => {
    const copies = t.capture(Uint8Array.prototype, 'set', Uint8Array.prototype.set)
    const answer = make().toString()
    const made = copies().length
    copies.restore()
    return { answer, made }
  }
  const reversed = Uint32Array.from([9, 8, 7, 6, 5, 4, 3, 2, 1, 0])
  const page = (order: Uint32Array, laidOut: boolean) =>
    store.array({ order, places: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9] }, '', '', laidOut)
  t.same(count(() => page(reversed, false)), { answer: expected([...reversed]), made: 10 },
    'not laid out: the fragments where they were made, one copy each')
  const reversedAgain = Uint32Array.from(reversed) // another order, with spans of its own
  t.same(count(() => page(reversedAgain, true)), { answer: expected([...reversed]), made: 11 },
    'laid out: each fragment copied into place, one after another, then into the answer as one run')
  t.same(count(() => page(reversedAgain, true)), { answer: expected([...reversed]), made: 1 }, 'laid out: then one run')
  const evensFirst = Uint32Array.from([0, 2, 4, 6, 8, 1, 3, 5, 7, 9])
  t.same(count(() => page(evensFirst, true)), { answer: expected([...evensFirst]), made: 10 },
    'no copies left (10 sites, 10 copies made): the fragments where they are')
  t.same(count(() => page(evensFirst, true)), { answer: expected([...evensFirst]), made: 10 })
  t.same(count(() => page(reversedAgain, true)), { answer: expected([...reversed]), made: 1 },
    'the laid-out order still one run')
  const fresh = new FragmentStore(10, text)
  const ascending = Uint32Array.from(all)
  t.same(count(() => fresh.array({ order: ascending, places: [3, 4, 5] }, '', '', true)),
    { answer: expected([3, 4, 5]), made: 1 }, 'fragments made by the order itself are not copied again')
  t.same(count(() => fresh.array({ order: ascending, places: [0, 1, 2, 3, 4, 5] }, '', '', true)),
    { answer: expected([0, 1, 2, 3, 4, 5]), made: 2 },
    'a page partly made before: its new sites made after the old ones, two runs')
})

t.test('copies laid out across chunks come back byte for byte', async (t) => {
  // 3 MB fragments: two to a chunk, so copies in reverse order start new chunks as they go
  const text = (p: number) => JSON.stringify({ p, pad: String.fromCharCode(97 + p).repeat(3_000_000) })
  const store = new FragmentStore(6, text)
  const all = [0, 1, 2, 3, 4, 5]
  t.equal(store.array(all).toString(), `[${all.map(text).join(',')}]`)
  const reversed = Uint32Array.from([5, 4, 3, 2, 1, 0])
  for (const places of [[0, 1, 2, 3, 4, 5], [2, 3], [5]]) {
    const order = [...places].map((s) => reversed[s])
    t.equal(store.array({ order: reversed, places }, '', '', true).toString(), `[${order.map(text).join(',')}]`,
      `places ${places.join(', ')}`)
  }
})
