// The response cache: isolation between partners, reloads, ETag and 304, what is cached.
import { join } from 'node:path'
import t from 'tap'
import { writeDataset } from '../../src/sites/dataset-file.ts'
import { UNLIMITED, buildTestApp, site } from '../helper.ts'

const sandbox = [site('c-4', 4, 51.5, -0.12), site('c-7', 7, 51.5, -0.121), site('c-5', 5, 51.5, -0.122)]
const { app, tokens, dataDir } = await buildTestApp(t, {
  sandbox,
  partners: [
    { name: 'Hotels', slug: 'hotels', tier: 'growth', categories: [4], limitOverrides: UNLIMITED },
    { name: 'Pubs', slug: 'pubs', tier: 'growth', categories: [5], limitOverrides: UNLIMITED },
    { name: 'Near', slug: 'near', tier: 'growth', categories: [4, 5, 7], maxResults: 1, limitOverrides: UNLIMITED },
    { name: 'Far', slug: 'far', tier: 'growth', categories: [4, 5, 7], maxResults: 2, limitOverrides: UNLIMITED }
  ]
})
const Q = '/v1/sites?lat=51.5&lng=-0.12'
const get = (slug: string, path = Q, headers: Record<string, string> = {}) =>
  app.inject({ method: 'GET', url: `${path}&api_key=${tokens[slug]}`, headers })
const ids = (body: string) => (JSON.parse(body) as { id: string }[]).map((s) => s.id)

t.test('partners with different permissions never share an answer', async (t) => {
  for (let round = 0; round < 2; round++) {
    t.same(ids((await get('hotels')).body), ['c-4'])
    t.same(ids((await get('pubs')).body), ['c-5'])
    t.same(ids((await get('near')).body), ['c-4'])
    t.same(ids((await get('far')).body), ['c-4', 'c-7'])
  }
})

t.test('ETag, Cache-Control and 304', async (t) => {
  const first = await get('hotels', `${Q}&radius=5`)
  t.equal(first.headers['cache-control'], 'private, max-age=60')
  t.match(first.headers.etag, /^"[A-Za-z0-9_-]{27}"$/)
  const again = await get('hotels', `${Q}&radius=5`)
  t.equal(again.headers.etag, first.headers.etag)
  t.equal(again.body, first.body)
  const notModified = await get('hotels', `${Q}&radius=5`, { 'if-none-match': first.headers.etag as string })
  t.equal(notModified.statusCode, 304)
  t.equal(notModified.body, '')
  t.equal(notModified.headers.etag, first.headers.etag)
  const used = async () => JSON.parse((await app.inject({ method: 'GET', url: `/v1/usage?api_key=${tokens.hotels}` })).body).windows.minute.used
  const before = await used()
  await get('hotels', `${Q}&radius=5`, { 'if-none-match': first.headers.etag as string })
  t.equal(await used(), before + 1, 'a 304 counts')
  const weak = await get('hotels', `${Q}&radius=5`, { 'if-none-match': `"other", W/${first.headers.etag}` })
  t.equal(weak.statusCode, 304, 'weak comparison in a list')
  const other = await get('hotels', `${Q}&radius=5`, { 'if-none-match': '"other"' })
  t.equal(other.statusCode, 200)
  const fresh = await get('hotels', `${Q}&radius=6`, { 'if-none-match': first.headers.etag as string })
  t.equal(fresh.statusCode, 200, 'another question has another tag')
  t.not(fresh.headers.etag, first.headers.etag)
  const missed = await get('hotels', `${Q}&radius=7`)
  const missed304 = await get('pubs', `${Q}&radius=7`, { 'if-none-match': missed.headers.etag as string })
  t.equal(missed304.statusCode, 200, 'another partner, another tag')
})

t.test('errors are not cached and say no-store', async (t) => {
  const bad = await get('hotels', '/v1/sites?lat=91&lng=0')
  t.equal(bad.headers['cache-control'], 'no-store')
  t.notOk(bad.headers.etag)
})

t.test('normalised parameters share an entry; the answer is the same either way', async (t) => {
  const a = await get('far', '/v1/sites/nearest?lat=51.5&lng=-0.12&radius=25')
  const b = await get('far', '/v1/sites/nearest?radius=25.0&lng=-0.120&lat=51.50&demo=0')
  t.equal(a.body, b.body)
  t.equal(a.headers.etag, b.headers.etag)
})

t.test('tags are the same in another app instance on the same data (as after a restart, or on another instance)', async (t) => {
  const { buildApp } = await import('../../src/app.ts')
  const { testConfig } = await import('../helper.ts')
  const other = await buildApp(testConfig(dataDir))
  t.teardown(() => other.close())
  const here = await get('far', `${Q}&radius=9`)
  const there = await other.inject({ method: 'GET', url: `${Q}&radius=9&api_key=${tokens.far}` })
  t.equal(there.headers.etag, here.headers.etag)
  t.equal(there.body, here.body)
})

t.test('a reload makes new data visible at once', async (t) => {
  t.same(ids((await get('hotels')).body), ['c-4'])
  writeDataset(join(dataDir, 'sandbox.db'), [site('new-4', 4, 51.5, -0.12)], { source: 'test', precision: 3 })
  t.equal((await app.reloadDatasets('test')).ok, true)
  t.same(ids((await get('hotels')).body), ['new-4'])
})
