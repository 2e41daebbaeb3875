// Content negotiation for compressed answers: gzip (preferred on a tie: cheapest to make) or br.
import { brotliCompressSync, constants, gzipSync } from 'node:zlib'
import { Negotiator } from '@fastify/accept-negotiator'
import { LRUCache } from 'lru-cache'

export type Encoding = 'gzip' | 'br'

/** Answers smaller than this go as they are: a few hundred bytes gain less than they cost. */
export const COMPRESS_MIN_BYTES = 1024

// the parsed answer per Accept-Encoding header as sent; bounded, since any client can send any header
const negotiator = new Negotiator<Encoding>({
  supportedValues: ['gzip', 'br'], cache: new LRUCache<string, string>({ max: 256 })
})

/** The encoding to send an answer of `size` bytes in, or undefined for the bytes as they are. */
export function encodingFor (acceptEncoding: string | undefined, size: number): Encoding | undefined {
  if (acceptEncoding === undefined || size < COMPRESS_MIN_BYTES) return undefined
  // codings are case-insensitive, the negotiator's names are not
  acceptEncoding = acceptEncoding.toLowerCase()
  const chosen = negotiator.negotiate(acceptEncoding) ?? undefined
  // The negotiator lets `*` stand for a coding the header refuses by name (`gzip;q=0, *`), which
  // RFC 9110 12.5.3 forbids: the other coding, if the header does not refuse it too.
  if (chosen === undefined || !acceptEncoding.includes('*') || !REFUSED[chosen].test(acceptEncoding)) return chosen
  const other = chosen === 'gzip' ? 'br' : 'gzip'
  return REFUSED[other].test(acceptEncoding) ? undefined : other
}

/** Whether the header gives an encoding by name with q=0. */
const refusal = (encoding: Encoding) =>
  new RegExp(`(?:^|,)\\s*${encoding}\\s*;\\s*q\\s*=\\s*0(?:\\.0{0,3})?\\s*(?:,|$)`, 'i')
const REFUSED = { gzip: refusal('gzip'), br: refusal('br') }

/** Fast levels: a cache miss pays for its compression on the request path. */
export function compress (body: Buffer, encoding: Encoding): Buffer {
  const compressed = encoding === 'gzip'
    ? gzipSync(body, { level: constants.Z_BEST_SPEED })
    : brotliCompressSync(body, {
      params: {
        [constants.BROTLI_PARAM_QUALITY]: 4,
        [constants.BROTLI_PARAM_SIZE_HINT]: body.length,
        [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT
      }
    })
  // A result within zlib's output chunk is a view of it, which a cache entry would keep alive: copied.
  return compressed.length === compressed.buffer.byteLength ? compressed : Buffer.from(compressed)
}

/** The ETag of an encoded representation: its own tag, as RFC 9110 asks of different bytes. */
export const encodedEtag = (etag: string, encoding: Encoding) => `${etag.slice(0, -1)}-${encoding}"`
