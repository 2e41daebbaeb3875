// Partners as the service holds them: a table from token digest to partner profile, rebuilt when
// control.db (or Redis, with STATE_URL) changes, so CLI changes apply without a restart.
import { profileOf, type PartnerProfile } from './permissions.ts'
import { fromRow, type Partner, type PartnerRow, type PartnerStore } from './store.ts'
import type { RedisPartnerStore } from './redis-store.ts'
import { tokenDigest } from './tokens.ts'

export class PartnerDirectory {
  private byDigest = new Map<string, PartnerProfile>()
  private seenVersion = -1
  /** Rows as last read from Redis, to put back if Redis loses them. */
  private sharedRows: PartnerRow[] = []
  /** Redis's partners epoch as last read: another one means Redis lost its data meanwhile. */
  private epoch: string | undefined

  /**
   * `store` is control.db (also used for the instance rows and counters); `shared`, when
   * STATE_URL is set, is where the partners are read from instead.
   */
  constructor (readonly store: PartnerStore, readonly shared?: RedisPartnerStore) {
    if (!shared) this.refresh()
  }

  private load (entries: { partner: Partner, digest: string }[], version: number) {
    const next = new Map<string, PartnerProfile>()
    for (const { partner, digest } of entries) next.set(digest, profileOf(partner))
    this.byDigest = next
    this.seenVersion = version
  }

  /**
   * Rebuilds the table if control.db changed since the last look (`force`: also after a write on
   * this connection, which data_version does not count); true when it did.
   */
  refresh (force = false): boolean {
    const version = this.store.dataVersion()
    if (version === this.seenVersion && !force) return false
    this.load(this.store.listWithDigests(), version)
    return true
  }

  /**
   * The same from Redis: the version first, the table only when it moved. A new epoch is a Redis
   * that lost its data (restarted without persistence): the partners it lacks are put back from
   * this copy, whatever was written there since (an operator's change is newer and stays), instead
   * of every token but those being refused.
   */
  async refreshShared (): Promise<'same' | 'changed' | 'restored'> {
    const shared = this.shared!
    let { version, epoch } = await shared.state()
    let restored = false
    if (this.epoch !== undefined && epoch !== this.epoch && this.sharedRows.length > 0) {
      restored = await shared.mergeRows(this.sharedRows) > 0
      version = (await shared.state()).version
    }
    this.epoch = epoch
    if (!restored && version === this.seenVersion) return 'same'
    const rows = await shared.exportRows()
    this.sharedRows = rows
    this.load(rows.map((row) => ({ partner: fromRow(row), digest: row.token_sha256 })), version)
    return restored ? 'restored' : 'changed'
  }

  /** Found by the SHA-256 of the token: no comparison ever runs over the token itself. */
  byToken (token: string): PartnerProfile | undefined {
    return this.byDigest.get(tokenDigest(token))
  }

  get size (): number {
    return this.byDigest.size
  }
}
