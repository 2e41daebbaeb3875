// format=geojson: the same records as the JSON answer of the same query, as RFC 7946 features
// ([longitude, latitude]), in the same order, byte for byte what JSON.stringify makes of them;
// cached, counted and limited like any answer, with an ETag of its own.
import t from 'tap'
import { Value } from '@sinclair/typebox/value'
import { SiteFeatureCollection, TagFeatureCollection } from '../../src/schemas/records.ts'
import { seededRandom } from '../../src/sites/generator.ts'
import { UNLIMITED, buildTestApp, randomSites } from '../helper.ts'

const sandbox = randomSites('geojson', 600)
  .map((s, i) => ({ ...s, name: i % 7 === 0 ? `Héliport "${i}" \\ ünïcode` : s.name }))
const { app, tokens } = await buildTestApp(t, {
  sandbox,
  partners: [
    {
      name: 'Wide', slug: 'wide', tier: 'scale', categories: [2, 3, 4, 5, 6, 7, 8, 9], otherCategories: true,
      limitOverrides: UNLIMITED
    },
    { name: 'Small', slug: 'small', tier: 'growth', limitOverrides: { minute: 3, hour: 'unlimited', day: 'unlimited' } }
  ]
})
const get = (path: string, slug = 'wide', headers: Record<string, string> = {}) =>
  app.inject({ url: path, headers: { authorization: `Bearer ${tokens[slug]}`, ...headers } })

interface Feature {
  type: string
  id: string
  geometry: { type: string, coordinates: number[] }
  properties: Record<string, unknown>
}
const asFeatures = (records: Record<string, unknown>[]) => records.map((r) => ({
  type: 'Feature', id: r.id, geometry: { type: 'Point', coordinates: [r.longitude, r.latitude] }, properties: r
}))

t.test('/sites: the JSON answer\'s records as features, byte for byte', async (t) => {
  const random = seededRandom('geo-queries')
  let nonEmpty = 0
  for (let i = 0; i < 150; i++) {
    // around a site (the radius is capped at 75 km, and the sites are spread over the globe)
    const near = sandbox[Math.floor(random() * sandbox.length)]
    const lat = Math.max(-90, Math.min(90, near.latitude + (random() - 0.5) * 0.5)).toFixed(3)
    const lng = (((near.longitude + (random() - 0.5) * 0.5 + 540) % 360) - 180).toFixed(3)
    const q = `lat=${lat}&lng=${lng}&radius=${[5, 25, 75][i % 3]}${i % 4 === 0 ? '&category_id=4' : ''}`
    const json = await get(`/v1/sites?${q}`)
    const geo = await get(`/v1/sites?${q}&format=geojson`)
    t.equal(geo.statusCode, 200)
    if (geo.headers['content-type'] !== 'application/geo+json; charset=utf-8') {
      t.fail(`content-type ${geo.headers['content-type']}`)
      return
    }
    const records = json.json()
    const expected = JSON.stringify({ type: 'FeatureCollection', features: asFeatures(records) })
    if (geo.body !== expected) { t.fail(`${q}: ${geo.body.slice(0, 300)} vs ${expected.slice(0, 300)}`); return }
    if (!Value.Check(SiteFeatureCollection, geo.json())) { t.fail('schema'); return }
    if (geo.headers.etag === json.headers.etag) { t.fail('the two forms share an ETag'); return }
    if (records.length > 0) nonEmpty++
  }
  t.ok(nonEmpty > 75, `${nonEmpty} of 150 queries found sites`)
})

t.test('/sites/by-tag: the same page, paging fields as foreign members', async (t) => {
  for (const tag of ['~fuel', '~grass', '~night-landing']) {
    for (const [page, perPage] of [[1, 50], [2, 50], [1, 500], [99, 10]]) {
      const q = `tag=${tag}&page=${page}&per_page=${perPage}`
      const json = (await get(`/v1/sites/by-tag?${q}`)).json()
      const geo = await get(`/v1/sites/by-tag?${q}&format=geojson`)
      const { sites, ...paging } = json
      t.equal(geo.body, JSON.stringify({ type: 'FeatureCollection', ...paging, features: asFeatures(sites) }), q)
      t.ok(Value.Check(TagFeatureCollection, geo.json()))
    }
  }
})

t.test('coordinates are [longitude, latitude]', async (t) => {
  const near = `lat=${sandbox[5].latitude}&lng=${sandbox[5].longitude}`
  const geo = (await get(`/v1/sites?${near}&radius=75&format=geojson`)).json()
  for (const f of geo.features as Feature[]) {
    t.same(f.geometry.coordinates, [f.properties.longitude, f.properties.latitude])
  }
  t.ok(geo.features.length > 0)
})

t.test('cached, 304, counted, limited, validated like any answer', async (t) => {
  const url = '/v1/sites?lat=51.5&lng=-0.1&radius=75&format=geojson'
  const first = await get(url, 'small')
  const again = await get(url, 'small')
  t.equal(again.body, first.body)
  t.equal(again.headers['content-type'], 'application/geo+json; charset=utf-8', 'a cached answer keeps its type')
  t.equal(again.headers['cache-control'], 'private, max-age=60')
  const notModified = await get(url, 'small', { 'if-none-match': first.headers.etag as string })
  t.equal(notModified.statusCode, 304)
  const limited = await get(url, 'small')
  t.equal(limited.statusCode, 429, 'the fourth request of three a minute')
  t.equal(limited.headers['content-type'], 'application/json; charset=utf-8', 'errors stay JSON')
  const usage = (await get('/v1/usage', 'small')).json()
  t.equal(usage.windows.minute.used, 3)
  t.equal(usage.windows.minute.rows, 2 * first.json().features.length, 'rows: the features of the two 200 answers')
  const bad = await get('/v1/sites?lat=51.5&lng=-0.1&format=kml')
  t.equal(bad.statusCode, 400)
  t.same(bad.json(), {
    code: 'rest_invalid_param', message: 'Invalid parameter(s): format.',
    data: { status: 400, params: { format: 'format must be json or geojson' } }
  })
  t.equal((await get('/v1/sites/nearest?lat=51.5&lng=-0.1&format=geojson')).statusCode, 200,
    '/sites/nearest ignores format (not one of its parameters)')
})
