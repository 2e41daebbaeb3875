// Content negotiation for compressed answers: gzip (preferred on a tie: cheaper to make) or br,
// for answers large enough to gain from it.
import { brotliCompressSync, constants, gzipSync } from 'node:zlib'
import { Negotiator } from '@fastify/accept-negotiator'
import { LRUCache } from 'lru-cache'

export type Encoding = 'gzip' | 'br'

/** Answers smaller than this go as they are: a few hundred bytes gain less than they cost. */
export const COMPRESS_MIN_BYTES = 1024

// the parsed answer per Accept-Encoding header as sent; bounded, since any client can send any header
const negotiator = new Negotiator<Encoding>({ supportedValues: ['gzip', 'br'], cache: new LRUCache<string, string>({ max: 256 }) })

/** The encoding to send an answer of `size` bytes in, or undefined for the bytes as they are. */
export function encodingFor (acceptEncoding: string | undefined, size: number): Encoding | undefined {
  if (acceptEncoding === undefined || size < COMPRESS_MIN_BYTES) return undefined
  return negotiator.negotiate(acceptEncoding) ?? undefined
}

/** Brotli's default quality (11) costs milliseconds per answer; 5 is about gzip's cost for smaller output. */
export function compress (body: Buffer, encoding: Encoding): Buffer {
  if (encoding === 'gzip') return gzipSync(body)
  return brotliCompressSync(body, {
    params: { [constants.BROTLI_PARAM_QUALITY]: 5, [constants.BROTLI_PARAM_SIZE_HINT]: body.length, [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT }
  })
}

/** The ETag of an encoded representation: its own tag, as RFC 9110 asks of different bytes. */
export const encodedEtag = (etag: string, encoding: Encoding) => `${etag.slice(0, -1)}-${encoding}"`
