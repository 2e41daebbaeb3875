// A dataset in memory: parallel arrays ordered by id (a site's position is its rank by id, so ties "by id" are ties
// by position), a kdbush sub-index per category and per large tag, and each tag's sites in id order.
import { createHash } from 'node:crypto'
import Database from 'better-sqlite3'
import { LRUCache } from 'lru-cache'
import { CATEGORY_MAX, SITE_ID_PATTERN, TAG_PATTERN, isName } from '../schemas/common.ts'
import {
  COUNTRY_CODE, MAX_PRECISION, REGION_CODE, SCHEMA_VERSION, readDatasetMeta,
  type DatasetMeta, type DatasetName
} from './dataset-file.ts'
import { CodeColumn, StringColumn } from './columns.ts'
import {
  buildSubIndex, identity, type Accept, type Hit, type NearbySearch, type SearchArea, type SubIndex
} from './spatial.ts'

/** Tags with at least this many sites get their own spatial index; smaller ones are scanned. */
const TAG_INDEX_MIN_SITES = 1024

export class DatasetError extends Error {
  constructor (readonly path: string, reason: string) {
    super(`${path}: ${reason}`)
    this.name = 'DatasetError'
  }
}

export interface Dataset {
  name: DatasetName
  path: string
  meta: DatasetMeta
  builtAt: string
  digest: string
  /** part of cache keys and ETags */
  version: string
  count: number
  /** ascending (ids are ASCII: byte order is string order) */
  ids: StringColumn
  names: StringColumn
  regions: CodeColumn
  countries: CodeColumn
  categories: Int32Array
  lats: Float64Array
  lngs: Float64Array
  all: SubIndex | undefined
  byCategory: Map<number, SubIndex>
  /** Sites of each tag, ascending positions (= id order). */
  tagSites: Map<string, Uint32Array>
  tagIndexes: Map<string, SubIndex>
  /** A filter of the categories for a walk of the tree (the tree of all sites or a tag's), read by slot. */
  slotFilter: (tree: SubIndex, categories: readonly number[]) => Accept
  /** tagSitesIn's lists, made on first use: at most 4 times the dataset's sites in all */
  tagViews: LRUCache<string, Uint32Array>
}

type ServedContent = Pick<Dataset, 'meta' | 'ids' | 'names' | 'regions' | 'countries' | 'categories' | 'lats' | 'lngs' |
  'tagSites'>

/** A digest of what a dataset serves, not of its meta alone: a file edited in place keeping its meta gets new ETags. */
export function contentDigest (ds: ServedContent): string {
  const hash = createHash('sha256')
  // each part preceded by its name and length, so that no two contents hash the same parts
  const part = (name: string, data: string | ArrayBufferView) => {
    const bytes = typeof data === 'string'
      ? Buffer.from(data)
      : new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
    hash.update(`${name} ${bytes.byteLength}\n`)
    hash.update(bytes)
  }
  const { ids, names, regions, countries } = ds
  const parts: [string, string | ArrayBufferView][] = [
    ['meta', JSON.stringify(Object.entries(ds.meta).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))],
    ['ids', ids.bytes], ['idEnds', ids.ends], ['names', names.bytes], ['nameEnds', names.ends],
    ['regions', JSON.stringify(regions.table)], ['regionCodes', regions.codes],
    ['countries', JSON.stringify(countries.table)], ['countryCodes', countries.codes],
    ['categories', ds.categories], ['lats', ds.lats], ['lngs', ds.lngs]
  ]
  for (const [name, data] of parts) part(name, data)
  for (const tag of [...ds.tagSites.keys()].sort()) part(`tag ${tag}`, ds.tagSites.get(tag)!)
  return hash.digest('base64url').slice(0, 22)
}

const siteIdPattern = new RegExp(SITE_ID_PATTERN)
const tagPattern = new RegExp(TAG_PATTERN)

/** Opens a dataset file read-only; a missing or unopenable file is a DatasetError. */
export function openDatasetFile (path: string): Database.Database {
  try {
    return new Database(path, { readonly: true, fileMustExist: true })
  } catch (err) {
    throw new DatasetError(path, `cannot open (${(err as Error).message})`)
  }
}

