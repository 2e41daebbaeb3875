// Partners in Redis (STATE_URL): the same rows as control.db, so that every instance on every
// machine sees a change made once. `lsp:partners` maps slug to the row (JSON), `lsp:partner-digests`
// maps token digest to slug (the index a token is found by), `lsp:partners:version` counts changes,
// `lsp:partners:changes` lists the latest changes (each version with the slugs it wrote, newest
// first) so that an instance reads again only those partners, and `lsp:partners:epoch` (random, set
// by the first write or read of a store) changes only when Redis lost its data. Writes check and
// apply in one Lua script each: two operators cannot break the index, and a change writes only the
// fields it names.
import type { Redis } from 'ioredis'
import { randomUUID } from 'node:crypto'
import {
  PartnerStoreError, changedColumns, checkedRow, clashMessage, fromRow, importedRows, newPartnerRow,
  type NewPartner, type Partner, type PartnerChanges, type PartnerRow, type UniqueColumn
} from './store.ts'
import { newToken, tokenDigest } from './tokens.ts'
import { scriptDeadline, tooLate, type ScriptDeadline } from '../shared-state/script-deadline.ts'

const LATE_MESSAGE = 'Redis reached the write after its deadline (it was slow) and refused it: nothing was written'
const digestTaken = (slug: string) =>
  new PartnerStoreError('conflict', `partner '${slug}': its token digest belongs to another partner`)

// Every write script starts with tooLate(): ARGV[1] is its deadline (Redis's clock, ms; -1: any
// time), past which it writes nothing. A CLI command that timed out has exited 1 and printed no
// token: a rotation Redis ran later would leave the partner with no working token.
const LATE = tooLate('ARGV[1]', "'late'")

/** Changes kept in the list: an instance further behind reads every partner again. */
export const CHANGES_KEPT = 1000
// Moves the version and notes under it the slugs written (`slugs`: a Lua list), for the instances
// to read those partners alone. KEYS[3]: version, KEYS[5]: the changes list.
const noteChange = (slugs: string) => `
local version = redis.call('INCR', KEYS[3])
local entry = { version }
for _, slug in ipairs(${slugs}) do table.insert(entry, slug) end
redis.call('LPUSH', KEYS[5], cjson.encode(entry))
redis.call('LTRIM', KEYS[5], 0, ${CHANGES_KEPT - 1})`

// KEYS: partners, digests, version, epoch, changes. ARGV: deadline, slug, row JSON, digest, a fresh
// epoch. A new partner: 'conflict' if the slug exists, 'digest' if another partner has the digest.
const CREATE = `${LATE}
if redis.call('HEXISTS', KEYS[1], ARGV[2]) == 1 then return 'conflict' end
if redis.call('HEXISTS', KEYS[2], ARGV[4]) == 1 then return 'digest' end
redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
redis.call('HSET', KEYS[2], ARGV[4], ARGV[2])
${noteChange('{ ARGV[2] }')}
redis.call('SET', KEYS[4], ARGV[5], 'NX')
return 'ok'
`

// KEYS: partners, digests, version, epoch, changes. ARGV: deadline, slug, fields JSON (column →
// value), new digest ('' to keep it), a fresh epoch. The stored row with those fields changed;
// 'not_found' or 'digest'.
const PATCH = `${LATE}
local json = redis.call('HGET', KEYS[1], ARGV[2])
if not json then return 'not_found' end
local row = cjson.decode(json)
for column, value in pairs(cjson.decode(ARGV[3])) do row[column] = value end
if ARGV[4] ~= '' then
  local owner = redis.call('HGET', KEYS[2], ARGV[4])
  if owner and owner ~= ARGV[2] then return 'digest' end
  redis.call('HDEL', KEYS[2], row['token_sha256'])
  redis.call('HSET', KEYS[2], ARGV[4], ARGV[2])
  row['token_sha256'] = ARGV[4]
end
json = cjson.encode(row)
redis.call('HSET', KEYS[1], ARGV[2], json)
${noteChange('{ ARGV[2] }')}
redis.call('SET', KEYS[4], ARGV[5], 'NX')
return json
`

// KEYS: partners, digests, version, epoch, changes. ARGV: deadline, a fresh epoch, then slug, id,
// digest and row JSON of each entry (no two sharing any of the first three: importedRows). Adds or
// replaces partners by slug, all or none: every entry is checked first against the partners Redis
// keeps (those no entry replaces), as control.db's importRows does in its one transaction. Two
// partners with one id would share a rate-limit log; with one digest, a token. Returns { 'ok',
// created, replaced }, or the clash: { key, entry's slug, the stored partner's slug }; 'late'.
const IMPORT = `${tooLate('ARGV[1]', "{ 'late' }")}
local slugs = {}
for i = 3, #ARGV, 4 do slugs[ARGV[i]] = true end
local kept, old = {}, {}
local stored = redis.call('HGETALL', KEYS[1])
for i = 1, #stored, 2 do
  local row = cjson.decode(stored[i + 1])
  if slugs[stored[i]] then old[stored[i]] = row['token_sha256'] else kept[row['id']] = stored[i] end
end
for i = 3, #ARGV, 4 do
  if kept[ARGV[i + 1]] then return { 'id', ARGV[i], kept[ARGV[i + 1]] } end
  local owner = redis.call('HGET', KEYS[2], ARGV[i + 2])
  if owner and not slugs[owner] then return { 'token_sha256', ARGV[i], owner } end
end
if #ARGV == 2 then return { 'ok', 0, 0 } end
-- the replaced rows' digests out first: one may be another entry's new digest
for _, digest in pairs(old) do redis.call('HDEL', KEYS[2], digest) end
local created, written = 0, {}
for i = 3, #ARGV, 4 do
  if not old[ARGV[i]] then created = created + 1 end
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 3])
  redis.call('HSET', KEYS[2], ARGV[i + 2], ARGV[i])
  table.insert(written, ARGV[i])
end
${noteChange('written')}
redis.call('SET', KEYS[4], ARGV[2], 'NX')
return { 'ok', created, (#ARGV - 2) / 4 - created }
`

