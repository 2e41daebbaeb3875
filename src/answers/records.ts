// Site records of the three forms and their JSON. A site's JSON (JSON.stringify's bytes) is made once and kept, so
// that an answer copies its sites' fragments instead of serialising objects on every request.
import type { Dataset, Nearby } from '../sites/dataset.ts'
import { kmFromHaverSin } from '../sites/spatial.ts'
import type { AnswerPool } from './pool.ts'
import { FragmentMemory, type ChunkAccount, type ChunkHolder } from './fragment-memory.ts'

const EMPTY = new Uint8Array(0)
const { CHUNK_BITS, CHUNK_BYTES } = FragmentMemory
/** chunk numbers fit in the bits of a 32-bit span above a chunk offset */
const MAX_CHUNKS = 1 << (32 - CHUNK_BITS)

export const KM_PER_NM = 1.852
export const JSON_TYPE = 'application/json; charset=utf-8'
export const GEOJSON_TYPE = 'application/geo+json; charset=utf-8'

/** The answer of a search or lookup that found nothing. */
export const NULL_JSON = Buffer.from('null')

/** Nautical miles, rounded to 3 decimals (1.852 m): finer would pretend a precision the data lacks. */
export const nmFromKm = (km: number) => Math.round((km / KM_PER_NM) * 1000) / 1000

/**
 * An answer's sites as places in an order (a tree's, a tag's list, a tree's slots for a box): their spans are read
 * where they lie together. `order` holds the position at each place.
 */
export interface Placed { order: Uint32Array, places: ArrayLike<number> }

/** An answer's sites: positions in the dataset, or a search's result. */
export type AnswerSites = ArrayLike<number> | Nearby

/** A search's hits by slot when all came from one sub-index (their spans lie together), else by position. */
function keysOf (sites: AnswerSites): ArrayLike<number> | Placed {
  if (!('hits' in sites)) return sites
  const { hits, index } = sites
  const keys = new Uint32Array(hits.length)
  for (let i = 0; i < hits.length; i++) keys[i] = index === undefined ? hits[i].position : hits[i].slot
  // not laid out: a search's answers are not fixed slices of the tree order, so copies there would not make runs
  return index === undefined ? keys : { order: index.slotPositions, places: keys }
}

/**
 * One record form's JSON for every site, made on first use and kept in large chunks. A comma follows each fragment,
 * so that fragments made one after another are copied as one run: a copy costs the same whatever its length.
 */
export class FragmentStore implements ChunkHolder {
  /** the chunks by number, as plain Uint8Arrays (the cheapest source for `set`) */
  private readonly views: Uint8Array[] = []
  private readonly freeNumbers: number[] = []
  /** per chunk, 1 once read by an answer that did not write it, since wasRead: set per run, not per site */
  private readonly read = new Uint8Array(MAX_CHUNKS)
  /** per chunk number, the answer (by `answers`) that last wrote to it */
  private readonly writtenIn = new Uint32Array(MAX_CHUNKS)
  private answers = 0
  /** the chunk written to, as a Buffer (for its UTF-8 `write`), and its number */
  private filling: Buffer = Buffer.alloc(0)
  fillingNumber = -1
  private used = CHUNK_BYTES
  /** per site, side by side: where its fragment is (chunk number, offset in the low 23 bits), its length (0: none) */
  private readonly span: Uint32Array
  /** the same spans by place in an order (see Placed), filled on a site's first use there */
  private readonly placeSpans = new WeakMap<Uint32Array, Uint32Array>()
  /** the same tables, weakly, for forgetting a chunk */
  private placeTables: WeakRef<Uint32Array>[] = []
  /** tables listed when the list was last rid of collected ones */
  private placeTablesKept = 0
  /** bytes of fragments made and of their copies, per chunk too: copies never take more */
  private madeBytes = 0
  private copiedBytes = 0
  private readonly madeIn: number[] = []
  private readonly copiedIn: number[] = []
  private readonly account: ChunkAccount = { bytes: 0 }

  constructor (
    count: number,
    private readonly make: (position: number) => string,
    private readonly memory = new FragmentMemory(),
    /** where an answer's buffer comes from */
    private readonly allocate: (size: number) => Buffer = Buffer.allocUnsafe
  ) {
    this.span = new Uint32Array(2 * count)
    memory.register(this, this.account)
  }

  /** Bytes of the chunks held. */
  get chunkBytes (): number {
    return this.account.bytes
  }

  /** Byte length of a site's fragment, making it if needed. */
  private length (p: number): number {
    const known = this.span[2 * p + 1]
    if (known !== 0) return known
    const json = this.make(p)
    const bytes = Buffer.byteLength(json)
    const where = this.reserve(bytes)
    const at = where & (CHUNK_BYTES - 1)
    this.filling.write(json, at, 'utf8')
    this.filling[at + bytes] = 0x2c // , (read only as part of a run)
    this.span[2 * p] = where
    this.span[2 * p + 1] = bytes
    this.madeBytes += bytes
    this.madeIn[this.fillingNumber] += bytes
    return bytes
  }