export function quickCheck (db: Database.Database, path: string) {
  const result = db.pragma('quick_check', { simple: true })
  if (result !== 'ok') throw new DatasetError(path, `quick_check failed: ${String(result)}`)
}

export function withDatasetFile<T> (path: string, fn: (db: Database.Database) => T): T {
  const db = openDatasetFile(path)
  try {
    return fn(db)
  } finally {
    db.close()
  }
}

/** Reads a dataset file (read-only) and builds its indexes. Throws DatasetError on any defect. */
export function loadDataset (path: string, name: DatasetName, options: { quickCheck?: boolean } = {}): Dataset {
  const { digest, parts } = readDatasetParts(path, options.quickCheck ?? true)
  return datasetOf(name, path, digest, parts)
}

/** A dataset file's columns and indexes, without what datasetOf makes from them (the index worker's snapshot). */
export function readDatasetParts (path: string, check: boolean) {
  try {
    return withDatasetFile(path, (db) => readDataset(db, path, check))
  } catch (err) {
    if (err instanceof DatasetError) throw err
    throw new DatasetError(path, (err as Error).message)
  }
}

/** A dataset file's meta, its keys, values and site_count checked (also before a rollback); throws DatasetError. */
export function checkDatasetHead (db: Database.Database, path: string): { meta: DatasetMeta, count: number } {
  const meta = readDatasetMeta(db)
  for (const key of ['schema_version', 'built_at', 'source', 'site_count', 'precision']) {
    if (meta[key] === undefined) throw new DatasetError(path, `meta has no ${key}`)
  }
  // a file of another schema, or edited by hand, is not served as if it were ours
  const bad = (reason: string) => new DatasetError(path, reason)
  if (meta.schema_version !== SCHEMA_VERSION) {
    throw bad(`meta.schema_version is ${JSON.stringify(meta.schema_version)}; this service reads ${SCHEMA_VERSION}`)
  }
  if (!/^\d+$/.test(meta.precision) || Number(meta.precision) > MAX_PRECISION) {
    throw bad(`meta.precision must be a whole number from 0 to ${MAX_PRECISION}`)
  }
  if (!/^\d{4}-\d\d-\d\dT/.test(meta.built_at) || Number.isNaN(Date.parse(meta.built_at))) {
    throw bad('meta.built_at must be an ISO 8601 time')
  }
  const count = db.prepare('SELECT count(*) FROM sites').pluck().get() as number
  if (String(count) !== meta.site_count) {
    throw bad(`meta.site_count is ${meta.site_count} but sites holds ${count} rows`)
  }
  return { meta, count }
}

