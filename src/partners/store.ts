// Partners in control.db (docs/data-files.md). The CLI writes here; the service reads, and notices
// partner changes through partner_changes, which only writes to the partners table move.
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import Database from 'better-sqlite3'
import {
  DEFAULT_CATEGORIES, DEFAULT_MAX_RESULTS, DEFAULT_RADIUS_CAP_KM, MAX_LIMIT, TIER_LIMITS, WINDOWS,
  type Limits, type WindowName
} from './tiers.ts'
import { openReadOnly } from '../setup/read-only-db.ts'
import { newToken, tokenDigest } from './tokens.ts'
import { PartnerRowSchema, boundsProblem, partnerLabel, rowProblem, type PartnerRow } from './row-schema.ts'

export type { PartnerRow }
export const controlPath = (dataDir: string) => join(dataDir, 'control.db')

/** A limit override: a number, 'unlimited', or null for the tier's limit. */
export type LimitOverride = number | 'unlimited' | null

export type NewPartner = { name: string } & Partial<Pick<Partner, 'slug' | 'tier' | 'environment' | 'status'>>

export type PartnerChanges = Partial<Pick<Partner, 'name' | 'tier' | 'environment' | 'status' | 'categories' |
  'otherCategories' | 'siteById' | 'radiusCapKm' | 'maxResults'>> &
  { limitOverrides?: Partial<Record<WindowName, LimitOverride>> }

export class PartnerStoreError extends Error {
  override name = 'PartnerStoreError'
  constructor (readonly reason: 'not_found' | 'conflict' | 'invalid', message: string) {
    super(message)
  }
}

export const notFound = (slug: string) => new PartnerStoreError('not_found', `no partner with slug '${slug}'`)
export const slugTaken = (slug: string) =>
  new PartnerStoreError('conflict', `a partner with slug '${slug}' exists already`)