  /** Where `bytes` and a comma go: at the end of the chunk written to, or in a new one. */
  private reserve (bytes: number): number {
    if (this.used + bytes + 1 > CHUNK_BYTES) {
      let number = this.freeNumbers.pop()
      if (number === undefined) {
        if (this.views.length === MAX_CHUNKS) {
          throw new Error(`record fragments exceed ${(MAX_CHUNKS * CHUNK_BYTES) / 2 ** 30} GiB for one record form`)
        }
        number = this.views.length
      }
      // a fragment starts within CHUNK_BYTES of its chunk's start; one larger than a chunk gets a chunk of its own
      this.filling = this.memory.take(this, this.account, number, bytes + 1)
      this.fillingNumber = number
      this.views[number] = new Uint8Array(this.filling.buffer, this.filling.byteOffset, this.filling.length)
      this.madeIn[number] = 0
      this.copiedIn[number] = 0
      this.used = 0
    }
    const where = ((this.fillingNumber << CHUNK_BITS) | this.used) >>> 0
    this.used += bytes + 1
    this.writtenIn[this.fillingNumber] = this.answers
    return where
  }

  wasRead (number: number): boolean {
    const read = this.read[number] === 1
    this.read[number] = 0
    return read
  }

  /** Every span in chunk `number` reads as not made again. Only between answers (FragmentMemory.settle). */
  forget (number: number): Buffer {
    const view = this.views[number]
    if (view === undefined || view === EMPTY) throw new Error(`chunk ${number} is not held`)
    const clear = (spans: Uint32Array) => {
      for (let i = 0; i < spans.length; i += 2) {
        if (spans[i + 1] !== 0 && spans[i] >>> CHUNK_BITS === number) {
          spans[i] = 0
          spans[i + 1] = 0
        }
      }
    }
    clear(this.span)
    for (const table of this.livePlaceTables()) clear(table)
    this.madeBytes -= this.madeIn[number]
    this.copiedBytes -= this.copiedIn[number]
    this.views[number] = EMPTY
    this.read[number] = 0
    this.freeNumbers.push(number)
    if (number === this.fillingNumber) {
      this.filling = Buffer.alloc(0)
      this.fillingNumber = -1
      this.used = CHUNK_BYTES
    }
    return Buffer.from(view.buffer, view.byteOffset, view.length)
  }

  /** At every answer's start, never within one: forgets chunks when at the memory's limit. */
  private settle (): void {
    this.answers = (this.answers + 1) >>> 0
    if (this.memory.pressing) this.memory.settle()
  }

  private use (where: number): void {
    const number = where >>> CHUNK_BITS
    if (this.writtenIn[number] !== this.answers) this.read[number] = 1
  }

  private copyBytes (where: number, bytes: number, target: Uint8Array, at: number): number {
    const start = where & (CHUNK_BYTES - 1)
    target.set(this.views[where >>> CHUNK_BITS].subarray(start, start + bytes), at)
    return bytes
  }

  /**
   * `[` the sites' fragments (by position, or by place in an order) joined by `,` `]`, `head` before, `tail` after.
   * `layOut`: a fragment is copied beside those first used with it in the order, so that a tag's page then is one run.
   */
  array (sites: ArrayLike<number> | Placed, head = '', tail = '', layOut = false): Buffer {
    this.settle()
    const order = 'places' in sites ? sites.order : undefined
    const keys = 'places' in sites ? sites.places : sites
    const span = order === undefined ? this.span : this.placeSpansOf(order)
    let total = head.length + tail.length + 2 + Math.max(0, keys.length - 1)
    for (let i = 0; i < keys.length; i++) {
      const s = keys[i]
      // a fragment not made yet (by position), or not placed yet in the order
      total += span[2 * s + 1] || (order === undefined ? this.length(s) : this.place(order[s], s, span, layOut))
    }
    const out = this.allocate(total)
    let at = out.write(head, 0, 'latin1')
    out[at++] = 0x5b // [
    // a run: fragments that follow one another in one chunk, with the commas between them (-1: none yet)
    let runWhere = 0
    let runBytes = -1
    for (let i = 0; i < keys.length; i++) {
      const where = span[2 * keys[i]]
      const bytes = span[2 * keys[i] + 1]
      // the next fragment in the run's chunk (a run at its chunk's end is not followed by the next chunk's first)
      if (runBytes >= 0 && where === runWhere + runBytes + 1 && where >>> CHUNK_BITS === runWhere >>> CHUNK_BITS) {
        runBytes += 1 + bytes
        continue
      }
      if (runBytes >= 0) {
        this.use(runWhere)
        at += this.copyBytes(runWhere, runBytes, out, at)
        out[at++] = 0x2c // ,
      }
      runWhere = where
      runBytes = bytes
    }
    if (runBytes >= 0) {
      this.use(runWhere)
      at += this.copyBytes(runWhere, runBytes, out, at)
    }
    out[at++] = 0x5d // ]
    out.write(tail, at, 'latin1')
    return out
  }