// KEYS: partners, digests, version, epoch, changes. ARGV: deadline, then slug, row JSON, digest, for
// each row. Puts back the rows whose slug and digest are both missing (a row written since the loss
// is newer, and stays), all in one step: an instance reading meanwhile sees none or all of them.
// The count written; -1: too late.
const MERGE = `${tooLate('ARGV[1]', '-1')}
local written = {}
for i = 2, #ARGV, 3 do
  if redis.call('HEXISTS', KEYS[1], ARGV[i]) == 0 and redis.call('HEXISTS', KEYS[2], ARGV[i + 2]) == 0 then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
    redis.call('HSET', KEYS[2], ARGV[i + 2], ARGV[i])
    table.insert(written, ARGV[i])
  end
end
if #written > 0 then${noteChange('written')}
end
return #written
`

// KEYS: version, epoch. ARGV: a fresh epoch, set if the store has none. The version and the epoch.
const STATE = `
redis.call('SET', KEYS[2], ARGV[1], 'NX')
return { redis.call('GET', KEYS[1]) or '0', redis.call('GET', KEYS[2]) }
`

// KEYS: version, changes. ARGV: a version seen before. The version now, and the entries of the
// changes list after the one seen, newest first (as many as the versions between, if all are there).
const CHANGES = `
local version = tonumber(redis.call('GET', KEYS[1]) or '0')
local since = tonumber(ARGV[1])
if version <= since then return { version, {} } end
return { version, redis.call('LRANGE', KEYS[2], 0, version - since - 1) }
`

/** Partners written since a version, by slug: each one's row now, or undefined when it is gone. */
interface SharedChanges { version: number, rows: Map<string, PartnerRow | undefined> }

export class RedisPartnerStore {
  private readonly keys: { partners: string, digests: string, version: string, epoch: string, changes: string }
  private readonly scripts: {
    lspCreatePartner (...args: (string | number)[]): Promise<string>
    lspPatchPartner (...args: (string | number)[]): Promise<string>
    lspImportPartners (...args: (string | number)[]): Promise<[string, number | string, number | string]>
    lspMergePartners (...args: (string | number)[]): Promise<number>
    lspPartnersState (...args: string[]): Promise<[string, string]>
    lspPartnerChanges (...args: (string | number)[]): Promise<[number, string[]]>
  }

  /** the connection's script deadlines, shared with the limiter's store on it (its heartbeat measures the clock) */
  private readonly deadlines: ScriptDeadline

  constructor (private readonly redis: Redis, prefix = 'lsp:') {
    this.deadlines = scriptDeadline(redis)
    this.keys = {
      partners: `${prefix}partners`,
      digests: `${prefix}partner-digests`,
      version: `${prefix}partners:version`,
      epoch: `${prefix}partners:epoch`,
      changes: `${prefix}partners:changes`
    }
    redis.defineCommand('lspCreatePartner', { numberOfKeys: 5, lua: CREATE })
    redis.defineCommand('lspPatchPartner', { numberOfKeys: 5, lua: PATCH })
    redis.defineCommand('lspImportPartners', { numberOfKeys: 5, lua: IMPORT })
    redis.defineCommand('lspMergePartners', { numberOfKeys: 5, lua: MERGE })
    redis.defineCommand('lspPartnersState', { numberOfKeys: 2, lua: STATE })
    redis.defineCommand('lspPartnerChanges', { numberOfKeys: 2, lua: CHANGES })
    this.scripts = redis as unknown as RedisPartnerStore['scripts']
  }

  private get allKeys () {
    return [this.keys.partners, this.keys.digests, this.keys.version, this.keys.epoch, this.keys.changes]
  }

  private async row (slug: string): Promise<PartnerRow> {
    const json = await this.redis.hget(this.keys.partners, slug)
    if (json === null) throw new PartnerStoreError('not_found', `no partner with slug '${slug}'`)
    return JSON.parse(json) as PartnerRow
  }

  /** Changes whenever a partner is written. */
  async version (): Promise<number> {
    return Number(await this.redis.get(this.keys.version) ?? 0)
  }