// partner_changes: each partner id's newest change, numbered in commit order (AUTOINCREMENT never
// reuses a number), kept by triggers: every writer of the partners table moves it (this CLI, an older
// one, a sqlite3 shell) and nothing else does, so heartbeats and counter saves cost no partner reload.
const noteChanges = (ids: string) => `
  INSERT INTO partner_changes (partner_id) VALUES ${ids.split(', ').map((id) => `(${id})`).join(', ')};
  DELETE FROM partner_changes WHERE partner_id IN (${ids}) AND seq <
    (SELECT max(seq) FROM partner_changes AS newer WHERE newer.partner_id = partner_changes.partner_id);`

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
CREATE TABLE IF NOT EXISTS partner_changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, partner_id TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS partner_changes_by_partner ON partner_changes (partner_id);
CREATE TRIGGER IF NOT EXISTS partner_inserted AFTER INSERT ON partners BEGIN${noteChanges('NEW.id')}
END;
CREATE TRIGGER IF NOT EXISTS partner_updated AFTER UPDATE ON partners BEGIN${noteChanges('OLD.id, NEW.id')}
END;
CREATE TRIGGER IF NOT EXISTS partner_deleted AFTER DELETE ON partners BEGIN${noteChanges('OLD.id')}
END;
`
const COLUMNS = Object.keys(PartnerRowSchema.properties)
/** A checked row has control.db's columns and no other. */
const INSERT_ROW = `INSERT INTO partners (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map((k) => '@' + k).join(', ')})`

const overrideFromColumn = (value: string | null): LimitOverride =>
  value === null ? null : value === 'unlimited' ? 'unlimited' : Number(value)
export const overrideToColumn = (value: LimitOverride): string | null => value === null ? null : String(value)

/** A partner as the service and the CLI use it. */
export type Partner = ReturnType<typeof fromRow>

export function fromRow (row: PartnerRow) {
  const { id, slug, name, status, tier, environment } = row
  return {
    id, slug, name, status, tier, environment,
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

const slugFromName = (name: string) => name.toLowerCase().normalize('NFKD').replace(/[^a-z0-9]+/g, '-')
  .replace(/^-+|-+$/g, '').slice(0, 64).replace(/-+$/, '')

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
    other_categories: 0, site_by_id: 0,
    radius_cap_km: DEFAULT_RADIUS_CAP_KM,
    max_results: DEFAULT_MAX_RESULTS,
    limit_minute: null, limit_hour: null, limit_day: null,
    token_sha256: tokenDigest(token),
    created_at: now, updated_at: now
  }
  return { row, token }
}

const bit = (on: boolean | undefined) => on === undefined ? undefined : on ? 1 : 0

/**
 * The columns a change writes, with updated_at: only those it names, so that two changes of
 * different fields made at once both take effect.
 */
export function changedColumns (changes: PartnerChanges): Partial<PartnerRow> {
  const limits = Object.entries(changes.limitOverrides ?? {}).map(([window, value]) => {
    if (typeof value === 'number' && !(Number.isInteger(value) && value >= 1 && value <= MAX_LIMIT)) {
      throw new PartnerStoreError('invalid',
        `the ${window} limit must be a whole number from 1 to ${MAX_LIMIT} or unlimited`)
    }
    return [`limit_${window}`, overrideToColumn(value)]
  })
  const named = Object.entries({
    name: changes.name,
    status: changes.status,
    tier: changes.tier,
    environment: changes.environment,
    categories: changes.categories && [...new Set(changes.categories)].sort((a, b) => a - b).join(','),
    other_categories: bit(changes.otherCategories),
    site_by_id: bit(changes.siteById),
    radius_cap_km: changes.radiusCapKm,
    max_results: changes.maxResults
  }).filter(([, value]) => value !== undefined)
  return { ...Object.fromEntries([...named, ...limits]), updated_at: new Date().toISOString() }
}

/** A row from an export file or Redis, checked by its schema, and with `bounds` by a new partner's bounds. */
export function checkedRow (value: unknown, index?: number, bounds = false): PartnerRow {
  const problem = rowProblem(value) ?? (bounds ? boundsProblem(value as PartnerRow) : undefined)
  if (problem !== undefined) throw new PartnerStoreError('invalid', `${partnerLabel(value, index)}: ${problem}`)
  return value as PartnerRow
}

/**
 * An import refused because two partners would share an id (which keys a rate-limit log) or a token
 * digest; `where` the other is kept, when not in the file.
 */
export const clashMessage = (key: 'id' | 'token_sha256', slug: string, other: string, where?: string) =>
  `partner ${JSON.stringify(slug)}: its ${key} is also partner ${JSON.stringify(other)}'s${where ? `, ${where}` : ''}`

/** The refusal of a file in which two partners share a slug, an id or a token digest. */
export function clashInFile (rows: PartnerRow[]): string | undefined {
  for (const key of ['slug', 'id', 'token_sha256'] as const) {
    const seen = new Map<string, string>()
    for (const row of rows) {
      const other = seen.get(row[key])
      if (other === undefined) seen.set(row[key], row.slug)
      else if (key === 'slug') return `partner ${JSON.stringify(row.slug)} is in the file twice`
      else return clashMessage(key, row.slug, other)
    }
  }
  return undefined
}

/** The rows of an import, each checked with a new partner's bounds, no two sharing a slug, id or digest. */
export function importedRows (rows: PartnerRow[]): PartnerRow[] {
  rows.forEach((row, index) => checkedRow(row, index, true))
  const clash = clashInFile(rows)
  if (clash !== undefined) throw new PartnerStoreError('conflict', clash)
  return rows
}

export class PartnerStore {
  readonly db: Database.Database

  /**
   * busyTimeoutMs: how long a statement waits for another connection's lock. The service passes a
   * short one: better-sqlite3 is synchronous, and a long wait would stall every request. `readonly`:
   * nothing written and no file made, so that an operator who may only read DATA_DIR can look.
   */
  constructor (path: string, { readonly = false, busyTimeoutMs = 5000 } = {}) {
    const missing = readonly && !existsSync(path) // no file: no partner, in an empty database in memory
    if (!readonly) mkdirSync(dirname(path), { recursive: true })
    let db = readonly ? undefined : new Database(path)
    try {
      // a file that is not a database fails here, or at the first pragma
      db ??= missing ? new Database(':memory:') : openReadOnly(path)
      db.pragma(`busy_timeout = ${busyTimeoutMs}`)
      if (!readonly) db.pragma('journal_mode = WAL')
      if (!readonly || missing) db.exec(SCHEMA)
      this.db = db
    } catch (err) {
      db?.close()
      // SQLite's own words ("file is not a database") do not say which file
      throw new Error(`${path} cannot be used: ${(err as Error).message}`, { cause: err })
    }
  }

