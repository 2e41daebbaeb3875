// Dataset reloads asked by `datasets reload` (control.db rows, or Redis) or SIGHUP, merged while one runs into
// one more after it; the heartbeat tells the CLI which instances should answer.
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { coalescing } from '../src/instances/coalescing-runner.ts'
import { InstanceRecord, type ReloadOutcome } from '../src/instances/instances.ts'
import { listenForSharedReloads } from '../src/instances/shared-reloads.ts'
import { RELOAD_STOPPED } from '../src/sites/registry.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /** Resolves with the outcome of a reload that started after this call. */
    reloadDatasets (reason: string): Promise<ReloadOutcome>
    instance: InstanceRecord
  }
}

async function reload (app: FastifyInstance, options: { pollMs: number }) {
  const instance = new InstanceRecord(app.partners.store.db)

  const reloadDatasets = coalescing(async (reasons: string[]) => {
    const started = performance.now()
    const outcome = await app.datasets.reload()
    const ms = Math.round(performance.now() - started)
    app.metrics.reloaded(outcome.ok)
    const asked = { reason: [...new Set(reasons)].join(', '), requests: reasons.length, ms }
    if (outcome.ok) app.log.info({ ...asked, datasets: outcome.datasets }, 'datasets reloaded')
    else if (outcome.error === RELOAD_STOPPED) app.log.info(asked, 'dataset reload stopped: the service is closing')
    else {
      app.log.error({ ...asked, error: outcome.error, serving: outcome.datasets },
        'dataset reload refused; the old datasets keep serving')
    }
    return outcome
  })
  app.decorate('reloadDatasets', reloadDatasets)
  app.decorate('instance', instance)

  // answers still to write when the service closes: control.db is open until they are written
  const answering = new Set<Promise<void>>()
  const timer = setInterval(() => {
    if (!app.controlDb.attempt('heartbeat', () => instance.heartbeat())) return
    let pending: number[] = []
    if (!app.controlDb.attempt('reload-requests', () => { pending = instance.pendingRequests() })) return
    if (pending.length === 0) return
    const answer = app.reloadDatasets(`request ${pending.join(',')}`)
      .then((outcome) => { app.controlDb.attempt('reload-requests', () => instance.answer(pending, outcome)) })
      .catch((err) => app.log.error({ err }, 'reload failed'))
      .finally(() => answering.delete(answer))
    answering.add(answer)
  }, options.pollMs).unref()

  const shared = app.redis && listenForSharedReloads(app.redis, instance.id, reloadDatasets, app.log)

  // reported wherever the CLI looks before listening: an instance that answers HTTP is one `datasets reload` reaches
  app.addHook('onReady', async () => {
    app.controlDb.attempt('heartbeat', () => instance.heartbeat())
    if (shared && !await shared.ready()) {
      app.log.error('not subscribed to shared reload requests yet: ' +
        '`datasets reload --all` cannot reach this instance until it is')
    }
  })
  app.addHook('onListen', async () => {
    const address = app.server.address()
    if (!address || typeof address !== 'object') return
    instance.setAddress(`${address.address}:${address.port}`)
    await shared?.listening(`${address.address}:${address.port}`)
  })
  // preClose runs before any onClose hook, so control.db and Redis are still open here; a reload
  // under way has been stopped by the datasets' own preClose, so its requesters get their answer
  app.addHook('preClose', async () => {
    clearInterval(timer)
    await Promise.all(answering)
    try { instance.remove() } catch { /* control.db unavailable: the row goes stale on its own */ }
    await shared?.close()
  })
}

export default fp(reload, {
  name: 'reload', dependencies: ['datasets', 'partners', 'health', 'metrics', 'shared-state']
})
