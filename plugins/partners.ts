// Partners as the service holds them: a table from token digest to partner profile, rebuilt
// when control.db changes (checked every PARTNER_REFRESH_MS), so CLI changes apply without restart.
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { profileOf, type PartnerProfile } from '../src/partners/permissions.ts'
import { PartnerStore, controlPath } from '../src/partners/store.ts'
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

  constructor (readonly store: PartnerStore) {
    this.refresh()
  }

  /** Rebuilds the table if control.db changed since the last look; true when it did. */
  refresh (): boolean {
    const version = this.store.dataVersion()
    if (version === this.seenVersion) return false
    const next = new Map<string, PartnerProfile>()
    for (const { partner, digest } of this.store.listWithDigests()) next.set(digest, profileOf(partner))
    this.byDigest = next
    this.seenVersion = version
    return true
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
  const directory = new PartnerDirectory(store)
  app.log.info({ partners: directory.size }, 'partners loaded')
  const timer = setInterval(() => {
    app.controlDb.attempt('partners', () => {
      if (directory.refresh()) app.log.info({ partners: directory.size }, 'partners reloaded')
    })
  }, options.refreshMs)
  timer.unref()
  app.decorate('partners', directory)
  app.addHook('onClose', async () => {
    clearInterval(timer)
    store.close()
  })
}

export default fp(partners, { name: 'partners', dependencies: ['health'] })
