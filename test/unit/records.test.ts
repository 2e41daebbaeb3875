// The pre-serialised answers are byte for byte JSON.stringify of the records, whatever the names.
import t from 'tap'
import { datasetPath, writeDataset } from '../../src/sites/dataset-file.ts'
import { findNearby, loadDataset, tagPage, tagSitesIn, type Dataset } from '../../src/sites/dataset.ts'
import { RecordJson, mapMinimalRecord, nearestRecord, siteRecord } from '../../src/answers/records.ts'
import { maxHaverSinFor } from '../../src/sites/spatial.ts'
import { seededRandom } from '../../src/sites/generator.ts'
import { buildTestApp, randomSites, site, tmpDataDir, UNLIMITED } from '../helper.ts'

// one RecordJson per link prefix (`${pilotAppUrl}/pad/`), kept, as the service keeps its one
const recordJson = new Map<string, RecordJson>()
const records = (links: string) => {
  let made = recordJson.get(links)
  if (made === undefined) recordJson.set(links, made = new RecordJson(links.replace(/\/pad\/$/, '')))
  return made
}
const siteJson = (ds: Dataset, p: number, links: string) => records(links).site(ds, p)
const nearestJson = (ds: Dataset, p: number, h: number, links: string) => records(links).nearest(ds, p, h)
const sitesJson = (ds: Dataset, sites: ArrayLike<number>, links: string) => records(links).sites(ds, sites)
const sitesGeoJson = (ds: Dataset, sites: ArrayLike<number>, links: string) => records(links).sitesGeo(ds, sites)
const minimalSitesJson = (ds: Dataset, sites: ArrayLike<number>, links: string) => records(links).minimal(ds, sites)
const minimalSitesGeoJson = (ds: Dataset, sites: ArrayLike<number>, links: string) =>
  records(links).minimalFeatures(ds, sites)

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
  for (const positions of [all, reversed, [3], []]) {
    t.equal(sitesJson(ds, positions, links).toString(), JSON.stringify(positions.map((p) => siteRecord(ds, p, links))))
    t.equal(minimalSitesJson(ds, positions, links).toString(),
      JSON.stringify(positions.map((p) => mapMinimalRecord(ds, p, links))))
  }
  for (const p of all) t.equal(siteJson(ds, p, links).toString(), JSON.stringify(siteRecord(ds, p, links)))
  t.equal(sitesJson(ds, all, 'https://other/pad/').toString(),
    JSON.stringify(all.map((p) => siteRecord(ds, p, 'https://other/pad/'))), 'another link prefix, other fragments')
  const odd = 'https://x.example/a"b\\c/pad/'
  t.equal(sitesJson(ds, all, odd).toString(), JSON.stringify(all.map((p) => siteRecord(ds, p, odd))),
    'a link prefix that needs escaping')
  t.equal(minimalSitesJson(ds, all, odd).toString(), JSON.stringify(all.map((p) => mapMinimalRecord(ds, p, odd))))
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
    sandbox: sites, partners: [{ name: 'A', slug: 'a', tier: 'scale', siteById: true, limitOverrides: UNLIMITED }]
  })
  const get = async (url: string) => (await app.inject({ method: 'GET', url: `${url}&api_key=${tokens.a}` })).body
  // names as stored: SQLite keeps text as UTF-8: a lone surrogate comes back as three U+FFFD
  const ds = app.datasets.get('sandbox')
  const storedName = (id: string) => ds.names.at(ds.ids.toArray().indexOf(id))
  t.equal(storedName('n-4'), 'Lone \ufffd\ufffd\ufffd surrogate')
  const record = (s: typeof sites[number]) => ({
    id: s.id, category: '4', name: storedName(s.id), region: 'EUR', country: 'GB', latitude: s.latitude,
    longitude: s.longitude, helipaddy_link: `https://pilot.test/pad/${s.id}`
  })
  const byId = [...sites].sort((a, b) => a.id < b.id ? -1 : 1)
  t.equal(await get('/v1/sites/n-0?demo=false'), JSON.stringify(record(sites[0])))
  t.equal(await get('/v1/sites/by-tag?tag=~odd&per_page=3&page=2'), JSON.stringify({
    tag: '~odd', page: 2, per_page: 3, total: 10, total_pages: 4,
    sites: byId.slice(3, 6).map((s) => ({
      id: s.id, category: '4', latitude: s.latitude, longitude: s.longitude,
      helipaddy_link: `https://pilot.test/pad/${s.id}`
    }))
  }))
  const body = await get('/v1/sites?lat=89.999&lng=-180&radius=75')
  t.equal(body,
    JSON.stringify((JSON.parse(body) as { id: string }[]).map((r) => record(sites.find((s) => s.id === r.id)!))))
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
  const feature = (p: number) => ({
    type: 'Feature', id: ds.ids.at(p), geometry: { type: 'Point', coordinates: [ds.lngs[p], ds.lats[p]] },
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
    const where = { tag, categories, page, perPage }
    if (minimalSitesJson(ds, found.sites, links) !==
      JSON.stringify(positions.map((p) => mapMinimalRecord(ds, p, links)))) {
      t.fail('page differs', where)
      return
    }
    if (minimalSitesGeoJson(ds, found.sites, links) !== JSON.stringify(positions.map(feature))) {
      t.fail('GeoJSON page differs', where)
      return
    }
    compared++
  }
  t.equal(compared, 800)
  t.equal(tagSitesIn(ds, tags[0], [2, 3, 4, 5, 6, 7, 8, 9, 10]), ds.tagSites.get(tags[0]),
    'every category: the tag\'s own list')
  t.equal(tagSitesIn(ds, tags[0], [4, 10]), tagSitesIn(ds, tags[0], [4, 10]), 'an allow-list\'s list made once')
  const none = tagPage(ds, '~nothing', [4], 1, 10)
  t.same([none.total, minimalSitesJson(ds, none.sites, links)], [0, '[]'], 'an unknown tag')
})