  /** The version, and the epoch: the same until Redis loses its data (a store without one gets one). */
  async state (): Promise<{ version: number, epoch: string }> {
    const [version, epoch] = await this.scripts.lspPartnersState(this.keys.version, this.keys.epoch, randomUUID())
    return { version: Number(version), epoch }
  }

  /**
   * The partners written since `version`, by slug, each with its row now (undefined: gone), and
   * the version they are as of; undefined when the changes list cannot say (a version without its
   * entry was written by a writer that notes none, an older CLI; or the list no longer reaches
   * back that far): then every partner must be read again.
   */
  async changesSince (version: number): Promise<SharedChanges | undefined> {
    const [now, entries] = await this.scripts.lspPartnerChanges(this.keys.version, this.keys.changes, version)
    if (now < version || entries.length !== now - version) return undefined
    const slugs = new Set<string>()
    for (const [i, entry] of entries.entries()) {
      const [written, ...changed] = JSON.parse(entry) as [number, ...string[]]
      if (written !== now - i) return undefined
      for (const slug of changed) slugs.add(slug)
    }
    const rows = new Map<string, PartnerRow | undefined>()
    if (slugs.size === 0) return { version: now, rows }
    const list = [...slugs]
    const jsons = await this.redis.hmget(this.keys.partners, ...list)
    for (const [i, slug] of list.entries()) {
      rows.set(slug, jsons[i] === null ? undefined : JSON.parse(jsons[i]!) as PartnerRow)
    }
    return { version: now, rows }
  }

  /** Changes fields of the stored row in one script; a new token digest moves the index with it. */
  private async patch (slug: string, fields: Partial<PartnerRow>, digest = ''): Promise<PartnerRow> {
    const deadline = await this.deadlines.measured()
    const result = await this.scripts.lspPatchPartner(
      ...this.allKeys, deadline, slug, JSON.stringify(fields), digest, randomUUID())
    if (result === 'late') throw new Error(LATE_MESSAGE)
    if (result === 'not_found') throw new PartnerStoreError('not_found', `no partner with slug '${slug}'`)
    if (result === 'digest') throw digestTaken(slug)
    return JSON.parse(result) as PartnerRow
  }

  async exportRows (): Promise<PartnerRow[]> {
    const all = await this.redis.hgetall(this.keys.partners)
    const rows = Object.values(all).map((json) => JSON.parse(json) as PartnerRow)
    return rows.sort((a, b) => (a.slug < b.slug ? -1 : 1))
  }

  async list (): Promise<Partner[]> {
    return (await this.exportRows()).map(fromRow)
  }

  async get (slug: string): Promise<Partner> {
    return fromRow(await this.row(slug))
  }

  async create (input: NewPartner): Promise<{ partner: Partner, token: string }> {
    const { row, token } = newPartnerRow(input)
    const deadline = await this.deadlines.measured()
    const result = await this.scripts.lspCreatePartner(
      ...this.allKeys, deadline, row.slug, JSON.stringify(row), row.token_sha256, randomUUID())
    if (result === 'late') throw new Error(LATE_MESSAGE)
    if (result === 'conflict') {
      throw new PartnerStoreError('conflict', `a partner with slug '${row.slug}' exists already`)
    }
    if (result === 'digest') throw digestTaken(row.slug)
    return { partner: fromRow(row), token }
  }

  async update (slug: string, changes: PartnerChanges): Promise<Partner> {
    return fromRow(await this.patch(slug, changedColumns(changes)))
  }

  async rotate (slug: string): Promise<{ partner: Partner, token: string }> {
    const token = newToken()
    const row = await this.patch(slug, { updated_at: new Date().toISOString() }, tokenDigest(token))
    return { partner: fromRow(row), token }
  }

  /**
   * Puts back, in one step, the rows of a store that lost its data whose slug and digest are both
   * missing (a partner written since the loss is newer and stays); the number written.
   */
  async mergeRows (rows: PartnerRow[]): Promise<number> {
    const args: string[] = []
    for (const row of rows.map(checkedRow)) args.push(row.slug, JSON.stringify(row), row.token_sha256)
    const written = await this.scripts.lspMergePartners(...this.allKeys, await this.deadlines.measured(), ...args)
    if (written === -1) throw new Error(LATE_MESSAGE)
    return written
  }

  /**
   * Adds or replaces partners by slug, digests and all, in one script: all or none, refused when
   * two partners would then share a slug, an id or a token digest (for `partners import`).
   */
  async importRows (rows: PartnerRow[]): Promise<{ created: number, replaced: number }> {
    const args: string[] = []
    for (const row of importedRows(rows)) args.push(row.slug, row.id, row.token_sha256, JSON.stringify(row))
    const deadline = await this.deadlines.measured()
    const [result, a, b] = await this.scripts.lspImportPartners(...this.allKeys, deadline, randomUUID(), ...args)
    if (result === 'ok') return { created: Number(a), replaced: Number(b) }
    if (result === 'late') throw new Error(LATE_MESSAGE)
    throw new PartnerStoreError('conflict',
      clashMessage(result as UniqueColumn, String(a), String(b), 'in the shared state'))
  }

  close () {
    this.redis.disconnect()
  }
}
