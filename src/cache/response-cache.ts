// The response cache: answers' bytes by a key of all they depend on (dataset version, route, normalised parameters,
// the partner's permission fingerprint; never the token), kept CACHE_TTL_SECONDS in an LRU bounded in entries, bytes.
import { hash } from 'node:crypto'
import { LRUCache } from 'lru-cache'
import type { AnswerPool } from '../answers/pool.ts'
import { compress, type Encoding } from '../http/encoding.ts'
import type { Dataset } from '../sites/dataset.ts'

export interface CachedAnswer {
  /** the dataset the answer was made from */
  dataset: Dataset
  body: Buffer
  /** JSON, or GeoJSON (format=geojson) */
  type: string
  etag: string
  rows: number
  /** the body compressed, made on the first request that asks for each encoding */
  encoded?: Partial<Record<Encoding, Buffer>>
}

/** pilotAppUrl shapes every answer's links, so it salts the ETags. */
export interface ResponseCacheOptions { ttlSeconds: number, maxEntries: number, maxMb: number, pilotAppUrl: string }

/** Bump when the serialised form of any answer changes, so old ETags stop matching. */
const SERIALISATION_VERSION = '1'

/** If-None-Match holds the tag (or *); weak comparison, as RFC 9110 asks for GET. */
export function etagMatches (ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false
  if (ifNoneMatch.trim() === '*') return true
  return ifNoneMatch.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag)
}

/** The cache key: the same key always means the same bytes. */
export const cacheKeyOf = (datasetVersion: string, route: string, params: string, query: string, fingerprint: string) =>
  `${datasetVersion}\u0000${route}\u0000${params}\u0000${query}\u0000${fingerprint}`

export class ResponseCache {
  /** the Cache-Control of every cacheable 200 */
  readonly cacheControl: string
  readonly lookups = { hit: 0, miss: 0 }
  /** bodies compressed, by encoding (a cached answer is compressed once per encoding) */
  readonly compressions: Record<Encoding, number> = { gzip: 0, br: 0 }
  private readonly enabled: boolean
  private readonly lru: LRUCache<string, CachedAnswer>
  private readonly salt: string

  /**
   * `inService`: whether a dataset is still the one in service (an answer of a swapped-out one is not stored).
   * `pool`: where the answers' bodies come from; an entry holds a reference on its body.
   */
  constructor (
    options: ResponseCacheOptions,
    private readonly inService: (dataset: Dataset) => boolean,
    private readonly pool: AnswerPool
  ) {
    this.enabled = options.ttlSeconds > 0
    this.cacheControl = `private, max-age=${options.ttlSeconds}`
    this.lru = new LRUCache<string, CachedAnswer>({
      max: options.maxEntries,
      maxSize: options.maxMb * 1024 * 1024,
      sizeCalculation: (entry, key) => pool.footprint(entry.body) + (entry.encoded?.gzip?.length ?? 0) +
        (entry.encoded?.br?.length ?? 0) + 2 * key.length + 200,
      ttl: Math.max(1, options.ttlSeconds) * 1000,
      dispose: (entry) => pool.release(entry.body)
    })
    this.salt = `${SERIALISATION_VERSION}\u0000${options.pilotAppUrl}\u0000`
  }

  /** The entry of a key, counted as a hit or a miss. */
  get (key: string): CachedAnswer | undefined {
    const entry = this.enabled ? this.lru.get(key) : undefined
    this.lookups[entry === undefined ? 'miss' : 'hit']++
    return entry
  }

  /** The ETag of a key's answer: a digest of the key (which determines the body), salted with what shapes all. */
  etagOf (key: string): string { return `"${hash('sha1', this.salt + key, 'base64url')}"` }

  /** Keeps an answer (holding a reference on its body) while its dataset is in service. */
  store (key: string, entry: CachedAnswer): void {
    if (!this.enabled || !this.inService(entry.dataset)) return
    this.pool.retain(entry.body)
    this.lru.set(key, entry)
  }

  /** The entry's body with a reference for the request that sends it (the entry may go meanwhile). */
  lend (entry: CachedAnswer): Buffer {
    this.pool.retain(entry.body)
    return entry.body
  }

  /** The entry's body in `encoding`, compressed on first need and kept with the entry (stored or not). */
  encodedBody (key: string, entry: CachedAnswer, encoding: Encoding): Buffer {
    const known = entry.encoded?.[encoding]
    if (known !== undefined) return known
    const body = compress(entry.body, encoding)
    this.compressions[encoding]++
    ;(entry.encoded ??= {})[encoding] = body
    // counted in the entry's size from now on, its lifetime unchanged: the LRU sizes only a new object
    if (this.lru.peek(key) === entry) this.lru.set(key, { ...entry }, { noUpdateTTL: true, noDisposeOnSet: true })
    return body
  }

  /** Empties the cache (a dataset was swapped). */
  clear (): void { this.lru.clear() }
  get size (): number { return this.lru.size }
  keys (): IterableIterator<string> { return this.lru.keys() }
  values (): IterableIterator<CachedAnswer> { return this.lru.values() }
}