  /** The newest partner change's number: moved by every write to the partners table, and by nothing else. */
  changeMark (): number {
    return this.db.prepare('SELECT coalesce(max(seq), 0) FROM partner_changes').pluck().get() as number
  }

  /** Every partner, and the change mark they are as of (one read transaction). */
  snapshot (): { mark: number, rows: PartnerRow[] } {
    return this.db.transaction(() => ({ mark: this.changeMark(), rows: this.exportRows() }))()
  }

  /** The partners changed since change `mark`, by id, each with its row now (undefined: gone), and the mark now. */
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

  /** Every partner as stored (token digests included, never tokens), by slug. */
  exportRows (): PartnerRow[] {
    return this.db.prepare('SELECT * FROM partners ORDER BY slug').all() as PartnerRow[]
  }

  list (): Partner[] {
    return this.exportRows().map(fromRow)
  }

  get (slug: string): Partner {
    const row = this.db.prepare('SELECT * FROM partners WHERE slug = ?').get(slug) as PartnerRow | undefined
    if (!row) throw notFound(slug)
    return fromRow(row)
  }

  /**
   * `partners import`: adds or replaces partners by slug, all or none; refused when two partners
   * would then share an id or a digest (a file may swap two replaced partners' digests).
   */
  importRows (rows: PartnerRow[]): { created: number, replaced: number } {
    const checked = importedRows(rows)
    const slugs = new Set(checked.map((row) => row.slug))
    const ownerBy = (key: string) => this.db.prepare(`SELECT slug FROM partners WHERE ${key} = ?`).pluck()
    const owners = { id: ownerBy('id'), token_sha256: ownerBy('token_sha256') }
    return this.db.transaction(() => {
      for (const row of checked) {
        for (const key of ['id', 'token_sha256'] as const) {
          const owner = owners[key].get(row[key]) as string | undefined
          if (owner !== undefined && !slugs.has(owner)) {
            throw new PartnerStoreError('conflict', clashMessage(key, row.slug, owner, 'in control.db'))
          }
        }
      }
      const remove = this.db.prepare('DELETE FROM partners WHERE slug = ?')
      const replaced = checked.filter((row) => remove.run(row.slug).changes > 0).length
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
      if ((err as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') throw slugTaken(row.slug)
      throw err
    }
    return { partner: fromRow(row), token }
  }

  /** Writes only the columns given (one statement), and returns the partner as it then is. */
  private patch (slug: string, columns: Partial<PartnerRow>): Partner {
    const set = Object.keys(columns).map((c) => `${c} = @${c}`).join(', ')
    const row = this.db.prepare(`UPDATE partners SET ${set} WHERE slug = @slug RETURNING *`)
      .get({ ...columns, slug }) as PartnerRow | undefined
    if (!row) throw notFound(slug)
    return fromRow(row)
  }

  update (slug: string, changes: PartnerChanges): Partner {
    return this.patch(slug, changedColumns(changes))
  }

  rotate (slug: string): { partner: Partner, token: string } {
    const token = newToken()
    const partner = this.patch(slug, { token_sha256: tokenDigest(token), updated_at: new Date().toISOString() })
    return { partner, token }
  }

  close () {
    this.db.close()
  }
}

/** The partner as `show`/`list --json` print it: every field of the partner, never a token or digest. */
export function partnerView (partner: Partner) {
  const { id, slug, name, status, tier, environment, categories } = partner
  const limits = effectiveLimits(partner)
  const shown = (l: number | null) => l === null ? 'unlimited' as const : l
  return {
    id, slug, name, status, tier, environment, categories,
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
