// Partners in control.db (docs/data-files.md). The CLI writes here; the service reads, and
// notices partner changes through partner_changes, which only writes to the partners table move.
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import Database from 'better-sqlite3'
import {
  DEFAULT_CATEGORIES, DEFAULT_MAX_RESULTS, DEFAULT_RADIUS_CAP_KM, MAX_LIMIT, TIER_LIMITS, WINDOWS,
  type Environment, type Limit, type Limits, type Status, type Tier, type WindowName
} from './tiers.ts'
import { openReadOnly } from '../setup/read-only-db.ts'
import { newToken, tokenDigest } from './tokens.ts'
import { boundsProblem, partnerLabel, rowProblem } from './row-schema.ts'

export const controlPath = (dataDir: string) => join(dataDir, 'control.db')

/** A limit override: a number, 'unlimited', or null for the tier's limit. */
export type LimitOverride = number | 'unlimited' | null

export interface Partner {
  id: string
  slug: string
  name: string
  status: Status
  tier: Tier
  environment: Environment
  categories: number[]
  otherCategories: boolean
  siteById: boolean
  radiusCapKm: number
  maxResults: number
  limitOverrides: Record<WindowName, LimitOverride>
  createdAt: string
  updatedAt: string
}

export interface NewPartner {
  name: string
  slug?: string
  tier?: Tier
  environment?: Environment
  status?: Status
}

export type PartnerChanges = Partial<Pick<Partner, 'name' | 'tier' | 'environment' | 'status' | 'categories' |
  'otherCategories' | 'siteById' | 'radiusCapKm' | 'maxResults'>> &
  { limitOverrides?: Partial<Record<WindowName, LimitOverride>> }

export class PartnerStoreError extends Error {
  constructor (readonly reason: 'not_found' | 'conflict' | 'invalid', message: string) {
    super(message)
    this.name = 'PartnerStoreError'
  }
}

/**
 * Each partner's latest change, numbered in commit order, kept by triggers: every writer of the
 * partners table moves it (this CLI, an older one, a sqlite3 shell), and nothing else does, so the
 * service's own heartbeats and counter saves cost no partner reload. One row per partner id: its
 * newest change (AUTOINCREMENT never gives a number twice, so the newest number only grows).
 */
const noteChanges = (ids: string) => `
  INSERT INTO partner_changes (partner_id) VALUES ${ids.split(', ').map((id) => `(${id})`).join(', ')};
  DELETE FROM partner_changes WHERE partner_id IN (${ids}) AND seq <
    (SELECT max(seq) FROM partner_changes AS newer WHERE newer.partner_id = partner_changes.partner_id);`
const PARTNER_CHANGES = `
CREATE TABLE IF NOT EXISTS partner_changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, partner_id TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS partner_changes_by_partner ON partner_changes (partner_id);
CREATE TRIGGER IF NOT EXISTS partner_inserted AFTER INSERT ON partners BEGIN${noteChanges('NEW.id')}
END;
CREATE TRIGGER IF NOT EXISTS partner_updated AFTER UPDATE ON partners BEGIN${noteChanges('OLD.id, NEW.id')}
END;
CREATE TRIGGER IF NOT EXISTS partner_deleted AFTER DELETE ON partners BEGIN${noteChanges('OLD.id')}
END;
`

const SCHEMA = `
CREATE TABLE IF NOT EXISTS partners (
  id TEXT PRIMARY KEY,
  slug TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'active', 'suspended')),
  tier TEXT NOT NULL CHECK (tier IN ('demo', 'growth', 'scale')),
  environment TEXT NOT NULL CHECK (environment IN ('sandbox', 'production')),
  categories TEXT NOT NULL,
  other_categories INTEGER NOT NULL CHECK (other_categories IN (0, 1)),
  site_by_id INTEGER NOT NULL CHECK (site_by_id IN (0, 1)),
  radius_cap_km REAL NOT NULL CHECK (radius_cap_km > 0),
  max_results INTEGER NOT NULL CHECK (max_results >= 1),
  limit_minute TEXT, limit_hour TEXT, limit_day TEXT,
  token_sha256 TEXT NOT NULL UNIQUE,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
${PARTNER_CHANGES}`