  /** Site `p`'s first use at place `s`: its own span, or in a laid-out order a copy's (while the budget lasts). */
  private place (p: number, s: number, span: Uint32Array, layOut: boolean): number {
    const made = this.span[2 * p + 1] !== 0
    const bytes = this.length(p)
    let where = this.span[2 * p]
    if (made && layOut && this.copiedBytes + bytes <= this.madeBytes) {
      const from = where
      where = this.reserve(bytes)
      const at = where & (CHUNK_BYTES - 1)
      this.copyBytes(from, bytes, this.filling, at)
      this.filling[at + bytes] = 0x2c
      this.copiedBytes += bytes
      this.copiedIn[this.fillingNumber] += bytes
    }
    span[2 * s] = where
    span[2 * s + 1] = bytes
    return bytes
  }

  private placeSpansOf (order: Uint32Array): Uint32Array {
    let table = this.placeSpans.get(order)
    if (table === undefined) {
      this.placeSpans.set(order, table = new Uint32Array(2 * order.length))
      // an allow-list's orders come and go: the list is kept short
      if (this.placeTables.length >= 2 * this.placeTablesKept + 8) this.livePlaceTables()
      this.placeTables.push(new WeakRef(table))
    }
    return table
  }

  /** The place tables not collected, the list rid of the others. */
  private livePlaceTables (): Uint32Array[] {
    const tables: Uint32Array[] = []
    this.placeTables = this.placeTables.filter((ref) => {
      const table = ref.deref()
      if (table !== undefined) tables.push(table)
      return table !== undefined
    })
    this.placeTablesKept = tables.length
    return tables
  }

  /** As `array`, by position, each fragment with ASCII `fields[i]` put before its closing braces (`close`). */
  extended (positions: ArrayLike<number>, fields: string[], close: string, head = '', tail = ''): Buffer {
    this.settle()
    let total = head.length + tail.length + 2 + Math.max(0, positions.length - 1)
    for (let i = 0; i < positions.length; i++) total += this.length(positions[i]) + fields[i].length
    const out = this.allocate(total)
    let at = out.write(head, 0, 'latin1')
    out[at++] = 0x5b // [
    for (let i = 0; i < positions.length; i++) {
      if (i > 0) out[at++] = 0x2c // ,
      const p = positions[i]
      this.use(this.span[2 * p])
      at += this.copyBytes(this.span[2 * p], this.span[2 * p + 1] - close.length, out, at)
      at += out.write(fields[i], at, 'latin1')
      for (let c = 0; c < close.length; c++) out[at++] = close.charCodeAt(c)
    }
    out[at++] = 0x5d // ]
    out.write(tail, at, 'latin1')
    return out
  }

  /** A site's fragment with ASCII `text` put in `tailBytes` before its end (nothing: the fragment alone). */
  spliced (p: number, tailBytes = 0, text = ''): Buffer {
    this.settle()
    const bytes = this.length(p)
    const out = Buffer.allocUnsafe(bytes + text.length)
    this.use(this.span[2 * p])
    this.copyBytes(this.span[2 * p], bytes, out, 0)
    const cut = bytes - tailBytes
    out.copyWithin(cut + text.length, cut, bytes) // the tail moves up to make room
    out.write(text, cut, 'latin1')
    return out
  }

  /** A site's fragment alone. */
  one (p: number): Buffer {
    return this.spliced(p)
  }
}

type Fragments = ReturnType<typeof makeFragments>

/** The records' JSON for one pilot-app URL, every dataset's, from fragments kept within `memory` (one a process). */
export class RecordJson {
  private readonly byDataset = new WeakMap<Dataset, Fragments>()
  private readonly links: string

  constructor (pilotAppUrl: string, readonly memory = new FragmentMemory(), private readonly pool?: AnswerPool) {
    this.links = `${pilotAppUrl}/pad/`
  }

  /** JSON of a full record. */
  site (ds: Dataset, position: number): Buffer {
    return this.fragmentsOf(ds).full.one(position)
  }

