// Dataset reloads on request: `datasets reload` (a request row in control.db, answered by every
// live instance) and SIGHUP (src/server.ts) both end in reloadDatasets(). The instance also
// writes a heartbeat, so the CLI knows which instances should answer.
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { InstanceRecord, type ReloadOutcome } from '../src/instances.ts'

declare module 'fastify' {
  interface FastifyInstance {
    reloadDatasets (reason: string): Promise<ReloadOutcome>
    instance: InstanceRecord
  }
}

async function reload (app: FastifyInstance, options: { pollMs: number }) {
  const instance = new InstanceRecord(app.partners.store.db)

  app.decorate('reloadDatasets', async (reason: string) => {
    const started = performance.now()
    const outcome = await app.datasets.reload()
    const ms = Math.round(performance.now() - started)
    app.metrics.reloads.inc({ result: outcome.ok ? 'ok' : 'refused' })
    if (outcome.ok) app.log.info({ reason, ms, datasets: outcome.datasets }, 'datasets reloaded')
    else app.log.error({ reason, ms, error: outcome.error, serving: outcome.datasets }, 'dataset reload refused; the old datasets keep serving')
    return outcome
  })
  app.decorate('instance', instance)

  const timer = setInterval(() => {
    if (!app.controlDb.attempt('heartbeat', () => instance.heartbeat())) return
    let pending: number[] = []
    if (!app.controlDb.attempt('reload-requests', () => { pending = instance.pendingRequests() })) return
    if (pending.length === 0) return
    app.reloadDatasets(`request ${pending.join(',')}`)
      .then((outcome) => { app.controlDb.attempt('reload-requests', () => instance.answer(pending, outcome)) })
      .catch((err) => app.log.error({ err }, 'reload failed'))
  }, options.pollMs)
  timer.unref()

  app.addHook('onListen', async () => {
    const address = app.server.address()
    if (address && typeof address === 'object') instance.setAddress(`${address.address}:${address.port}`)
  })
  // preClose runs before any onClose hook, so control.db is still open here
  app.addHook('preClose', async () => {
    clearInterval(timer)
    try { instance.remove() } catch { /* control.db unavailable: the row goes stale on its own */ }
  })
}

export default fp(reload, { name: 'reload', dependencies: ['datasets', 'partners', 'health', 'metrics'] })
