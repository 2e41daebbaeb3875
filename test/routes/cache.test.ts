// The response cache: isolation between partners, reloads, ETag and 304, what is cached.
import { copyFileSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t from 'tap'
import { writeDataset } from '../../src/sites/dataset-file.ts'
import { UNLIMITED, buildTestApp, site } from '../helper.ts'

const sandbox = [site('c-4', 4, 51.5, -0.12), site('c-7', 7, 51.5, -0.121), site('c-5', 5, 51.5, -0.122)]
const production = [site('p-4', 4, 51.5, -0.12), site('p-5', 5, 51.5, -0.121)]
const { app, tokens, dataDir } = await buildTestApp(t, {
  sandbox,
  production,
  partners: [
    {
      name: 'Live hotels', slug: 'live', tier: 'growth', environment: 'production', categories: [4],
      limitOverrides: UNLIMITED
    },
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
/** The token in a header: the URL is the alias as it is. */
const bearer = (slug: string, url: string, headers: Record<string, string> = {}) =>
  app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${tokens[slug]}`, ...headers } })

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
  const used = async () => JSON.parse((await app.inject({
    method: 'GET', url: `/v1/usage?api_key=${tokens.hotels}`
  })).body).windows.minute.used
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

t.test('/usage records the status sent: a miss turned into a 304 is a 304 of no rows', async (t) => {
  const usage = async () =>
    JSON.parse((await app.inject({ method: 'GET', url: `/v1/usage?expand=telemetry&api_key=${tokens.hotels}` })).body)
  const before = await usage()
  const notModified = await get('hotels', `${Q}&radius=11`, { 'if-none-match': '*' })
  t.equal(notModified.statusCode, 304, 'a miss: made, then not sent')
  const after = await usage()
  t.match(after.telemetry.recent_events[0], { endpoint: 'sites', status: 304, rows: 0, cache: 'miss' })
  t.equal(after.windows.minute.rows, before.windows.minute.rows, 'no rows counted')
  t.equal(after.windows.minute.used, before.windows.minute.used + 1, 'the request counted')
  const sent = await get('hotels', `${Q}&radius=12`)
  t.equal(sent.statusCode, 200)
  const last = await usage()
  t.match(last.telemetry.recent_events[0], { endpoint: 'sites', status: 200, rows: 1, cache: 'miss' })
  t.equal(last.windows.minute.rows, before.windows.minute.rows + 1)
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

t.test('tags are the same in another app instance on the same data ' +
  '(as after a restart, or on another instance)', async (t) => {
  const { buildApp } = await import('../../src/app.ts')
  const { testConfig } = await import('../helper.ts')
  const other = await buildApp(testConfig(dataDir))
  t.teardown(() => other.close())
  const here = await get('far', `${Q}&radius=9`)
  const there = await other.inject({ method: 'GET', url: `${Q}&radius=9&api_key=${tokens.far}` })
  t.equal(there.headers.etag, here.headers.etag)
  t.equal(there.body, here.body)
})

t.test('a repeated request is answered from the cache with the same bytes and headers', async (t) => {
  const url = `${Q}&radius=3`
  const first = await bearer('hotels', url)
  const hits = app.responseCache.lookups.hit
  const again = await bearer('hotels', url)
  t.equal(app.responseCache.lookups.hit, hits + 1, 'a hit')
  t.equal(again.body, first.body)
  const second = await bearer('hotels', url)
  t.equal(second.statusCode, 200)
  t.equal(second.body, first.body)
  for (const h of ['etag', 'cache-control', 'content-type', 'content-length']) {
    t.equal(second.headers[h], first.headers[h], h)
  }
  t.not(second.headers['x-request-id'], first.headers['x-request-id'])
  const notModified = await bearer('hotels', url, { 'if-none-match': first.headers.etag as string })
  t.equal(notModified.statusCode, 304)
  t.equal(notModified.body, '')
  const head = await app.inject({ method: 'HEAD', url, headers: { authorization: `Bearer ${tokens.hotels}` } })
  t.equal(head.statusCode, 200)
  t.equal(head.body, '', 'HEAD of a cached answer: no body')
  for (const h of ['etag', 'cache-control', 'content-type', 'content-length']) {
    t.equal(head.headers[h], first.headers[h], `HEAD ${h}`)
  }
  const other = await bearer('hotels', `${Q}&radius=3.0`)
  t.equal(other.headers.etag, first.headers.etag, 'the same question asked another way: the same entry')
})

t.test('HEAD on a miss: the status and headers of its GET, stored like it; ' +
  'a 304 on a miss as one from the cache', async (t) => {
  const head = (url: string, headers: Record<string, string> = {}) =>
    app.inject({ method: 'HEAD', url, headers: { authorization: `Bearer ${tokens.hotels}`, ...headers } })
  for (const url of [`${Q}&radius=6`, '/v1/sites/nearest?lat=51.5&lng=-0.12&radius=6', '/v1/categories', '/v1/tags']) {
    for (const encoding of [undefined, 'gzip']) {
      app.responseCache.clear()
      const headers: Record<string, string> = encoding ? { 'accept-encoding': encoding } : {}
      const first = await head(url, headers)
      t.equal(first.statusCode, 200, `HEAD ${url} ${encoding ?? ''}: ${first.body}`)
      t.equal(first.body, '')
      const after = await bearer('hotels', url, headers)
      t.equal(after.statusCode, 200)
      for (const h of ['etag', 'cache-control', 'vary', 'content-type', 'content-length', 'content-encoding']) {
        t.equal(first.headers[h], after.headers[h], `${url} ${encoding ?? ''}: ${h}`)
      }
      t.equal(Number(first.headers['content-length']), after.rawPayload.length, 'the length of the GET\'s body')
      t.equal(app.responseCache.size, 1, 'the HEAD stored the answer: the GET was a hit')
    }
  }
  // a 304 on a miss (the entry expired or another instance answered before) has what one from the cache has
  const url = `${Q}&radius=7`
  const { etag } = (await bearer('hotels', url)).headers
  for (let round = 0; round < 2; round++) {
    app.responseCache.clear()
    const fromCache = round === 1
    if (fromCache) await bearer('hotels', url)
    const notModified = await bearer('hotels', url, { 'if-none-match': etag as string })
    t.equal(notModified.statusCode, 304)
    t.equal(notModified.body, '')
    t.equal(notModified.headers['content-length'], undefined, `no Content-Length (${fromCache ? 'hit' : 'miss'})`)
    t.equal(notModified.headers['content-type'], undefined, `no Content-Type (${fromCache ? 'hit' : 'miss'})`)
    t.equal(notModified.headers.etag, etag)
    t.equal(notModified.headers['cache-control'], 'private, max-age=60')
    const headNotModified = await head(url, { 'if-none-match': etag as string })
    t.same([headNotModified.statusCode, headNotModified.body, headNotModified.headers.etag,
      headNotModified.headers['content-type']], [304, '', etag, undefined], 'and a HEAD')
    const length = (await bearer('hotels', url)).rawPayload.length
    t.equal(headNotModified.headers['content-length'], String(length),
      `a HEAD's Content-Length is its 200's, ${length}, not 0 (${fromCache ? 'hit' : 'miss'})`)
    app.responseCache.clear()
    const gzipped = await bearer('hotels', url, { 'accept-encoding': 'gzip' })
    const headGzip = await head(url, { 'accept-encoding': 'gzip', 'if-none-match': gzipped.headers.etag as string })
    t.same([headGzip.statusCode, headGzip.headers['content-length']], [304, String(gzipped.rawPayload.length)],
      'the length of the encoding the HEAD would get')
  }
})

t.test('the same URL for partners of other permissions or datasets', async (t) => {
  const url = `${Q}&radius=4`
  t.equal(app.partners.byToken(tokens.live)!.fingerprint, app.partners.byToken(tokens.hotels)!.fingerprint,
    'live and hotels differ only by dataset')
  for (let round = 0; round < 3; round++) {
    t.same(ids((await bearer('hotels', url)).body), ['c-4'])
    t.same(ids((await bearer('pubs', url)).body), ['c-5'])
    t.same(ids((await bearer('live', url)).body), ['p-4'])
    t.same(ids((await bearer('far', url)).body), ['c-4', 'c-7'])
    t.same(ids((await bearer('live', `${url}&demo=1`)).body), ['c-4'], 'demo= is in the URL')
    t.same(ids((await bearer('live', url)).body), ['p-4'])
  }
})

t.test('a reload makes new data visible at once', async (t) => {
  t.same(ids((await get('hotels')).body), ['c-4'])
  t.same(ids((await bearer('hotels', Q)).body), ['c-4'])
  writeDataset(join(dataDir, 'sandbox.db'), [site('new-4', 4, 51.5, -0.12)], { source: 'test', precision: 3 })
  t.equal((await app.reloadDatasets('test')).ok, true)
  t.same(ids((await get('hotels')).body), ['new-4'])
  t.same(ids((await bearer('hotels', Q)).body), ['new-4'])
})

t.test('a sandbox and a production file with the same meta never share an answer or an ETag', async (t) => {
  // production.db a copy of sandbox.db (meta and all), then its sites renamed: what a file copied
  // and edited by hand looks like
  copyFileSync(join(dataDir, 'sandbox.db'), join(dataDir, 'production.db'))
  const db = new Database(join(dataDir, 'production.db'))
  db.exec("UPDATE sites SET id = 'p' || substr(id, 2)")
  db.close()
  t.equal((await app.reloadDatasets('test')).ok, true)
  t.equal(app.datasets.get('production')!.meta.built_at, app.datasets.get('sandbox')!.meta.built_at, 'the same meta')
  const url = `${Q}&radius=8`
  for (const order of [['hotels', 'live'], ['live', 'hotels']]) {
    app.responseCache.clear()
    const answers = Object.fromEntries(
      await Promise.all(order.map(async (slug) => [slug, await bearer(slug, url)] as const))
    )
    // the second asker of the URL, after the first stored it
    for (const slug of order) answers[slug] = await bearer(slug, url)
    t.same(ids(answers.hotels.body), ['new-4'], `${order.join(' then ')}: sandbox`)
    t.same(ids(answers.live.body), ['pew-4'], `${order.join(' then ')}: production`)
    t.not(answers.hotels.headers.etag, answers.live.headers.etag)
  }
})

t.test('a dataset file edited in place, its meta unchanged, gets new ETags at its reload', async (t) => {
  const url = `${Q}&radius=9`
  const before = await bearer('hotels', url)
  t.equal(before.statusCode, 200)
  t.equal((await app.reloadDatasets('test')).ok, true)
  t.equal((await bearer('hotels', url, { 'if-none-match': before.headers.etag as string })).statusCode, 304,
    'a reload of the same file keeps them')
  const builtAt = app.datasets.get('sandbox')!.meta.built_at
  const db = new Database(join(dataDir, 'sandbox.db'))
  db.exec("UPDATE sites SET name = 'Renamed by hand' WHERE id = 'new-4'")
  db.close()
  t.equal((await app.reloadDatasets('test')).ok, true)
  t.equal(app.datasets.get('sandbox')!.meta.built_at, builtAt, 'the same meta')
  const after = await bearer('hotels', url, { 'if-none-match': before.headers.etag as string })
  t.equal(after.statusCode, 200, 'the old ETag no longer matches')
  t.equal((JSON.parse(after.body) as { name: string }[])[0].name, 'Renamed by hand')
  t.not(after.headers.etag, before.headers.etag)
})
