// Pooled answer buffers (src/answers/pool.ts) are used again only when nothing can still send
// them. Over a real socket: a client that pipelines many large answers and does not read leaves
// them queued in the server (a write in progress, responses waiting their turn), while other
// clients make the server take and give back buffers as fast as it can, through a cache of eight
// entries: two clients ask for two hot answers (cache hits), two others for 66 answers in turn
// (every store evicts). Every byte each client finally reads must be the answer's own.
import { connect } from 'node:net'
import t from 'tap'
import { UNLIMITED, buildTestApp, site } from '../helper.ts'

// 3,000 sites in a 30 km square, all tagged ~fuel; the names make answers long (pooled sizes).
const sites = Array.from({ length: 3000 }, (_, i) => site(
  `p-${String(i).padStart(5, '0')}`, 4 + (i % 2) * 3, 50 + (i % 55) * 0.005, 8 + Math.floor(i / 55) * 0.005,
  ['~fuel'], { name: `Pooled answer site number ${i} ${'·'.repeat(i % 40)}` }
))
const { app, tokens } = await buildTestApp(t, {
  sandbox: sites,
  partners: [{ name: 'Pool', slug: 'pool', tier: 'scale', maxResults: 300, limitOverrides: UNLIMITED }]
}, { CACHE_MAX_ENTRIES: '8' })
const address = await app.listen({ host: '127.0.0.1', port: 0 })
const answers = app.answerPool
const { port } = new URL(address)
const key = tokens.pool

const tagPage = (page: number, perPage = 500) => `/v1/sites/by-tag?tag=~fuel&per_page=${perPage}&page=${page}`
const nearby = (i: number) =>
  `/v1/sites?lat=${(50 + (i % 17) * 0.01).toFixed(3)}&lng=${(8 + (i % 13) * 0.01).toFixed(3)}&radius=${5 + (i % 7)}`
const paths = [
  ...Array.from({ length: 6 }, (_, i) => tagPage(i + 1)),
  ...Array.from({ length: 60 }, (_, i) => nearby(i))
]
// the slow client's: 120 different first pages of 380 to 499 sites (cache misses, each its own buffer)
const slowPaths = Array.from({ length: 120 }, (_, i) => tagPage(1, 380 + i))

// The expected bytes, fetched one at a time before any concurrency.
const expected = new Map<string, string>()
for (const path of [...paths, ...slowPaths]) {
  const r = await fetch(`${address}${path}`, { headers: { authorization: `Bearer ${key}` } })
  expected.set(path, await r.text())
}

t.test('answers are big enough to be pooled', async (t) => {
  for (const path of paths) t.ok(Buffer.byteLength(expected.get(path)!) >= 2048, path)
  t.ok(Buffer.byteLength(expected.get(tagPage(1))!) > 50_000, 'a tag page is over 50 kB')
})

/** Polls `condition` until it holds (true) or 10 s have gone by (false). */
async function eventually (condition: () => boolean): Promise<boolean> {
  const pause = () => new Promise((resolve) => setTimeout(resolve, 20))
  for (const deadline = Date.now() + 10_000; Date.now() < deadline; await pause()) {
    if (condition()) return true
  }
  return condition()
}

const cacheHits = async () => {
  const text = await app.metrics.registry.metrics()
  return Number(/^lsp_cache_lookups_total\{result="hit"\} (\d+)$/m.exec(text)?.[1])
}

/** Sends `count` pipelined requests on one connection; reads nothing until `resume` resolves. */
function slowClient (requests: string[], resume: Promise<void>): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1')
    const chunks: Buffer[] = []
    socket.pause()
    socket.on('data', (d) => chunks.push(d))
    socket.on('error', reject)
    socket.on('end', () => resolve(Buffer.concat(chunks)))
    const request = (p: string, last: boolean) =>
      `GET ${p} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n${last ? 'Connection: close\r\n' : ''}\r\n`
    socket.write(requests.map((p, i) => request(p, i === requests.length - 1)).join(''))
    resume.then(() => socket.resume(), reject)
  })
}

/** The bodies of HTTP/1.1 responses read back to back (Content-Length framing). */
function bodiesOf (raw: Buffer): { status: number, body: string }[] {
  const out: { status: number, body: string }[] = []
  let at = 0
  while (at < raw.length) {
    const headEnd = raw.indexOf('\r\n\r\n', at)
    if (headEnd < 0) throw new Error(`truncated response head at byte ${at}`)
    const head = raw.toString('latin1', at, headEnd)
    const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1])
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1])
    out.push({ status, body: raw.toString('utf8', headEnd + 4, headEnd + 4 + length) })
    at = headEnd + 4 + length
  }
  return out
}

