// Partners in Redis (STATE_URL): control.db's rows, so that every instance on every machine sees a
// change made once. Each write checks and applies in one Lua script: two operators cannot break the
// index, and a change writes only the fields it names.
import type { Redis } from 'ioredis'
import { randomUUID } from 'node:crypto'
import {
  PartnerStoreError, changedColumns, checkedRow, clashMessage, fromRow, importedRows, newPartnerRow, notFound,
  slugTaken, type NewPartner, type Partner, type PartnerChanges, type PartnerRow
} from './store.ts'
import { newToken, tokenDigest } from './tokens.ts'
import { scriptDeadline, tooLate, type ScriptDeadline } from '../shared-state/script-deadline.ts'

/** Changes kept in the list: an instance further behind reads every partner again. */
export const CHANGES_KEPT = 1000

// Every script's KEYS: slug → row JSON; token digest → slug; a count of writes; the latest writes
// (each version with the slugs it wrote, newest first), for an instance to read only those again;
// the epoch (random, set by the first instance's look), which changes only when Redis lost its data.
const KEYS = ['partners', 'partner-digests', 'partners:version', 'partners:epoch', 'partners:changes']

// Every write script starts with tooLate() (ARGV[1]: its deadline): a CLI command that timed out
// has printed no token, and a rotation Redis ran later would leave the partner none that works.
const LATE = tooLate('ARGV[1]', "'late'")

// Moves the version and notes under it the slugs written (`slugs`: a Lua list).
const noteChange = (slugs: string) => `
local version = redis.call('INCR', KEYS[3])
local entry = { version }
for _, slug in ipairs(${slugs}) do table.insert(entry, slug) end
redis.call('LPUSH', KEYS[5], cjson.encode(entry))
redis.call('LTRIM', KEYS[5], 0, ${CHANGES_KEPT - 1})`

const SCRIPTS = {
  // ARGV: deadline, slug, fields JSON (column → value; a token_sha256 moves the index). The stored
  // row with those fields changed; 'not_found' or 'digest'.
  lspPatchPartner: `${LATE}
local json = redis.call('HGET', KEYS[1], ARGV[2])
if not json then return 'not_found' end
local row, fields = cjson.decode(json), cjson.decode(ARGV[3])
local digest = fields['token_sha256']
if digest then
  local owner = redis.call('HGET', KEYS[2], digest)
  if owner and owner ~= ARGV[2] then return 'digest' end
  redis.call('HDEL', KEYS[2], row['token_sha256'])
  redis.call('HSET', KEYS[2], digest, ARGV[2])
end
for column, value in pairs(fields) do row[column] = value end
json = cjson.encode(row)
redis.call('HSET', KEYS[1], ARGV[2], json)
${noteChange('{ ARGV[2] }')}
return json`,

  // ARGV: deadline, then slug, id, digest and row JSON of each entry. Adds or replaces partners by
  // slug, all or none, each entry checked first against the partners no entry replaces.
  // { 'ok', created, replaced }, or the clash: { key, entry's slug, the stored partner's slug }.
  lspImportPartners: `${LATE}
local slugs = {}
for i = 2, #ARGV, 4 do slugs[ARGV[i]] = true end
local kept, old = {}, {}
local stored = redis.call('HGETALL', KEYS[1])
for i = 1, #stored, 2 do
  local row = cjson.decode(stored[i + 1])
  if slugs[stored[i]] then old[stored[i]] = row['token_sha256'] else kept[row['id']] = stored[i] end
end
for i = 2, #ARGV, 4 do
  if kept[ARGV[i + 1]] then return { 'id', ARGV[i], kept[ARGV[i + 1]] } end
  local owner = redis.call('HGET', KEYS[2], ARGV[i + 2])
  if owner and not slugs[owner] then return { 'token_sha256', ARGV[i], owner } end
end
if #ARGV == 1 then return { 'ok', 0, 0 } end
-- the replaced rows' digests out first: one may be another entry's new digest
for _, digest in pairs(old) do redis.call('HDEL', KEYS[2], digest) end
local created, written = 0, {}
for i = 2, #ARGV, 4 do
  if not old[ARGV[i]] then created = created + 1 end
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 3])
  redis.call('HSET', KEYS[2], ARGV[i + 2], ARGV[i])
  table.insert(written, ARGV[i])
end
${noteChange('written')}
return { 'ok', created, (#ARGV - 1) / 4 - created }`,

  // ARGV: deadline, then slug, row JSON and digest of each row. Adds, in one step, the rows whose slug
  // and digest are both free (put back after a loss: a row written since is newer). The count written.
  lspAddPartners: `${LATE}
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
return #written`,

  // ARGV: a fresh epoch, set if the store has none. The version and the epoch.
  lspPartnersState: `
redis.call('SET', KEYS[4], ARGV[1], 'NX')
return { redis.call('GET', KEYS[3]) or '0', redis.call('GET', KEYS[4]) }`,

  // ARGV: a version seen before. The version now, and the changes list's entries after it.
  lspPartnerChanges: `
local version = tonumber(redis.call('GET', KEYS[3]) or '0')
local since = tonumber(ARGV[1])
if version <= since then return { version, {} } end
return { version, redis.call('LRANGE', KEYS[5], 0, version - since - 1) }`
}

export class RedisPartnerStore {
  private readonly keys: string[]
  private readonly rowsKey: string
  /** shared with the limiter's store on the connection, whose heartbeat measures Redis's clock */
  private readonly deadlines: ScriptDeadline