export interface PartnerRow {
  id: string
  slug: string
  name: string
  status: Status
  tier: Tier
  environment: Environment
  categories: string
  other_categories: number
  site_by_id: number
  radius_cap_km: number
  max_results: number
  limit_minute: string | null
  limit_hour: string | null
  limit_day: string | null
  token_sha256: string
  created_at: string
  updated_at: string
}

const overrideFromColumn = (value: string | null): LimitOverride =>
  value === null ? null : value === 'unlimited' ? 'unlimited' : Number(value)
export const overrideToColumn = (value: LimitOverride): string | null => value === null ? null : String(value)

export function fromRow (row: PartnerRow): Partner {
  return {
    id: row.id,
    slug: row.slug,
    name: row.name,
    status: row.status,
    tier: row.tier,
    environment: row.environment,
    categories: row.categories === '' ? [] : row.categories.split(',').map(Number),
    otherCategories: row.other_categories === 1,
    siteById: row.site_by_id === 1,
    radiusCapKm: row.radius_cap_km,
    maxResults: row.max_results,
    limitOverrides: {
      minute: overrideFromColumn(row.limit_minute),
      hour: overrideFromColumn(row.limit_hour),
      day: overrideFromColumn(row.limit_day)
    },
    createdAt: row.created_at,
    updatedAt: row.updated_at
  }
}

/** The limits in force: the tier's, with the partner's overrides. */
export function effectiveLimits (partner: Pick<Partner, 'tier' | 'limitOverrides'>): Limits {
  const limits = { ...TIER_LIMITS[partner.tier] }
  for (const w of WINDOWS) {
    const o = partner.limitOverrides[w]
    if (o !== null) limits[w] = o === 'unlimited' ? null : o
  }
  return limits
}

function slugFromName (name: string): string {
  return name.toLowerCase().normalize('NFKD').replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '')
    .slice(0, 64).replace(/-+$/, '')
}

/** A new partner's row and its token (shown once; only its digest is kept). */
export function newPartnerRow (input: NewPartner): { row: PartnerRow, token: string } {
  const slug = input.slug ?? slugFromName(input.name)
  if (!slug) throw new PartnerStoreError('invalid', 'cannot derive a slug from the name; give --slug')
  const token = newToken()
  const now = new Date().toISOString()
  const row: PartnerRow = {
    id: `ptn_${randomBytes(6).toString('hex')}`,
    slug,
    name: input.name,
    status: input.status ?? 'active',
    tier: input.tier ?? 'demo',
    environment: input.environment ?? 'sandbox',
    categories: DEFAULT_CATEGORIES.join(','),
    other_categories: 0,
    site_by_id: 0,
    radius_cap_km: DEFAULT_RADIUS_CAP_KM,
    max_results: DEFAULT_MAX_RESULTS,
    limit_minute: null,
    limit_hour: null,
    limit_day: null,
    token_sha256: tokenDigest(token),
    created_at: now,
    updated_at: now
  }
  return { row, token }
}

/** The row after `changes`; a limit must be a whole number from 1 to MAX_LIMIT (or unlimited, or the tier's). */
export function changedRow (current: PartnerRow, changes: PartnerChanges): PartnerRow {
  for (const [window, value] of Object.entries(changes.limitOverrides ?? {})) {
    if (typeof value === 'number' && !(Number.isInteger(value) && value >= 1 && value <= MAX_LIMIT)) {
      throw new PartnerStoreError('invalid',
        `the ${window} limit must be a whole number from 1 to ${MAX_LIMIT} or unlimited`)
    }
  }
  const partner = fromRow(current)
  const limitOverrides = { ...partner.limitOverrides, ...changes.limitOverrides }
  const next: Partner = { ...partner, ...changes, limitOverrides }
  return {
    ...current,
    name: next.name,
    status: next.status,
    tier: next.tier,
    environment: next.environment,
    categories: [...new Set(next.categories)].sort((a, b) => a - b).join(','),
    other_categories: next.otherCategories ? 1 : 0,
    site_by_id: next.siteById ? 1 : 0,
    radius_cap_km: next.radiusCapKm,
    max_results: next.maxResults,
    limit_minute: overrideToColumn(next.limitOverrides.minute),
    limit_hour: overrideToColumn(next.limitOverrides.hour),
    limit_day: overrideToColumn(next.limitOverrides.day),
    updated_at: new Date().toISOString()
  }
}