t.test('answers from nearby searches equal JSON.stringify of the records, GeoJSON too', async (t) => {
  const dir = tmpDataDir(t)
  const sites = randomSites('searches', 4000)
  writeDataset(datasetPath(dir, 'sandbox'), sites, { source: 't', precision: 3 })
  const ds = loadDataset(datasetPath(dir, 'sandbox'), 'sandbox')
  const links = 'https://pilot.example/pad/'
  const random = seededRandom('search answers')
  const feature = (p: number) => ({
    type: 'Feature',
    id: ds.ids.at(p),
    geometry: { type: 'Point', coordinates: [ds.lngs[p], ds.lats[p]] },
    properties: siteRecord(ds, p, links)
  })
  let compared = 0
  for (let i = 0; i < 300; i++) {
    const anchor = sites[Math.floor(random() * sites.length)]
    const query = {
      lat: anchor.latitude + (random() - 0.5),
      lng: anchor.longitude + (random() - 0.5),
      radiusKm: [25, 75, 400][i % 3],
      limit: [1, 17, 100][Math.floor(random() * 3)],
      categories: [[2, 3, 4, 5, 6, 7, 8, 9, 10], [2, 3, 4, 5, 6, 7, 8], [9]][i % 3]
    }
    const positions = findNearby(ds, query).hits.map((h) => h.position)
    if (sitesJson(ds, positions, links) !== JSON.stringify(positions.map((p) => siteRecord(ds, p, links)))) {
      t.fail('answer differs', { query })
      return
    }
    const geo = JSON.stringify({ type: 'FeatureCollection', features: positions.map(feature) })
    if (sitesGeoJson(ds, positions, links) !== geo) {
      t.fail('GeoJSON differs', { query })
      return
    }
    compared++
  }
  t.equal(compared, 300)
})

t.test('the records\' JSON stays within its bound: the least recently used forms are dropped, ' +
  'and made again', async (t) => {
  const dir = tmpDataDir(t)
  writeDataset(datasetPath(dir, 'sandbox'), randomSites('bound', 2000), { source: 't', precision: 3 })
  const ds = loadDataset(datasetPath(dir, 'sandbox'), 'sandbox')
  const links = 'https://pilot.example/pad/'
  const all = Array.from({ length: ds.count }, (_, i) => i)
  const fullBytes = JSON.stringify(all.map((p) => siteRecord(ds, p, links))).length - (ds.count + 1)
  const minimalBytes = JSON.stringify(all.map((p) => mapMinimalRecord(ds, p, links))).length - (ds.count + 1)
  // room for the full form, not for both
  const bounded = new RecordJson('https://pilot.example', fullBytes + minimalBytes / 2)
  const full = bounded.sites(ds, all)
  t.equal(bounded.bytes, fullBytes, 'every full record kept')
  t.equal(bounded.datasetBytes(ds), fullBytes)
  t.equal(bounded.minimal(ds, all), JSON.stringify(all.map((p) => mapMinimalRecord(ds, p, links))))
  t.equal(bounded.bytes, fullBytes + minimalBytes, 'over the bound until the next answer')
  t.equal(bounded.dropped, 0)
  t.equal(bounded.minimal(ds, [0, 1]), JSON.stringify([0, 1].map((p) => mapMinimalRecord(ds, p, links))))
  t.equal(bounded.dropped, 1, 'the full form, least recently used, dropped')
  t.equal(bounded.bytes, minimalBytes)
  t.equal(bounded.sites(ds, all), full, 'made again, the same bytes')
  bounded.keepOnly([])
  t.equal(bounded.bytes, 0, 'a dataset no longer served keeps nothing')
  t.equal(bounded.datasetBytes(ds), 0)
})
