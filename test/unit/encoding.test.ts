// compress(): what a cached compressed answer keeps in memory (the bytes of each encoding are
// checked through the routes, test/routes/compression.test.ts; here also past zlib's 16 kB chunk).
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import t from 'tap'
import { COMPRESS_MIN_BYTES, compress, encodingFor, type Encoding } from '../../src/http/encoding.ts'

const records = (n: number) => Buffer.from(JSON.stringify(Array.from({ length: n }, (_, i) => ({
  id: `site-${i * 7919 % 100003}`, name: `Pad ${i}`, category: i % 9 + 2,
  latitude: 51 + i / 1000, longitude: -0.1 - i / 997
}))))
const decode = { gzip: gunzipSync, br: brotliDecompressSync }

// zlib hands back a view of its 16 kB output chunk: kept with a cache entry, the chunk would live
// as long as the entry, and the old ones would wait for a full collection.
t.test('a compressed answer keeps at most a Buffer pool slab or its own length, not zlib\'s chunk', async (t) => {
  for (const n of [100, 2000]) { // a result inside one chunk, and one joined from several
    const body = records(n)
    for (const encoding of ['gzip', 'br'] as const) {
      const compressed = compress(body, encoding)
      t.ok(decode[encoding](compressed).equals(body), `${encoding}, ${n} records: decodes to the answer`)
      t.ok(compressed.buffer.byteLength <= Math.max(Buffer.poolSize, compressed.length),
        `${encoding}, ${n} records: ${compressed.length} bytes in an ArrayBuffer of ${compressed.buffer.byteLength}`)
    }
  }
})

t.test('the encoding an Accept-Encoding header takes: a coding refused by name is never sent, ' +
  '* or not, in any case', async (t) => {
  const cases: [string, Encoding | undefined][] = [
    ['gzip', 'gzip'], ['br', 'br'], ['gzip, br', 'gzip'], ['br;q=1, gzip;q=0.5', 'br'], ['*', 'gzip'],
    ['identity', undefined],
    ['gzip;q=0', undefined], ['*;q=0', undefined],
    ['gzip;q=0, *', 'br'], ['*, gzip;q=0', 'br'], ['GZIP ; Q=0.000 , *', 'br'], ['br;q=0, *', 'gzip'],
    ['gzip;q=0, br;q=0, *', undefined], ['gzip;q=0.001, *', 'gzip'],
    // codings and parameters are case-insensitive (RFC 9110 8.4.1, 12.4.2)
    ['GZIP', 'gzip'], ['Br', 'br'], ['BR;Q=1, Gzip;q=0.5', 'br'], ['gzip;Q=0, BR', 'br']
  ]
  for (const [header, expected] of cases) t.equal(encodingFor(header, COMPRESS_MIN_BYTES), expected, header)
  t.equal(encodingFor('gzip', COMPRESS_MIN_BYTES - 1), undefined, 'a small answer as it is')
})