function readDataset (db: Database.Database, path: string, check: boolean) {
  if (check) quickCheck(db, path)
  const { meta, count } = checkDatasetHead(db, path)
  const bad = (reason: string) => new DatasetError(path, reason)
  const ids = new Array<string>(count)
  const names = new Array<string>(count)
  const regions = CodeColumn.builder(count)
  const countries = CodeColumn.builder(count)
  const categories = new Int32Array(count)
  const lats = new Float64Array(count)
  const lngs = new Float64Array(count)
  const categoryLists = new Map<number, number[]>()

  const rows = db.prepare('SELECT id, category, name, region, country, latitude, longitude FROM sites ORDER BY id')
    .raw().iterate() as IterableIterator<[string, number, string, string, string, number, number]>
  let i = 0
  for (const [id, category, siteName, region, country, latitude, longitude] of rows) {
    if (typeof id !== 'string' || !siteIdPattern.test(id)) throw bad(`site ${JSON.stringify(id)}: bad id`)
    if (!Number.isInteger(category) || category < 1 || category > CATEGORY_MAX) {
      throw bad(`site ${id}: bad category ${String(category)}`)
    }
    if (typeof latitude !== 'number' || !(latitude >= -90 && latitude <= 90)) throw bad(`site ${id}: bad latitude`)
    if (typeof longitude !== 'number' || !(longitude >= -180 && longitude <= 180)) {
      throw bad(`site ${id}: bad longitude`)
    }
    if (typeof region !== 'string' || !REGION_CODE.test(region)) throw bad(`site ${id}: bad region`)
    if (typeof country !== 'string' || !COUNTRY_CODE.test(country)) throw bad(`site ${id}: bad country`)
    if (!isName(siteName)) throw bad(`site ${id}: bad name ${JSON.stringify(siteName)}`)
    ids[i] = id
    names[i] = siteName
    regions.set(i, region)
    countries.set(i, country)
    categories[i] = category
    lats[i] = latitude
    lngs[i] = longitude
    let list = categoryLists.get(category)
    if (!list) categoryLists.set(category, list = [])
    list.push(i++)
  }
  if (i !== count) throw bad('sites changed while being read')

  // Tags in site id order, merged against the id-ordered sites (no id → position map needed).
  const tagLists = new Map<string, number[]>()
  const tagRows = db.prepare('SELECT site_id, tag FROM site_tags ORDER BY site_id, tag')
    .raw().iterate() as IterableIterator<[string, string]>
  let position = 0
  for (const [siteId, tag] of tagRows) {
    while (position < count && ids[position] < siteId) position++
    if (position >= count || ids[position] !== siteId) {
      throw bad(`site_tags names unknown site ${JSON.stringify(siteId)}`)
    }
    if (typeof tag !== 'string' || tag.length > 64 || !tagPattern.test(tag)) {
      throw bad(`site ${siteId}: bad tag ${JSON.stringify(tag)}`)
    }
    let list = tagLists.get(tag)
    if (!list) tagLists.set(tag, list = [])
    list.push(position)
  }

  const byCategory = new Map<number, SubIndex>()
  for (const [category, list] of categoryLists) {
    byCategory.set(category, buildSubIndex(Uint32Array.from(list), lngs, lats))
  }
  const all = count === 0 ? undefined : buildSubIndex(identity(count), lngs, lats)

  const tagSites = new Map<string, Uint32Array>()
  const tagIndexes = new Map<string, SubIndex>()
  for (const [tag, list] of tagLists) {
    const positions = Uint32Array.from(list)
    tagSites.set(tag, positions)
    if (positions.length >= TAG_INDEX_MIN_SITES) tagIndexes.set(tag, buildSubIndex(positions, lngs, lats))
  }

  const served = {
    meta, ids: StringColumn.from(ids), names: StringColumn.from(names), regions: regions.done(),
    countries: countries.done(), categories, lats, lngs, tagSites
  }
  return { digest: contentDigest(served), parts: { ...served, count, all, byCategory, tagIndexes } }
}

/** A dataset's columns and indexes, as read from its file or its snapshot. */
export type DatasetParts = Omit<Dataset, 'name' | 'path' | 'builtAt' | 'digest' | 'version' | 'slotFilter' | 'tagViews'>

/** A dataset of these columns and indexes, with what is made from them. */
export function datasetOf (name: DatasetName, path: string, digest: string, parts: DatasetParts): Dataset {
  const { meta, count, categories, byCategory, all, tagIndexes } = parts
  const trees = all === undefined ? [...tagIndexes.values()] : [all, ...tagIndexes.values()]
  return {
    ...parts,
    name,
    path,
    builtAt: meta.built_at,
    digest,
    // the name too: a sandbox and a production file with the same content never share cached answers or ETags
    version: `${name}|${digest}`,
    slotFilter: slotFilters(categories, [...byCategory.keys()], trees),
    tagViews: new LRUCache({ maxSize: 4 * count + 1, sizeCalculation: (view) => view.length + 1 })
  }
}

/** Hits in (distance, id) order, and the one sub-index their slots belong to (undefined: several, or a scan). */
export interface Nearby { hits: Hit[], index: SubIndex | undefined }

/**
 * Where a search looks: the sub-indexes to walk (keeping the sites `accept` keeps), or a small tag's sites to scan.
 * The tree of all sites (filtered by slot) when the categories hold half the sites or more, else the categories' own
 * trees, so that rare categories never walk sites they cannot return.
 */
export interface SearchPlan {
  indexes: SubIndex[]
  scan?: Uint32Array
  accept?: Accept
}

