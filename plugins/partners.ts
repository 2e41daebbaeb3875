// The partner directory, refreshed every PARTNER_REFRESH_MS from control.db, or from Redis with STATE_URL:
// each look reads the partners changed since the last one.
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { outageReporter } from '../src/health/outage.ts'
import { PartnerDirectory } from '../src/partners/directory.ts'
import { PartnerStore, controlPath } from '../src/partners/store.ts'
import { RedisPartnerStore } from '../src/partners/redis-store.ts'

declare module 'fastify' {
  interface FastifyInstance {
    partners: PartnerDirectory
  }
}

/** How long the service waits for a lock the CLI holds on control.db before it retries on its next tick. */
const BUSY_TIMEOUT_MS = 250

async function partners (app: FastifyInstance, options: { dataDir: string, refreshMs: number }) {
  const store = new PartnerStore(controlPath(options.dataDir), { busyTimeoutMs: BUSY_TIMEOUT_MS })
  const directory = new PartnerDirectory(store, app.redis ? new RedisPartnerStore(app.redis) : undefined)
  const reloaded = (changed: number) => {
    if (changed > 0) app.log.info({ partners: directory.size, changed }, 'partners reloaded')
  }
  let timer: NodeJS.Timeout
  if (app.redis) {
    await directory.refreshShared()
    const report = outageReporter(
      (err) => app.log.error({ error: (err as Error).message },
        'partners could not be read from the shared state; serving the last known table'),
      () => app.log.info('partners are read from the shared state again'))
    let inFlight = false // a slow Redis must not pile up refreshes
    timer = setInterval(() => {
      if (inFlight) return
      inFlight = true
      directory.refreshShared().finally(() => { inFlight = false }).then(({ restored, changed }) => {
        report()
        if (restored) {
          app.log.warn({ partners: directory.size },
            'the shared state had lost the partners; put back from this instance\'s copy')
        } else reloaded(changed)
      }, report)
    }, options.refreshMs)
  } else {
    timer = setInterval(() => app.controlDb.attempt('partners', () => reloaded(directory.refresh())), options.refreshMs)
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