  /** JSON of a nearest record: the nearest form's fragment with `distance_nm` put in before the link. */
  nearest (ds: Dataset, position: number, h: number): Buffer {
    const f = this.fragmentsOf(ds)
    const distance = `,"distance_nm":${nmFromKm(kmFromHaverSin(h))}`
    return f.nearest.spliced(position, f.nearestTail + ds.ids.byteLength(position), distance)
  }

  /** JSON array of full records. */
  sites (ds: Dataset, sites: AnswerSites): Buffer {
    return this.fragmentsOf(ds).full.array(keysOf(sites))
  }

  /** GeoJSON FeatureCollection of full records. */
  sitesGeo (ds: Dataset, sites: AnswerSites): Buffer {
    return this.fragmentsOf(ds).fullFeature().array(keysOf(sites), '{"type":"FeatureCollection","features":', '}')
  }

  /** JSON array of map-minimal records (a page laid out in its order, or positions), ASCII `head` and `tail` around. */
  minimalPage (ds: Dataset, page: Placed | ArrayLike<number>, head = '', tail = ''): Buffer {
    return this.fragmentsOf(ds).minimal.array(page, head, tail, true)
  }

  /** GeoJSON features of map-minimal records (as minimalPage's), with ASCII `head` before and `tail` after. */
  minimalPageGeo (ds: Dataset, page: Placed | ArrayLike<number>, head: string, tail: string): Buffer {
    return this.fragmentsOf(ds).minimalFeature().array(page, head, tail, true)
  }

  /** JSON array of full records, each with ASCII `fields` (`,"name":value…`) added at its end. */
  sitesWith (ds: Dataset, positions: ArrayLike<number>, fields: string[]): Buffer {
    return this.fragmentsOf(ds).full.extended(positions, fields, '}')
  }

  /** GeoJSON FeatureCollection of full records, each with ASCII `fields` added at the end of its properties. */
  sitesWithGeo (ds: Dataset, positions: ArrayLike<number>, fields: string[]): Buffer {
    return this.fragmentsOf(ds).fullFeature()
      .extended(positions, fields, '}}', '{"type":"FeatureCollection","features":', '}')
  }

  /** Bytes of a dataset's record fragments in memory, every form. */
  fragmentBytes (ds: Dataset): number {
    return (this.byDataset.get(ds)?.stores ?? []).reduce((bytes, store) => bytes + store.chunkBytes, 0)
  }

  private fragmentsOf (ds: Dataset): Fragments {
    let f = this.byDataset.get(ds)
    if (f === undefined) this.byDataset.set(ds, f = makeFragments(ds, this.links, this.memory, this.pool))
    return f
  }
}

function makeFragments (ds: Dataset, links: string, memory: FragmentMemory, pool?: AnswerPool) {
  // JSON.stringify's text of the three record forms, by hand: by their formats only names and links need escaping
  const escapedLinks = JSON.stringify(links).slice(1, -1)
  const { ids, names, regions, countries, categories, lats, lngs } = ds
  // the forms share `{"id":…,"category":…,` and `"latitude":…,"longitude":…,"helipaddy_link":…}`
  const record = (middle: (p: number) => string) => (p: number) => {
    const id = ids.at(p)
    return `{"id":"${id}","category":"${categories[p]}",${middle(p)}` +
      `"latitude":${lats[p]},"longitude":${lngs[p]},"helipaddy_link":"${escapedLinks}${id}"}`
  }
  const named = (p: number) => `"name":${JSON.stringify(names.at(p))},`
  const full = record((p) => `${named(p)}"region":"${regions.at(p)}","country":"${countries.at(p)}",`)
  // the nearest record's text but for `,"distance_nm":…`, which goes in before the link
  const nearest = record(named)
  const minimal = record(() => '')
  // JSON.stringify of {type, id, geometry: {type, coordinates: [lng, lat]}, properties}
  const feature = (record: (p: number) => string) => (p: number) =>
    `{"type":"Feature","id":"${ids.at(p)}",` +
    `"geometry":{"type":"Point","coordinates":[${lngs[p]},${lats[p]}]},"properties":${record(p)}}`
  const stores: FragmentStore[] = []
  let fullFeature: FragmentStore | undefined
  let minimalFeature: FragmentStore | undefined
  const store = (make: (position: number) => string) => {
    const made = new FragmentStore(ds.count, make, memory, pool === undefined ? undefined : (size) => pool.take(size))
    stores.push(made)
    return made
  }
  return {
    full: store(full),
    minimal: store(minimal),
    nearest: store(nearest),
    // bytes after the distance's place in a nearest fragment, but for the id's
    nearestTail: Buffer.byteLength(`,"helipaddy_link":"${escapedLinks}"}`),
    // GeoJSON features around the records, made on first use only
    fullFeature: () => (fullFeature ??= store(feature(full))),
    minimalFeature: () => (minimalFeature ??= store(feature(minimal))),
    stores
  }
}
