// A real server with FRAGMENTS_MAX_MB=32 and a sandbox whose tag pages need more: the records'
// JSON stays within the limit (lsp_record_fragment_bytes), chunks are forgotten
// (lsp_record_fragment_chunks_forgotten_total), and every page comes back the same.
import t from 'tap'
import { tmpDataDir } from '../helper.ts'
import { admin, startServer } from '../run.ts'
import { FragmentMemory } from '../../src/answers/fragment-memory.ts'

const MB = 1024 * 1024

t.test('tag pages past the fragments\' memory limit come back the same, within the limit', async (t) => {
  const dir = tmpDataDir(t)
  // no response cache: every page is assembled from the fragments
  const env = { DATA_DIR: dir, SANDBOX_SITE_COUNT: '60000', NODE_ENV: 'production', FRAGMENTS_MAX_MB: '32', CACHE_TTL_SECONDS: '0' }
  const created = JSON.parse(admin(['partners', 'create', '--name', 'Pages', '--tier', 'scale', '--json'], env).stdout)
  admin(['partners', 'update', created.slug, '--categories', '2,3,4,5,6,7,8,9', '--limit-minute', 'unlimited', '--limit-hour', 'unlimited', '--limit-day', 'unlimited'], env)
  const server = await startServer(env)
  t.teardown(() => server.stop('SIGKILL'))
  const metricsUrl = /"msg":"metrics listening at (http:\/\/127\.0\.0\.1:\d+\/metrics)"/.exec(server.output())![1]
  const scrape = async () => {
    const values = new Map<string, number>()
    for (const line of (await (await fetch(metricsUrl)).text()).split('\n')) {
      if (line !== '' && !line.startsWith('#')) values.set(line.slice(0, line.lastIndexOf(' ')), Number(line.slice(line.lastIndexOf(' ') + 1)))
    }
    return values
  }
  const get = async (path: string) => {
    const res = await fetch(`${server.url}/v1${path}`, { headers: { authorization: `Bearer ${created.token}` } })
    if (res.status !== 200) t.fail(`${path}: ${res.status}`)
    return res.text()
  }
  const tags = (JSON.parse(await get('/tags')) as { tags: { tag: string, sites: number }[] }).tags
  const pages: string[] = []
  for (const { tag, sites } of tags) {
    for (let page = 1; page <= Math.ceil(sites / 500); page++) {
      for (const format of ['json', 'geojson']) pages.push(`/sites/by-tag?tag=${encodeURIComponent(tag)}&per_page=500&page=${page}&format=${format}`)
    }
  }
  const first = new Map<string, string>()
  let largest = 0
  for (const path of pages) {
    first.set(path, await get(path))
    largest = Math.max(largest, (await scrape()).get('lsp_record_fragment_bytes{dataset="sandbox"}') ?? 0)
  }
  const afterFirst = await scrape()
  const forgotten = afterFirst.get('lsp_record_fragment_chunks_forgotten_total') ?? 0
  t.ok(forgotten > 0, `chunks forgotten in the first pass: ${forgotten}`)
  // within the limit, but for the chunk an answer opens past it until the next answer
  t.ok(largest <= 32 * MB + FragmentMemory.CHUNK_BYTES, `fragments at most ${largest / MB} MB`)
  let same = 0
  for (const path of [...pages].reverse()) if (await get(path) === first.get(path)) same++
  t.equal(same, pages.length, 'every page the same again, its fragments made again where forgotten')
  t.ok((await scrape()).get('lsp_record_fragment_chunks_forgotten_total')! > forgotten, 'more forgotten in the second pass')
  t.equal(await server.stop('SIGTERM'), 0)
})
