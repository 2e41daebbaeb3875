// Partners as the service holds them: a table from token digest to partner profile, rebuilt
// when control.db changes (checked every PARTNER_REFRESH_MS), so CLI changes apply without restart.
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { profileOf, type PartnerProfile } from '../src/partners/permissions.ts'
import { PartnerStore, controlPath, fromRow, type Partner, type PartnerRow } from '../src/partners/store.ts'
import { RedisPartnerStore } from '../src/partners/redis-store.ts'
import { tokenDigest } from '../src/partners/tokens.ts'

declare module 'fastify' {
  interface FastifyInstance {
    partners: PartnerDirectory
  }
}

/** The service waits this long for a lock the CLI holds on control.db, then retries on its next tick. */
const SERVICE_BUSY_TIMEOUT_MS = 250

export class PartnerDirectory {
  private byDigest = new Map<string, PartnerProfile>()
  private seenVersion = -1

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

  /** Rebuilds the table if control.db changed since the last look; true when it did. */
  refresh (): boolean {
    const version = this.store.dataVersion()
    if (version === this.seenVersion) return false
    this.load(this.store.listWithDigests(), version)
    return true
  }

  /** Rows as last read from Redis, to put back if Redis comes back empty. */
  private sharedRows: PartnerRow[] = []

  /**
   * The same from Redis: the version first, the table only when it moved. A version that went
   * back, with no partner left, is a Redis that lost its data (restarted without persistence):
   * the partners are put back from this copy instead of every token being refused.
   */
  async refreshShared (): Promise<'same' | 'changed' | 'restored'> {
    const shared = this.shared!
    let version = await shared.version()
    if (version === this.seenVersion) return 'same'
    let restored = false
    if (version < this.seenVersion && this.sharedRows.length > 0) {
      // only into a Redis with no partner left, in one step, so that no instance reads a part of
      // them (and refuses the rest's tokens until its next look); false when it has partners,
      // e.g. put back by another instance first
      restored = await shared.restoreRows(this.sharedRows)
      version = await shared.version()
    }
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

async function partners (app: FastifyInstance, options: { dataDir: string, refreshMs: number }) {
  const store = new PartnerStore(controlPath(options.dataDir), { busyTimeoutMs: SERVICE_BUSY_TIMEOUT_MS })
  let timer: NodeJS.Timeout
  let directory: PartnerDirectory
  if (app.redis) {
    directory = new PartnerDirectory(store, new RedisPartnerStore(app.redis))
    await directory.refreshShared()
    let failing = false
    let inFlight = false // a slow Redis must not pile up refreshes
    timer = setInterval(() => {
      if (inFlight) return
      inFlight = true
      directory.refreshShared().finally(() => { inFlight = false }).then((outcome) => {
        if (failing) app.log.info('partners are read from the shared state again')
        failing = false
        if (outcome === 'restored') app.log.warn({ partners: directory.size }, 'the shared state had lost the partners; put back from this instance\'s copy')
        else if (outcome === 'changed') app.log.info({ partners: directory.size }, 'partners reloaded')
      }, (err: Error) => {
        if (!failing) app.log.error({ error: err.message }, 'partners could not be read from the shared state; serving the last known table')
        failing = true
      })
    }, options.refreshMs)
  } else {
    directory = new PartnerDirectory(store)
    timer = setInterval(() => {
      app.controlDb.attempt('partners', () => {
        if (directory.refresh()) app.log.info({ partners: directory.size }, 'partners reloaded')
      })
    }, options.refreshMs)
  }
  timer.unref()
  app.log.info({ partners: directory.size, source: app.redis ? 'redis' : 'control.db' }, 'partners loaded')
  app.decorate('partners', directory)
  app.addHook('onClose', async () => {
    clearInterval(timer)
    store.close()
  })
}

export default fp(partners, { name: 'partners', dependencies: ['health', 'shared-state'] })
