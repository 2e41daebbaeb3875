// Partners as the service holds them: a table from token digest to partner profile, kept up to date
// from control.db (or Redis, with STATE_URL) so that CLI changes apply without a restart. Each look
// reads a change mark that only partner writes move; when it moved, only the partners changed since
// are read again.
import { profileOf, type PartnerProfile } from './permissions.ts'
import { fromRow, type PartnerRow, type PartnerStore } from './store.ts'
import type { RedisPartnerStore } from './redis-store.ts'
import { tokenDigest } from './tokens.ts'

export class PartnerDirectory {
  private byDigest = new Map<string, PartnerProfile>()
  /**
   * Every partner's row as last read, by its key in the store (control.db: id; Redis: slug): a row's
   * digest is the entry to drop when it changes, and Redis's rows are put back if Redis loses them.
   */
  private rows = new Map<string, PartnerRow>()
  /** The change mark the table is as of; -1 before the first read. */
  private seenMark = -1
  /** Redis's partners epoch as last read: another one means Redis lost its data meanwhile. */
  private epoch: string | undefined
  /** Partner rows read from the store since start (lsp_partner_rows_read_total). */
  rowsRead = 0

  /** `store`: control.db; `shared`, with STATE_URL, is where the partners are read from instead. */
  constructor (readonly store: PartnerStore, readonly shared?: RedisPartnerStore) {
    if (!shared) this.refresh()
  }

  /**
   * The changed partners, by their key in the store, each with its row now (undefined: gone). Every
   * old entry goes out first: one partner's new digest may be another's old one.
   */
  private apply (changes: Map<string, PartnerRow | undefined>, mark: number) {
    for (const key of changes.keys()) {
      const old = this.rows.get(key)
      if (old !== undefined) this.byDigest.delete(old.token_sha256)
      this.rows.delete(key)
    }
    for (const [key, row] of changes) {
      if (row === undefined) continue
      this.rowsRead++
      this.byDigest.set(row.token_sha256, profileOf(fromRow(row)))
      this.rows.set(key, row)
    }
    this.seenMark = mark
  }

  /** Every partner anew. */
  private loadAll (rows: PartnerRow[], keyOf: (row: PartnerRow) => string, mark: number) {
    this.byDigest = new Map()
    this.rows = new Map()
    this.apply(new Map(rows.map((row) => [keyOf(row), row])), mark)
  }

  /**
   * Reads from control.db the partners changed since the last look; how many changed (0: none).
   * A mark lower than the one seen is a change log reset by hand: everything is read again.
   */
  refresh (): number {
    const mark = this.store.changeMark()
    if (mark === this.seenMark) return 0
    if (mark < this.seenMark || this.seenMark < 0) {
      const all = this.store.snapshot()
      this.loadAll(all.rows, (row) => row.id, all.mark)
      return all.rows.length
    }
    const { mark: now, rows } = this.store.changesSince(this.seenMark)
    this.apply(rows, now)
    return rows.size
  }

  /**
   * The same from Redis. Another epoch is a Redis that lost its data: the partners it lacks are put
   * back from this copy (one written there since is newer and stays), then all are read again.
   */
  async refreshShared (): Promise<{ restored: boolean, changed: number }> {
    const shared = this.shared!
    const { version, epoch } = await shared.state()
    if (epoch === this.epoch) {
      if (version === this.seenMark) return { restored: false, changed: 0 }
      const changes = await shared.changesSince(this.seenMark)
      if (changes !== undefined) {
        this.apply(changes.rows, changes.version)
        return { restored: false, changed: changes.rows.size }
      }
      // a writer that notes no changes (an older CLI) wrote: everything is read again
    }
    const restored = this.epoch !== undefined && epoch !== this.epoch && this.rows.size > 0 &&
      await shared.mergeRows([...this.rows.values()]) > 0
    // the version before the rows: a write between the two is read again at the next look
    const mark = restored ? (await shared.state()).version : version
    const rows = await shared.exportRows()
    this.epoch = epoch
    this.loadAll(rows, (row) => row.slug, mark)
    return { restored, changed: rows.length }
  }

  /** Found by the SHA-256 of the token: no comparison ever runs over the token itself. */
  byToken (token: string): PartnerProfile | undefined {
    return this.byDigest.get(tokenDigest(token))
  }

  get size (): number {
    return this.byDigest.size
  }
}
