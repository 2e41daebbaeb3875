// Partners in Redis (STATE_URL): the same rows as control.db, so that every instance on every
// machine sees a change made once. `lsp:partners` maps slug to the row (JSON), `lsp:partner-digests`
// maps token digest to slug (the index a token is found by), `lsp:partners:version` counts changes.
// Writes check and apply in one Lua script each, so two operators cannot break the index.
import type { Redis } from 'ioredis'
import {
  PartnerStoreError, changedRow, checkedRow, fromRow, newPartnerRow,
  type NewPartner, type Partner, type PartnerChanges, type PartnerRow
} from './store.ts'
import { newToken, tokenDigest } from './tokens.ts'

// KEYS: partners, digests, version. ARGV: slug, row JSON, new digest, old digest ('' if none),
// mode ('create': the slug must be new; 'replace': it must exist; 'upsert').
const PUT = `
local exists = redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1
if ARGV[5] == 'create' and exists then return 'conflict' end
if ARGV[5] == 'replace' and not exists then return 'not_found' end
local owner = redis.call('HGET', KEYS[2], ARGV[3])
if owner and owner ~= ARGV[1] then return 'digest' end
if ARGV[4] ~= '' and ARGV[4] ~= ARGV[3] then redis.call('HDEL', KEYS[2], ARGV[4]) end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[2], ARGV[3], ARGV[1])
redis.call('INCR', KEYS[3])
return 'ok'
`

// KEYS: partners, digests, version. ARGV: slug, row JSON, digest, for each row. Writes every row
// and moves the version once, and only into a store with no partner: an instance reading while
// another puts the partners back sees none or all of them, never a part (a part is tokens refused).
const RESTORE = `
if redis.call('HLEN', KEYS[1]) > 0 then return 0 end
for i = 1, #ARGV, 3 do
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  redis.call('HSET', KEYS[2], ARGV[i + 2], ARGV[i])
end
redis.call('INCR', KEYS[3])
return 1
`

export class RedisPartnerStore {
  private readonly keys: { partners: string, digests: string, version: string }

  constructor (private readonly redis: Redis, prefix = 'lsp:') {
    this.keys = { partners: `${prefix}partners`, digests: `${prefix}partner-digests`, version: `${prefix}partners:version` }
    redis.defineCommand('lspPutPartner', { numberOfKeys: 3, lua: PUT })
    redis.defineCommand('lspRestorePartners', { numberOfKeys: 3, lua: RESTORE })
  }

  private async put (row: PartnerRow, oldDigest: string, mode: 'create' | 'replace' | 'upsert') {
    const result = await (this.redis as unknown as { lspPutPartner (...args: string[]): Promise<string> })
      .lspPutPartner(this.keys.partners, this.keys.digests, this.keys.version, row.slug, JSON.stringify(row), row.token_sha256, oldDigest, mode)
    if (result === 'conflict') throw new PartnerStoreError('conflict', `a partner with slug '${row.slug}' exists already`)
    if (result === 'not_found') throw new PartnerStoreError('not_found', `no partner with slug '${row.slug}'`)
    if (result === 'digest') throw new PartnerStoreError('conflict', `partner '${row.slug}': its token digest belongs to another partner`)
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

  async exportRows (): Promise<PartnerRow[]> {
    const all = await this.redis.hgetall(this.keys.partners)
    return Object.values(all).map((json) => JSON.parse(json) as PartnerRow).sort((a, b) => (a.slug < b.slug ? -1 : 1))
  }

  async list (): Promise<Partner[]> {
    return (await this.exportRows()).map(fromRow)
  }

  async listWithDigests (): Promise<{ partner: Partner, digest: string }[]> {
    return (await this.exportRows()).map((row) => ({ partner: fromRow(row), digest: row.token_sha256 }))
  }

  async get (slug: string): Promise<Partner> {
    return fromRow(await this.row(slug))
  }

  async create (input: NewPartner): Promise<{ partner: Partner, token: string }> {
    const { row, token } = newPartnerRow(input)
    await this.put(row, '', 'create')
    return { partner: fromRow(row), token }
  }

  async update (slug: string, changes: PartnerChanges): Promise<Partner> {
    const current = await this.row(slug)
    const next = changedRow(current, changes)
    await this.put(next, current.token_sha256, 'replace')
    return fromRow(next)
  }

  async rotate (slug: string): Promise<{ partner: Partner, token: string }> {
    const current = await this.row(slug)
    const token = newToken()
    const next = { ...current, token_sha256: tokenDigest(token), updated_at: new Date().toISOString() }
    await this.put(next, current.token_sha256, 'replace')
    return { partner: fromRow(next), token }
  }

  /**
   * Puts these rows back into a store that lost every partner, all in one step; false (nothing
   * written) when the store has partners again, e.g. put back by another instance first.
   */
  async restoreRows (rows: PartnerRow[]): Promise<boolean> {
    const args: string[] = []
    for (const row of rows.map(checkedRow)) args.push(row.slug, JSON.stringify(row), row.token_sha256)
    const done = await (this.redis as unknown as { lspRestorePartners (...args: string[]): Promise<number> })
      .lspRestorePartners(this.keys.partners, this.keys.digests, this.keys.version, ...args)
    return done === 1
  }

  async importRows (rows: PartnerRow[]): Promise<{ created: number, replaced: number }> {
    let created = 0
    let replaced = 0
    const checked = rows.map(checkedRow)
    for (const row of checked) {
      const json = await this.redis.hget(this.keys.partners, row.slug)
      const old = json === null ? '' : (JSON.parse(json) as PartnerRow).token_sha256
      await this.put(row, old, 'upsert')
      if (json === null) created++
      else replaced++
    }
    return { created, replaced }
  }

  close () {
    this.redis.disconnect()
  }
}
