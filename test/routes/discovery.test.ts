// /categories and /tags: exact lists (brute force over the fixture), demo=, ETags and 304,
// never counted, and categories 8+ named in the dataset file.
import Database from 'better-sqlite3'
import t from 'tap'
import { datasetPath } from '../../src/sites/dataset-file.ts'
import { buildApp } from '../../src/app.ts'
import { randomSites, site, testConfig, tmpDataDir, writeFixture } from '../helper.ts'

const sandbox = [
  ...randomSites('discovery', 3000), site('eight', 8, 1, 1, ['~only-eight']), site('nine', 9, 1, 2, ['~fuel'])
]
const production = [site('p-1', 4, 5, 5, ['~live']), site('p-2', 7, 5, 6, ['~live', '~fuel'])]
const dir = tmpDataDir(t)
const tokens = writeFixture(dir, {
  sandbox,
  production,
  partners: [
    { name: 'Demo', slug: 'demo', tier: 'demo' },
    {
      name: 'Others', slug: 'others', tier: 'scale', categories: [2, 4, 8, 9], otherCategories: true,
      limitOverrides: { minute: 2, hour: null, day: null }
    },
    { name: 'Live', slug: 'live', tier: 'growth', environment: 'production', categories: [4, 7] }
  ]
})
// the operator's names for categories 8 and above live in the dataset file's meta (2 to 7 are fixed)
const db = new Database(datasetPath(dir, 'sandbox'))
db.prepare('INSERT INTO meta (key, value) VALUES (?, ?)')
  .run('category_names', JSON.stringify({ 8: 'Heliport', 3: 'not this one' }))
db.close()
const app = await buildApp(testConfig(dir))
t.teardown(() => app.close())
const get = (slug: string, path: string, headers: Record<string, string> = {}) =>
  app.inject({ method: 'GET', url: `/v1${path}`, headers: { authorization: `Bearer ${tokens[slug]}`, ...headers } })

/** Tags and their site counts in these categories, by brute force over the rows. */
function expectedTags (sites: typeof sandbox, categories: number[]) {
  const counts = new Map<string, number>()
  for (const s of sites) {
    if (categories.includes(s.category)) for (const tag of s.tags) counts.set(tag, (counts.get(tag) ?? 0) + 1)
  }
  return [...counts].sort(([a], [b]) => (a < b ? -1 : 1)).map(([tag, n]) => ({ tag, sites: n }))
}

t.test('categories: the allow-list with names; 8 and above named by the operator', async (t) => {
  const res = await get('others', '/categories')
  t.equal(res.statusCode, 200)
  t.equal(res.headers['content-type'], 'application/json; charset=utf-8')
  t.same(res.json(), {
    categories: [
      { id: 2, name: 'B&B' }, { id: 4, name: 'Hotel' }, { id: 8, name: 'Heliport' }, { id: 9, name: 'Category 9' }
    ]
  })
  t.same((await get('demo', '/categories')).json(), {
    categories: [{ id: 4, name: 'Hotel' }, { id: 7, name: 'Aerodrome' }]
  })
})

t.test('tags: every tag of the dataset with its sites in the allow-list', async (t) => {
  const others = await get('others', '/tags')
  t.equal(others.statusCode, 200)
  t.same(others.json(), { tags: expectedTags(sandbox, [2, 4, 8, 9]) })
  t.ok(others.json().tags.some((x: { tag: string }) => x.tag === '~only-eight'))
  const demo = (await get('demo', '/tags')).json()
  t.same(demo, { tags: expectedTags(sandbox, [4, 7]) })
  t.notOk(demo.tags.some((x: { tag: string }) => x.tag === '~only-eight'),
    'a tag with no site the partner may see is left out')
  t.same((await get('live', '/tags')).json(), { tags: [{ tag: '~fuel', sites: 1 }, { tag: '~live', sites: 2 }] },
    'the production dataset')
  t.same((await get('live', '/tags?demo=true')).json(), { tags: expectedTags(sandbox, [4, 7]) },
    'demo=true: the sandbox')
})

t.test('cached with ETags, 304 on If-None-Match, never counted', async (t) => {
  const first = await get('others', '/tags')
  t.match(first.headers.etag, /^"[A-Za-z0-9_-]+"$/)
  t.equal(first.headers['cache-control'], 'private, max-age=60')
  t.equal(first.headers['x-ratelimit-limit'], undefined, 'no rate-limit headers: never reaches the limiter')
  const again = await get('others', '/tags', { 'if-none-match': first.headers.etag as string })
  t.equal(again.statusCode, 304)
  t.equal(again.body, '')
  for (let i = 0; i < 5; i++) t.equal((await get('others', '/categories')).statusCode, 200)
  const usage = (await get('others', '/usage')).json()
  t.equal(usage.windows.minute.used, 0, 'seven calls, none counted (limit 2 a minute)')
  t.equal((await get('others', '/sites?lat=1&lng=1')).statusCode, 200, 'the limit is still whole')
})

t.test('a token is needed; a malformed tag says what a tag looks like', async (t) => {
  const missing = await app.inject('/v1/tags')
  t.equal(missing.statusCode, 401)
  t.same(missing.json().code, 'svc_partner_api_missing_key')
  const bad = await get('others', '/sites/by-tag?tag=helipad')
  t.equal(bad.statusCode, 400)
  t.same(bad.json(), {
    code: 'rest_invalid_param',
    message: 'Invalid parameter(s): tag.',
    data: {
      status: 400,
      params: {
        tag: 'tag must be ~ then lowercase letters, digits and hyphens, at most 64 characters in all ' +
          '(e.g. ~helipad); GET /v1/tags lists them'
      }
    }
  })
})
