// Compressed answers: gzip or br when asked, above 1 KiB, each encoding with its own ETag and
// Vary: Accept-Encoding; a cached answer is compressed once per encoding, not on every hit.
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import t from 'tap'
import { UNLIMITED, buildTestApp, site } from '../helper.ts'

const sandbox = Array.from({ length: 40 }, (_, i) => site(`c-${String(i).padStart(2, '0')}`, 4, 51.5 + i / 1000, -0.12))
const { app, tokens } = await buildTestApp(t, {
  sandbox, partners: [{ name: 'Hotels', slug: 'hotels', tier: 'growth', categories: [4], limitOverrides: UNLIMITED }]
})
const get = (url: string, headers: Record<string, string> = {}) =>
  app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${tokens.hotels}`, ...headers } })
const SITES = '/v1/sites?lat=51.5&lng=-0.12&radius=20'

t.test('gzip and br: the same bytes, each with its own ETag', async (t) => {
  const plain = await get(SITES)
  t.equal(plain.statusCode, 200)
  t.equal(plain.headers['content-encoding'], undefined)
  t.equal(plain.headers.vary, 'accept-encoding')
  t.ok(plain.rawPayload.length > 1024, `${plain.rawPayload.length} bytes`)
  const etag = plain.headers.etag as string
  const before = { ...app.responseCache.compressions }

  const gz = await get(SITES, { 'accept-encoding': 'gzip, deflate, br' })
  t.equal(gz.headers['content-encoding'], 'gzip', 'gzip preferred on a tie')
  t.equal(gz.headers.vary, 'accept-encoding')
  t.same(gunzipSync(gz.rawPayload), plain.rawPayload)
  t.equal(gz.headers.etag, `${etag.slice(0, -1)}-gzip"`)
  t.equal(Number(gz.headers['content-length']), gz.rawPayload.length)
  t.ok(gz.rawPayload.length < plain.rawPayload.length / 3)

  const br = await get(SITES, { 'accept-encoding': 'br' })
  t.equal(br.headers['content-encoding'], 'br')
  t.same(brotliDecompressSync(br.rawPayload), plain.rawPayload)
  t.equal(br.headers.etag, `${etag.slice(0, -1)}-br"`)
  t.same((await get(SITES, { 'accept-encoding': 'gzip;q=0.5, br' })).headers['content-encoding'], 'br',
    'the client\'s preference')

  for (let i = 0; i < 3; i++) {
    t.same(gunzipSync((await get(SITES, { 'accept-encoding': 'gzip' })).rawPayload), plain.rawPayload)
    t.same(brotliDecompressSync((await get(SITES, { 'accept-encoding': 'br' })).rawPayload), plain.rawPayload)
  }
  t.same(app.responseCache.compressions, { gzip: before.gzip + 1, br: before.br + 1 },
    'compressed once per encoding, not on every hit')
})

t.test('a miss asked with gzip is sent compressed and keeps its compressed bytes', async (t) => {
  const url = `${SITES}&category_id=4`
  const before = app.responseCache.compressions.gzip
  const first = await get(url, { 'accept-encoding': 'gzip' })
  t.equal(first.headers['content-encoding'], 'gzip')
  const again = await get(url, { 'accept-encoding': 'gzip' })
  t.same(again.rawPayload, first.rawPayload)
  t.equal(again.headers.etag, first.headers.etag)
  t.equal(app.responseCache.compressions.gzip, before + 1)
})

t.test('If-None-Match compares the tag of the encoding being sent', async (t) => {
  const gz = await get(SITES, { 'accept-encoding': 'gzip' })
  const plain = await get(SITES)
  const notModified = await get(SITES, { 'accept-encoding': 'gzip', 'if-none-match': gz.headers.etag as string })
  t.equal(notModified.statusCode, 304)
  t.equal(notModified.rawPayload.length, 0)
  t.equal(notModified.headers.vary, 'accept-encoding')
  const other = await get(SITES, { 'accept-encoding': 'gzip', 'if-none-match': plain.headers.etag as string })
  t.equal(other.statusCode, 200, 'the identity tag does not match a gzip answer')
  t.equal(other.headers['content-encoding'], 'gzip')
  t.equal((await get(SITES, { 'if-none-match': plain.headers.etag as string })).statusCode, 304)
})

t.test('small answers and refused encodings go as they are', async (t) => {
  const nearest = await get('/v1/sites/nearest?lat=51.5&lng=-0.12', { 'accept-encoding': 'gzip, br' })
  t.equal(nearest.statusCode, 200)
  t.ok(nearest.rawPayload.length < 1024)
  t.equal(nearest.headers['content-encoding'], undefined, 'under 1 KiB')
  t.equal(nearest.headers.vary, 'accept-encoding')
  t.same(JSON.parse(nearest.body).id, 'c-00')
  for (const header of ['identity', 'gzip;q=0, br;q=0', 'deflate', '']) {
    const res = await get(SITES, { 'accept-encoding': header })
    t.equal(res.headers['content-encoding'], undefined, `Accept-Encoding: ${header}`)
    t.equal(JSON.parse(res.body).length, 40)
  }
})

t.test('/usage, made for each request: compressed when asked and large enough, with Vary', async (t) => {
  for (let i = 0; i < 5; i++) await get(`${SITES}&radius=${i + 1}`)
  const url = '/v1/usage?expand=telemetry'
  const plain = await get(url)
  t.equal(plain.statusCode, 200)
  t.equal(plain.headers.vary, 'accept-encoding')
  t.equal(plain.headers['content-encoding'], undefined)
  t.ok(plain.rawPayload.length >= 1024, `${plain.rawPayload.length} bytes`)
  const shape = (body: Buffer) => Object.keys(JSON.parse(body.toString()))
  for (const [encoding, inflate] of [['gzip', gunzipSync], ['br', brotliDecompressSync]] as const) {
    const packed = await get(url, { 'accept-encoding': encoding })
    t.equal(packed.headers['content-encoding'], encoding)
    t.equal(packed.headers.vary, 'accept-encoding')
    t.equal(Number(packed.headers['content-length']), packed.rawPayload.length)
    t.same(shape(inflate(packed.rawPayload)), shape(plain.rawPayload), `${encoding}: the report`)
  }
  const small = await get('/v1/usage', { 'accept-encoding': 'gzip' })
  t.ok(small.rawPayload.length < 1024)
  t.equal(small.headers['content-encoding'], undefined, 'a small report as it is')
  const error = await get('/v1/usage?expand=nope', { 'accept-encoding': 'gzip' })
  t.equal(error.statusCode, 400)
  t.equal(error.headers['content-encoding'], undefined, 'errors as they are')
})