export function searchPlan (ds: Dataset, categories: readonly number[], tag?: string): SearchPlan {
  if (tag === undefined) {
    const covered = sitesIn(ds, categories)
    if (categories.length > 1 && ds.all && covered * 2 >= ds.count) {
      if (covered === ds.count) return { indexes: [ds.all] }
      return { indexes: [ds.all], accept: ds.slotFilter(ds.all, categories) }
    }
    const indexes: SubIndex[] = []
    for (const category of categories) {
      const index = ds.byCategory.get(category)
      if (index) indexes.push(index)
    }
    return { indexes }
  }
  const candidates = ds.tagSites.get(tag)
  if (!candidates) return { indexes: [] }
  const index = ds.tagIndexes.get(tag)
  if (index !== undefined) {
    const every = sitesIn(ds, categories) === ds.count
    return { indexes: [index], accept: every ? undefined : ds.slotFilter(index, categories) }
  }
  return { indexes: [], scan: candidates, accept: (position) => categories.includes(ds.categories[position]) }
}

/**
 * Category filters read by tree slot, where the walk is (reading a category by position is a cache miss): each site's
 * category number in each tree's order, a byte a site up to 256 categories. Made at load.
 */
function slotFilters (categories: Int32Array, categoryList: number[], trees: SubIndex[]): Dataset['slotFilter'] {
  const codeOf = new Map(categoryList.map((category, code) => [category, code]))
  const codes = (length: number) => codeOf.size <= 256 ? new Uint8Array(length) : new Uint32Array(length)
  const byPosition = codes(categories.length)
  for (let p = 0; p < categories.length; p++) byPosition[p] = codeOf.get(categories[p])!
  const byTree = new Map<SubIndex, Uint8Array | Uint32Array>()
  for (const tree of trees) {
    const { slotPositions } = tree
    const bySlot = codes(slotPositions.length)
    for (let i = 0; i < slotPositions.length; i++) bySlot[i] = byPosition[slotPositions[i]]
    byTree.set(tree, bySlot)
  }
  return (tree, categories) => {
    const allowed = new Uint8Array(codeOf.size)
    for (const category of categories) {
      const code = codeOf.get(category)
      if (code !== undefined) allowed[code] = 1
    }
    const bySlot = byTree.get(tree)!
    return (_, slot) => allowed[bySlot[slot]] === 1
  }
}

/** Nearest-first sites within the radius, of the allowed categories (and tag), at most `limit`. */
export function findNearby (
  ds: Dataset, query: SearchArea & { categories: readonly number[], tag?: string }, search: NearbySearch
): Nearby {
  const { indexes, scan, accept } = searchPlan(ds, query.categories, query.tag)
  if (scan !== undefined) return { hits: search.scan(ds, scan, query, accept), index: undefined }
  return { hits: search.search(indexes, query, accept), index: indexes.length === 1 ? indexes[0] : undefined }
}

function sitesIn (ds: Dataset, categories: readonly number[]): number {
  let sites = 0
  for (const c of categories) sites += ds.byCategory.get(c)?.positions.length ?? 0
  return sites
}

/** Position of a site id, or -1. */
export const positionOf = (ds: Dataset, id: string): number => ds.ids.indexOfSorted(id)

const NO_SITES = new Uint32Array(0)

/**
 * A tag's sites in the allowed categories, in id order, kept (LRU): a page is a slice of it, not a pass over the tag,
 * and its fragments are laid out in one order for every partner with the same allow-list.
 */
export function tagSitesIn (ds: Dataset, tag: string, categories: readonly number[]): Uint32Array {
  const list = ds.tagSites.get(tag)
  if (!list) return NO_SITES
  if (sitesIn(ds, categories) === ds.count) return list
  const key = `${tag} ${categories.join(',')}`
  let view = ds.tagViews.get(key)
  if (view === undefined) ds.tagViews.set(key, view = list.filter((p) => categories.includes(ds.categories[p])))
  return view
}

/** One page of a tag's sites in the allowed categories, in id order (places in tagSitesIn's), with the true total. */
export function tagPage (ds: Dataset, tag: string, categories: readonly number[], page: number, perPage: number) {
  const order = tagSitesIn(ds, tag, categories)
  const from = Math.min((page - 1) * perPage, order.length)
  const places = new Uint32Array(Math.min(from + perPage, order.length) - from)
  for (let i = 0; i < places.length; i++) places[i] = from + i
  return { total: order.length, order, places }
}
