// compress(): what a cached compressed answer keeps in memory (the bytes of each encoding are
// checked through the routes, test/routes/compression.test.ts; here also past zlib's 16 kB chunk).
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import t from 'tap'
import { compress } from '../../src/http/encoding.ts'

const records = (n: number) => Buffer.from(JSON.stringify(Array.from({ length: n }, (_, i) =>
  ({ id: `site-${i * 7919 % 100003}`, name: `Pad ${i}`, category: i % 9 + 2, latitude: 51 + i / 1000, longitude: -0.1 - i / 997 }))))
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
