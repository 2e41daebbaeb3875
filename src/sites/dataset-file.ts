// Dataset files: one SQLite file per dataset, tables fixed (other tools read them; docs/data-files.md).
// A writer builds a new file beside the old one and renames it into place only when complete.
import { renameSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import Database from 'better-sqlite3'
import { fsyncPath, removeStaleTempFiles, tempPathFor } from '../setup/replace-file.ts'
import { compareSites, type SiteChanges } from './changes.ts'

export const SCHEMA_VERSION = '1'
export const DATASETS = ['sandbox', 'production'] as const
export type DatasetName = typeof DATASETS[number]

export const DATASET_DDL = `
CREATE TABLE sites (
  id TEXT PRIMARY KEY, category INTEGER NOT NULL, name TEXT NOT NULL,
  region TEXT NOT NULL, country TEXT NOT NULL,
  latitude REAL NOT NULL, longitude REAL NOT NULL);
CREATE TABLE site_tags (site_id TEXT NOT NULL REFERENCES sites(id), tag TEXT NOT NULL,
  PRIMARY KEY (site_id, tag));
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
`

export interface SiteRow {
  id: string
  category: number
  name: string
  region: string
  country: string
  latitude: number
  longitude: number
  tags: string[]
}

/** What a dataset file records about itself beside its sites. */
export interface CommitMeta {
  source: string
  precision: number
  /** names of categories 8 and above, e.g. { 8: 'Heliport' } (2 to 7 have fixed names) */
  categoryNames?: Record<number, string>
}

export interface DatasetMeta {
  schema_version: string
  built_at: string
  source: string
  site_count: string
  precision: string
  [key: string]: string
}

/** A site's region: three upper-case letters (EUR); its country: two (GB). */
export const REGION_CODE = /^[A-Z]{3}$/
export const COUNTRY_CODE = /^[A-Z]{2}$/
/** The precision a file records (decimals kept by the import's rounding). */
export const MAX_PRECISION = 10
/** The meta key that names categories 8 and above: JSON, e.g. {"8": "Heliport"}. */
export const CATEGORY_NAMES_META = 'category_names'

export const datasetPath = (dataDir: string, name: DatasetName) => join(dataDir, `${name}.db`)

/** The meta table of an open dataset file, as key → value. */
export function readDatasetMeta (db: Database.Database): DatasetMeta {
  const rows = db.prepare('SELECT key, value FROM meta').all() as { key: string, value: string }[]
  return Object.fromEntries(rows.map((r) => [r.key, r.value])) as DatasetMeta
}

/** Rounds a coordinate to `precision` decimal places: the obscuring step of every writer. */
export function obscure (value: number, precision: number): number {
  const factor = 10 ** precision
  const rounded = Math.round(value * factor) / factor
  return rounded === 0 ? 0 : rounded
}

export type DatasetWriter = ReturnType<typeof openDatasetWriter>

/** Sites and tag rows written by one statement each: a call into SQLite per row costs more than the row. */
export const WRITE_BATCH = { sites: 64, tags: 128 }
const SITES_PER_COMMIT = 50_000
const isDuplicate = (err: unknown) => (err as { code?: string }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY'

/**
 * Opens a writer on a temporary file beside `path`, committed every SITES_PER_COMMIT sites so memory
 * stays flat. A `scratch` writer (a dry run) writes to SQLite's own temporary file: nothing beside `path`.
 * Sites are written in batches, so a duplicate id is found when its batch is written: then `onDuplicate`
 * is called with the `ref` the site was added with (without it, the write throws).
 */
export function openDatasetWriter<Ref = unknown> (
  path: string,
  onDuplicate?: (ref: Ref | undefined, site: SiteRow) => void,
  { scratch = false } = {}
) {
  if (!scratch) removeStaleTempFiles(path)
  const tmpPath = scratch ? '' : tempPathFor(path)
  const db = new Database(tmpPath)
  // better-sqlite3's defensive mode ignores journal_mode = OFF: the rollback journal stays on, so a
  // writer killed mid-transaction leaves a -journal beside its .tmp (removeStaleTempFiles takes both)
  db.pragma('synchronous = OFF')
  db.exec(DATASET_DDL)
  const siteColumns = 'INSERT INTO sites (id, category, name, region, country, latitude, longitude) VALUES '
  const tagColumns = 'INSERT OR IGNORE INTO site_tags (site_id, tag) VALUES '
  const insertSite = db.prepare(siteColumns + '(?, ?, ?, ?, ?, ?, ?)')
  const insertSites = db.prepare(siteColumns + Array(WRITE_BATCH.sites).fill('(?, ?, ?, ?, ?, ?, ?)').join(', '))
  const insertTag = db.prepare(tagColumns + '(?, ?)')
  const insertTags = db.prepare(tagColumns + Array(WRITE_BATCH.tags).fill('(?, ?)').join(', '))
  const sites: SiteRow[] = [] // added, not written yet
  const refs: (Ref | undefined)[] = []
  const values: unknown[] = [] // a statement's parameters
  const tagValues: unknown[] = [] // tag rows of written sites, not written yet
  let count = 0
  let sinceCommit = 0
  db.exec('BEGIN')

  const written = (s: SiteRow) => {
    count++
    for (const tag of s.tags) {
      tagValues.push(s.id, tag)
      if (tagValues.length === 2 * WRITE_BATCH.tags) {
        insertTags.run(tagValues)
        tagValues.length = 0
      }
    }
  }
  /** Writes sites[from, to) in one statement, or gives the duplicate id's error that kept it from writing any. */
  const insert = (statement: Database.Statement, from: number, to: number): unknown => {
    values.length = 0
    for (let i = from; i < to; i++) {
      const s = sites[i]
      values.push(s.id, s.category, s.name, s.region, s.country, s.latitude, s.longitude)
    }
    try {
      statement.run(values)
    } catch (err) {
      if (isDuplicate(err)) return err
      throw err
    }
    for (let i = from; i < to; i++) written(sites[i])
    return undefined
  }
  const writeSites = () => {
    // a full batch in one statement; a partial one, or one holding a duplicate, row by row to find it
    if (sites.length !== WRITE_BATCH.sites || insert(insertSites, 0, sites.length)) {
      for (let i = 0; i < sites.length; i++) {
        const duplicate = insert(insertSite, i, i + 1)
        if (!duplicate) continue
        if (!onDuplicate) throw duplicate
        onDuplicate(refs[i], sites[i]) // its tags are not written: the site is not
      }
    }
    sinceCommit += sites.length
    sites.length = 0
    refs.length = 0
    if (sinceCommit >= SITES_PER_COMMIT) {
      db.exec('COMMIT')
      db.exec('BEGIN')
      sinceCommit = 0
    }
  }
  const flush = () => {
    writeSites()
    for (let i = 0; i < tagValues.length; i += 2) insertTag.run(tagValues[i], tagValues[i + 1])
    tagValues.length = 0
  }

  /** Writes meta, closes and fsyncs the file, and gives its temporary path for the caller to rename. */
  const finish = ({ source, precision, categoryNames }: CommitMeta) => {
    if (scratch) throw new Error('a scratch writer (a dry run) writes no dataset file')
    flush()
    const builtAt = new Date().toISOString()
    const meta: DatasetMeta = {
      schema_version: SCHEMA_VERSION, built_at: builtAt, source, site_count: String(count), precision: String(precision)
    }
    if (categoryNames !== undefined && Object.keys(categoryNames).length > 0) {
      meta[CATEGORY_NAMES_META] = JSON.stringify(categoryNames)
    }
    const insertMeta = db.prepare('INSERT INTO meta (key, value) VALUES (?, ?)')
    for (const [key, value] of Object.entries(meta)) insertMeta.run(key, value)
    db.exec('COMMIT')
    db.pragma('journal_mode = DELETE')
    db.close()
    fsyncPath(tmpPath)
    return { siteCount: count, builtAt, file: tmpPath }
  }

  return {
    add (site: SiteRow, ref?: Ref) {
      sites.push(site)
      refs.push(ref)
      if (sites.length === WRITE_BATCH.sites) writeSites()
    },
    flush,
    /** What the sites added so far change against the dataset file at `other` (undefined: none there). */
    compare (other: string | undefined): SiteChanges {
      flush()
      db.exec('COMMIT') // SQLite attaches a file outside a transaction only
      try {
        return compareSites(db, other)
      } finally {
        db.exec('BEGIN')
      }
    },
    finish,
    /** finish(), then renames the file into place. */
    commit (meta: CommitMeta) {
      const { siteCount, builtAt } = finish(meta)
      renameSync(tmpPath, path)
      fsyncPath(dirname(path))
      return { siteCount, builtAt }
    },
    abort () {
      if (db.open) db.close() // without its last transaction, which SQLite rolls back
      if (!scratch) rmSync(tmpPath, { force: true })
    }
  }
}

/** Writes a whole dataset file at once (fixtures, empty production file). */
export function writeDataset (path: string, sites: Iterable<SiteRow>, meta: CommitMeta) {
  const writer = openDatasetWriter(path)
  try {
    for (const site of sites) writer.add(site)
    return writer.commit(meta)
  } finally {
    writer.abort() // the temporary file, unless it was renamed into place
  }
}
