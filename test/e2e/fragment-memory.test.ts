// A real server with FRAGMENTS_MAX_MB at its minimum and a sandbox whose tag pages need more: the
// records' JSON stays within the limit (lsp_record_fragment_memory_bytes), chunks are forgotten
// (lsp_record_fragment_chunks_forgotten_total), and every page is right and the same again.
import t from 'tap'
import { tmpDataDir } from '../helper.ts'
import { admin, metricsUrlOf, parseMetrics, startServer } from '../run.ts'
import { FragmentMemory } from '../../src/answers/fragment-memory.ts'

const MB = 1024 * 1024
const LIMIT_MB = 64

interface PageSite { id: string, latitude: number, longitude: number, helipaddy_link: string }
interface Page { tag: string, page: number, per_page: number, total: number, total_pages: number, sites: PageSite[] }
interface GeoPage { features: { id: string, geometry: { coordinates: number[] }, properties: Page['sites'][number] }[] }

t.test('tag pages past the fragments\' memory limit are right and the same again, within the limit', async (t) => {
  const dir = tmpDataDir(t)
  // no response cache: every page is assembled from the fragments
  const env = {
    DATA_DIR: dir, SANDBOX_SITE_COUNT: '120000', NODE_ENV: 'production', FRAGMENTS_MAX_MB: String(LIMIT_MB),
    CACHE_TTL_SECONDS: '0'
  }
  const created = JSON.parse(admin(['partners', 'create', '--name', 'Pages', '--tier', 'scale', '--json'], env).stdout)
  admin(['partners', 'update', created.slug, '--categories', '2,3,4,5,6,7,8,9',
    '--limit-minute', 'unlimited', '--limit-hour', 'unlimited', '--limit-day', 'unlimited'], env)
  const server = await startServer(env)
  t.teardown(() => server.stop('SIGKILL'))
  const metricsUrl = metricsUrlOf(server)
  const scrape = async (name: string) => parseMetrics(await (await fetch(metricsUrl)).text()).get(name) ?? 0
  const get = async (path: string) => {
    const res = await fetch(`${server.url}/v1${path}`, { headers: { authorization: `Bearer ${created.token}` } })
    if (res.status !== 200) t.fail(`${path}: ${res.status}`)
    return res.text()
  }
  const tags = (JSON.parse(await get('/tags')) as { tags: { tag: string, sites: number }[] }).tags
  const pages: string[] = []
  const first = new Map<string, string>()
  let largest = 0
  let wrong = 0
  for (const { tag, sites } of tags) {
    const ids: string[] = []
    for (let page = 1; page <= Math.ceil(sites / 500); page++) {
      const path = `/sites/by-tag?tag=${encodeURIComponent(tag)}&per_page=500&page=${page}`
      const json = await get(`${path}&format=json`)
      const geo = await get(`${path}&format=geojson`)
      pages.push(`${path}&format=json`, `${path}&format=geojson`)
      first.set(`${path}&format=json`, json).set(`${path}&format=geojson`, geo)
      // right by themselves: the page's place in the tag, its records' links, and the same records in both forms
      const { sites: records, total } = JSON.parse(json) as Page
      const features = (JSON.parse(geo) as GeoPage).features
      const right = total === sites && records.length === Math.min(500, sites - (page - 1) * 500) &&
        records.every((r) => r.helipaddy_link === `https://helipaddy.com/pad/${r.id}`) &&
        features.length === records.length &&
        features.every((f, i) =>
          f.id === records[i].id && JSON.stringify(f.properties) === JSON.stringify(records[i]) &&
          f.geometry.coordinates[0] === records[i].longitude && f.geometry.coordinates[1] === records[i].latitude)
      if (!right) wrong++
      ids.push(...records.map((r) => r.id))
    }
    if (ids.some((id, i) => i > 0 && id <= ids[i - 1])) t.fail(`${tag}: ids not in ascending order, or one twice`)
    largest = Math.max(largest, await scrape('lsp_record_fragment_memory_bytes'))
  }
  t.equal(wrong, 0, 'every page right')
  const forgotten = await scrape('lsp_record_fragment_chunks_forgotten_total')
  t.ok(forgotten > 0, `chunks forgotten in the first pass: ${forgotten}`)
  // within the limit, but for the chunk an answer opens past it until the next answer
  t.ok(largest <= LIMIT_MB * MB + FragmentMemory.CHUNK_BYTES, `fragments at most ${largest / MB} MB`)
  let same = 0
  for (const path of [...pages].reverse()) if (await get(path) === first.get(path)) same++
  t.equal(same, pages.length, 'every page the same again, its fragments made again where forgotten')
  t.ok(await scrape('lsp_record_fragment_chunks_forgotten_total') > forgotten, 'more forgotten in the second pass')
  t.equal(await server.stop('SIGTERM'), 0)
})