const COLUMN_OF: Record<Exclude<keyof PartnerChanges, 'limitOverrides'>, keyof PartnerRow> = {
  name: 'name',
  status: 'status',
  tier: 'tier',
  environment: 'environment',
  categories: 'categories',
  otherCategories: 'other_categories',
  siteById: 'site_by_id',
  radiusCapKm: 'radius_cap_km',
  maxResults: 'max_results'
}
/** A row to compute a change's columns on (their values do not depend on it). */
const EMPTY_ROW: PartnerRow = {
  id: 'ptn_000000000000', slug: 'x', name: 'x', status: 'active', tier: 'demo', environment: 'sandbox',
  categories: '4', other_categories: 0, site_by_id: 0, radius_cap_km: 1, max_results: 1,
  limit_minute: null, limit_hour: null, limit_day: null, token_sha256: '', created_at: '', updated_at: ''
}
/** A row's insert: a checked row has control.db's columns and no other. */
const INSERT_ROW = `INSERT INTO partners (${Object.keys(EMPTY_ROW).join(', ')}) ` +
  `VALUES (${Object.keys(EMPTY_ROW).map((k) => '@' + k).join(', ')})`
const LIMIT_COLUMN: Record<WindowName, keyof PartnerRow> = {
  minute: 'limit_minute', hour: 'limit_hour', day: 'limit_day'
}

/**
 * The columns a change writes, with their new values (and updated_at): only what it names, so two
 * changes of different fields made at once both take effect. The values do not depend on the row.
 */
export function changedColumns (changes: PartnerChanges): Partial<PartnerRow> {
  const next = changedRow(EMPTY_ROW, changes)
  const columns: Partial<Record<keyof PartnerRow, unknown>> = {}
  for (const [field, column] of Object.entries(COLUMN_OF) as [keyof typeof COLUMN_OF, keyof PartnerRow][]) {
    if (changes[field] !== undefined) columns[column] = next[column]
  }
  for (const window of Object.keys(changes.limitOverrides ?? {}) as WindowName[]) {
    columns[LIMIT_COLUMN[window]] = next[LIMIT_COLUMN[window]]
  }
  columns.updated_at = next.updated_at
  return columns as Partial<PartnerRow>
}

/**
 * A row from an export file or Redis, checked by its schema (src/partners/row-schema.ts) before it
 * is written anywhere: the row, which then has control.db's columns and no other, or an error
 * naming the partner (`index`: its place in the file, for one without a slug) and the field.
 */
export function checkedRow (value: unknown, index?: number): PartnerRow {
  const problem = rowProblem(value)
  if (problem !== undefined) throw new PartnerStoreError('invalid', `${partnerLabel(value, index)}: ${problem}`)
  return value as PartnerRow
}

/** What no two partners may share: each is a key of the store (an id keys a rate-limit log, a digest a token). */
export type UniqueColumn = 'slug' | 'id' | 'token_sha256'

/** The first slug, id or token digest two rows share: the column, the later row's slug, the earlier's. */
export function sharedKey (rows: PartnerRow[]): [UniqueColumn, string, string] | undefined {
  for (const key of ['slug', 'id', 'token_sha256'] as const) {
    const seen = new Map<string, string>()
    for (const row of rows) {
      const other = seen.get(row[key])
      if (other !== undefined) return [key, row.slug, other]
      seen.set(row[key], row.slug)
    }
  }
  return undefined
}

/** An import refused because two partners would share a column; `where` the other is kept, when not in the file. */
export function clashMessage (key: UniqueColumn, slug: string, other: string, where?: string): string {
  if (key === 'slug' && where === undefined) return `partner ${JSON.stringify(slug)} is in the file twice`
  const place = where === undefined ? '' : `, ${where}`
  return `partner ${JSON.stringify(slug)}: its ${key} is also partner ${JSON.stringify(other)}'s${place}`
}