  constructor (private readonly redis: Redis, prefix = 'lsp:') {
    this.deadlines = scriptDeadline(redis)
    this.keys = KEYS.map((key) => prefix + key)
    this.rowsKey = this.keys[0]
    for (const [name, lua] of Object.entries(SCRIPTS)) redis.defineCommand(name, { numberOfKeys: KEYS.length, lua })
  }

  private run<T> (script: keyof typeof SCRIPTS, ...args: (string | number)[]): Promise<T> {
    const commands = this.redis as unknown as Record<typeof script, (...args: (string | number)[]) => Promise<T>>
    return commands[script](...this.keys, ...args)
  }

  /** A write script, with its deadline. */
  private async write<T> (script: keyof typeof SCRIPTS, ...args: (string | number)[]): Promise<T> {
    const result = await this.run<T | 'late'>(script, await this.deadlines.measured(), ...args)
    if (result === 'late') {
      throw new Error('Redis reached the write after its deadline (it was slow) and refused it: nothing was written')
    }
    return result as T
  }

  /** The version, and the epoch: the same until Redis loses its data (a store without one gets one). */
  async state (): Promise<{ version: number, epoch: string }> {
    const [version, epoch] = await this.run<[string, string]>('lspPartnersState', randomUUID())
    return { version: Number(version), epoch }
  }

  /**
   * The partners written since `version`, by slug, each with its row now (undefined: gone), and the
   * version they are as of; undefined when the list cannot say (an older CLI wrote without noting it,
   * or the list no longer reaches back that far): then every partner must be read again.
   */
  async changesSince (version: number): Promise<{ version: number, rows: Map<string, PartnerRow | undefined> }
    | undefined> {
    const [now, entries] = await this.run<[number, string[]]>('lspPartnerChanges', version)
    if (entries.length !== now - version) return undefined
    const slugs = new Set<string>()
    for (const [i, entry] of entries.entries()) {
      const [written, ...changed] = JSON.parse(entry) as [number, ...string[]]
      if (written !== now - i) return undefined
      for (const slug of changed) slugs.add(slug)
    }
    const list = [...slugs]
    const jsons = list.length === 0 ? [] : await this.redis.hmget(this.rowsKey, ...list)
    const rows = new Map(list.map((slug, i) => [slug, jsons[i] === null ? undefined : JSON.parse(jsons[i]!)]))
    return { version: now, rows }
  }

  async exportRows (): Promise<PartnerRow[]> {
    const rows = Object.values(await this.redis.hgetall(this.rowsKey)).map((json) => JSON.parse(json) as PartnerRow)
    return rows.sort((a, b) => (a.slug < b.slug ? -1 : 1))
  }

  async list (): Promise<Partner[]> {
    return (await this.exportRows()).map(fromRow)
  }

  async get (slug: string): Promise<Partner> {
    const json = await this.redis.hget(this.rowsKey, slug)
    if (json === null) throw notFound(slug)
    return fromRow(JSON.parse(json))
  }

  async create (input: NewPartner): Promise<{ partner: Partner, token: string }> {
    const { row, token } = newPartnerRow(input)
    if (await this.add([row]) === 0) throw slugTaken(row.slug) // or its digest, as control.db's UNIQUE says
    return { partner: fromRow(row), token }
  }

  /** Changes fields of the stored row in one script; a new token digest moves the index with it. */
  private async patch (slug: string, fields: Partial<PartnerRow>): Promise<Partner> {
    const result = await this.write<string>('lspPatchPartner', slug, JSON.stringify(fields))
    if (result === 'not_found') throw notFound(slug)
    if (result === 'digest') {
      throw new PartnerStoreError('conflict', `partner '${slug}': its token digest belongs to another partner`)
    }
    return fromRow(JSON.parse(result))
  }

  async update (slug: string, changes: PartnerChanges): Promise<Partner> {
    return await this.patch(slug, changedColumns(changes))
  }

  async rotate (slug: string): Promise<{ partner: Partner, token: string }> {
    const token = newToken()
    const partner = await this.patch(slug, { token_sha256: tokenDigest(token), updated_at: new Date().toISOString() })
    return { partner, token }
  }

  private async add (rows: PartnerRow[]): Promise<number> {
    const args = rows.flatMap((row) => [row.slug, JSON.stringify(row), row.token_sha256])
    return await this.write('lspAddPartners', ...args)
  }

  /** Puts back the rows of a store that lost its data, those whose slug and digest are free; the number written. */
  async mergeRows (rows: PartnerRow[]): Promise<number> {
    return await this.add(rows.map((row, i) => checkedRow(row, i)))
  }

  /** `partners import`: as PartnerStore.importRows, in one script. */
  async importRows (rows: PartnerRow[]): Promise<{ created: number, replaced: number }> {
    const args = importedRows(rows).flatMap((row) => [row.slug, row.id, row.token_sha256, JSON.stringify(row)])
    const [result, a, b] = await this.write<[string, number | string, number | string]>(
      'lspImportPartners', ...args)
    if (result === 'ok') return { created: Number(a), replaced: Number(b) }
    throw new PartnerStoreError('conflict',
      clashMessage(result as 'id' | 'token_sha256', String(a), String(b), 'in the shared state'))
  }

  close () {
    this.redis.disconnect()
  }
}