t.test('a cached answer sent from the cache stays the cache\'s: buffers taken afterwards are others', async (t) => {
  const hot = nearby(3)
  const size = Buffer.byteLength(expected.get(hot)!)
  // uncompressed: a compressed answer is made apart from the pooled body
  const headers = { authorization: `Bearer ${key}`, 'accept-encoding': 'identity' }
  for (let i = 0; i < 3; i++) { // a miss or a hit, then hits
    const r = await fetch(`${address}${hot}`, { headers })
    t.equal(await r.text(), expected.get(hot))
  }
  // once every request has given its buffer back, take that many and more of the answer's size, and scribble on them
  t.ok(await eventually(() => answers.stats().out === app.responseCache.size), 'only the cache holds buffers')
  const scribbled = Array.from({ length: 20 }, () => answers.take(size).fill(0x21))
  const hits = await cacheHits()
  const r = await fetch(`${address}${hot}`, { headers })
  t.equal(await r.text(), expected.get(hot), 'the cached bytes are intact')
  t.equal(await cacheHits(), hits + 1, 'a hit')
  for (const b of scribbled) answers.release(b)
})

t.test('a buffer still queued for a slow client is never used for another answer', async (t) => {
  const before = answers.stats()
  // 120 tag pages of over 40 kB: more than the loopback socket buffers take, so the server's
  // writes stop part way and the rest of the answers wait their turn in the server.
  let release!: () => void
  const slow = slowClient(slowPaths, new Promise<void>((resolve) => { release = resolve }))
  // the server has answered all 120; the answers it could not hand to the socket yet hold buffers
  t.ok(await eventually(() => answers.stats().taken - before.taken >= slowPaths.length),
    'the server made every slow answer')
  const pending = answers.stats().out - before.out
  t.ok(pending > 8, `answers waiting for the slow client hold buffers (${pending} out, the cache holds at most 8)`)
  // meanwhile: 4 clients, 150 requests each; clients 0 and 1 go round all answers, 2 and 3 ask
  // for two hot ones, answered from the cache while the others' answers take and give back buffers
  const hot = [nearby(0), tagPage(1)]
  let checked = 0
  const hitsBefore = await cacheHits()
  const mismatches: string[] = []
  await Promise.all(Array.from({ length: 4 }, async (_, c) => {
    for (let i = 0; i < 150; i++) {
      const path = c < 2 ? paths[(i * 7 + c * 13) % paths.length] : hot[(i + c) % 2]
      // uncompressed: the answers sent are the pooled bodies themselves
      const headers = { authorization: `Bearer ${key}`, 'accept-encoding': 'identity' }
      const r = await fetch(`${address}${path}`, { headers })
      const body = await r.text()
      if (r.status !== 200 || body !== expected.get(path)) mismatches.push(`${path}: ${r.status}`)
      checked++
    }
  }))
  t.same(mismatches, [], 'every concurrent answer is its own')
  t.equal(checked, 600)
  const hits = await cacheHits() - hitsBefore
  t.ok(hits >= 200, `answers came from the cache meanwhile (${hits} hits)`)
  const during = answers.stats()
  release()
  const responses = bodiesOf(await slow)
  t.equal(responses.length, slowPaths.length, 'the slow client got every answer')
  const wrong = responses
    .map((r, i) => (r.status === 200 && r.body === expected.get(slowPaths[i])) ? -1 : i)
    .filter((i) => i >= 0)
  t.same(wrong, [], 'every answer the slow client read is byte for byte its own')
  t.ok(during.taken - before.taken >= 250, 'the answers made meanwhile came from the pool')
  const made = during.made - before.made
  const taken = during.taken - before.taken
  t.ok(made < taken / 4, `buffers were used again (${made} made for ${taken} answers)`)
  // each cached answer keeps its buffer out of the pool for as long as it is cached
  const cached = [...app.responseCache.values()]
  t.equal(cached.length, 8)
  t.same(cached.filter((entry) => !answers.holds(entry.body)).length, 0, 'every cached answer holds its buffer')
  // everything given back but what the cache holds (eight entries), once the last onResponse ran
  t.ok(await eventually(() => answers.stats().out - before.out <= 8),
    `buffers still out after the traffic: ${answers.stats().out - before.out}`)
})