/** The rows of an import, each checked, no two sharing a slug, id or digest: what either store's importRows takes. */
export function importedRows (rows: PartnerRow[]): PartnerRow[] {
  const checked = rows.map((row, index) => {
    const checkedOne = checkedRow(row, index)
    const problem = boundsProblem(checkedOne)
    if (problem !== undefined) throw new PartnerStoreError('invalid', `${partnerLabel(row, index)}: ${problem}`)
    return checkedOne
  })
  const shared = sharedKey(checked)
  if (shared) throw new PartnerStoreError('conflict', clashMessage(...shared))
  return checked
}

export class PartnerStore {
  readonly db: Database.Database

  /**
   * busyTimeoutMs: how long a statement waits for another connection's lock. The service passes a
   * short one: better-sqlite3 is synchronous, and a long wait would stall every request.
   */
  constructor (readonly path: string, options: { readonly?: boolean, busyTimeoutMs?: number } = {}) {
    if (options.readonly) {
      this.db = PartnerStore.lookAt(path, options.busyTimeoutMs ?? 5000)
      return
    }
    mkdirSync(dirname(path), { recursive: true })
    this.db = new Database(path)
    try {
      this.db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`)
      this.db.pragma('journal_mode = WAL')
      this.db.exec(SCHEMA)
    } catch (err) {
      this.db.close()
      throw PartnerStore.unusable(path, err)
    }
  }

  /**
   * The file opened to read only: nothing written, no file made, so that an operator who may only
   * read DATA_DIR can look (without the file: no partner).
   */
  private static lookAt (path: string, busyTimeoutMs: number): Database.Database {
    if (!existsSync(path)) {
      const empty = new Database(':memory:')
      empty.exec(SCHEMA)
      return empty
    }
    let db: Database.Database | undefined
    try {
      db = openReadOnly(path) // a file that is not a database fails here
      db.pragma(`busy_timeout = ${busyTimeoutMs}`)
      return db
    } catch (err) {
      db?.close()
      throw PartnerStore.unusable(path, err)
    }
  }

  // SQLite's own words ("file is not a database") do not say which file
  private static unusable (path: string, err: unknown): Error {
    return new Error(`${path} cannot be used: ${(err as Error).message}`, { cause: err })
  }

  /** The newest partner change's number: moved by every write to the partners table, and by nothing else. */
  changeMark (): number {
    return this.db.prepare('SELECT coalesce(max(seq), 0) FROM partner_changes').pluck().get() as number
  }

  /** Every partner, and the change mark they are as of (one read transaction). */
  snapshot (): { mark: number, rows: PartnerRow[] } {
    return this.db.transaction(() => ({
      mark: this.changeMark(),
      rows: this.db.prepare('SELECT * FROM partners').all() as PartnerRow[]
    }))()
  }

  /**
   * The partners changed since change `mark`, by id: each one's row now, or undefined when it is
   * gone (deleted, or replaced by an import under another id); and the mark they are as of.
   */
  changesSince (mark: number): { mark: number, rows: Map<string, PartnerRow | undefined> } {
    return this.db.transaction(() => {
      const select = this.db.prepare('SELECT c.partner_id AS changed, p.* FROM partner_changes AS c ' +
        'LEFT JOIN partners AS p ON p.id = c.partner_id WHERE c.seq > ? ORDER BY c.seq')
      const rows = new Map<string, PartnerRow | undefined>()
      for (const { changed, ...row } of select.all(mark) as (PartnerRow & { changed: string })[]) {
        rows.set(changed, row.id === null ? undefined : row) // gone: joined to no partner
      }
      return { mark: this.changeMark(), rows }
    })()
  }

  count (): number {
    return this.db.prepare('SELECT count(*) FROM partners').pluck().get() as number
  }

  list (): Partner[] {
    return (this.db.prepare('SELECT * FROM partners ORDER BY slug').all() as PartnerRow[]).map(fromRow)
  }

  private row (slug: string): PartnerRow {
    const row = this.db.prepare('SELECT * FROM partners WHERE slug = ?').get(slug) as PartnerRow | undefined
    if (!row) throw new PartnerStoreError('not_found', `no partner with slug '${slug}'`)
    return row
  }

  get (slug: string): Partner {
    return fromRow(this.row(slug))
  }

  /** Every partner as stored (token digests included, never tokens): for `partners export`. */
  exportRows (): PartnerRow[] {
    return this.db.prepare('SELECT * FROM partners ORDER BY slug').all() as PartnerRow[]
  }

  /**
   * Adds or replaces partners by slug, digests and all, in one transaction: all or none, refused
   * when two partners would then share a slug, an id or a token digest (for `partners import`).
   * The store after the import is what is checked, as RedisPartnerStore does: a file may swap
   * two replaced partners' digests.
   */
  importRows (rows: PartnerRow[]): { created: number, replaced: number } {
    const checked = importedRows(rows)
    const slugs = new Set(checked.map((row) => row.slug))
    return this.db.transaction(() => {
      const kept = { id: new Map<string, string>(), token_sha256: new Map<string, string>() }
      let replaced = 0
      const stored = this.db.prepare('SELECT slug, id, token_sha256 FROM partners').all() as PartnerRow[]
      for (const { slug, id, token_sha256: digest } of stored) {
        if (slugs.has(slug)) {
          replaced++
        } else {
          kept.id.set(id, slug)
          kept.token_sha256.set(digest, slug)
        }
      }
      for (const row of checked) {
        for (const key of ['id', 'token_sha256'] as const) {
          const owner = kept[key].get(row[key])
          if (owner === undefined) continue
          throw new PartnerStoreError('conflict', clashMessage(key, row.slug, owner, 'in control.db'))
        }
      }
      const remove = this.db.prepare('DELETE FROM partners WHERE slug = ?')
      for (const row of checked) remove.run(row.slug)
      const insert = this.db.prepare(INSERT_ROW)
      for (const row of checked) insert.run(row)
      return { created: checked.length - replaced, replaced }
    }).immediate()
  }

  create (input: NewPartner): { partner: Partner, token: string } {
    const { row, token } = newPartnerRow(input)
    try {
      this.db.prepare(INSERT_ROW).run(row)
    } catch (err) {
      if ((err as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') {
        throw new PartnerStoreError('conflict', `a partner with slug '${row.slug}' exists already`)
      }
      throw err
    }
    return { partner: fromRow(row), token }
  }

  /** One immediate transaction that writes only the columns the change names. */
  update (slug: string, changes: PartnerChanges): Partner {
    const columns = changedColumns(changes)
    const names = Object.keys(columns)
    this.db.transaction(() => {
      this.row(slug)
      const set = names.map((c) => `${c} = @${c}`).join(', ')
      this.db.prepare(`UPDATE partners SET ${set} WHERE slug = @slug`).run({ ...columns, slug })
    }).immediate()
    return this.get(slug)
  }

  rotate (slug: string): { partner: Partner, token: string } {
    const token = newToken()
    const changed = this.db.prepare('UPDATE partners SET token_sha256 = ?, updated_at = ? WHERE slug = ?')
      .run(tokenDigest(token), new Date().toISOString(), slug).changes
    if (changed === 0) throw new PartnerStoreError('not_found', `no partner with slug '${slug}'`)
    return { partner: this.get(slug), token }
  }

  close () {
    this.db.close()
  }
}

/** The partner as `show`/`list --json` print it: every field of the partner, never a token or digest. */
export function partnerView (partner: Partner) {
  const limits = effectiveLimits(partner)
  const shown = (l: Limit) => l === null ? 'unlimited' as const : l
  return {
    id: partner.id,
    slug: partner.slug,
    name: partner.name,
    status: partner.status,
    tier: partner.tier,
    environment: partner.environment,
    categories: partner.categories,
    other_categories: partner.otherCategories,
    site_by_id: partner.siteById,
    radius_cap_km: partner.radiusCapKm,
    max_results: partner.maxResults,
    limits: { minute: shown(limits.minute), hour: shown(limits.hour), day: shown(limits.day) },
    limit_overrides: partner.limitOverrides,
    created_at: partner.createdAt,
    updated_at: partner.updatedAt
  }
}
