// Dataset reloads on request: `datasets reload` (a request row in control.db, answered by every
// live instance) and SIGHUP (src/server.ts) both end in reloadDatasets(). The instance also
// writes a heartbeat, so the CLI knows which instances should answer. Requests that arrive while
// a reload runs are merged into one more reload after it (a burst of SIGHUPs costs two reloads).
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { hostname } from 'node:os'
import type { Redis } from 'ioredis'
import { coalescing } from '../src/instances/coalescing-runner.ts'
import { INSTANCE_INFO, InstanceRecord, RELOAD_CHANNEL, reloadResultsKey, type ReloadOutcome } from '../src/instances/instances.ts'

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
    else app.log.error({ ...asked, error: outcome.error, serving: outcome.datasets }, 'dataset reload refused; the old datasets keep serving')
    return outcome
  })
  app.decorate('reloadDatasets', reloadDatasets)
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

  if (app.redis) sharedReloads(app, app.redis, instance)

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

/**
 * `datasets reload --all` over Redis: a subscriber connection listens on the reload channel; this
 * instance reloads from its own files and writes its outcome under the request's key. The
 * instance's pid, host and address are published beside its heartbeat for the CLI to print.
 */
function sharedReloads (app: FastifyInstance, writer: Redis, instance: InstanceRecord) {
  const subscriber = writer.duplicate({ enableOfflineQueue: true, lazyConnect: false })
  subscriber.on('error', () => {}) // the shared state's way down reports Redis trouble, once
  const startedAt = new Date().toISOString()
  let address: string | null = null
  const publishInfo = () => writer.hset(INSTANCE_INFO, instance.id, JSON.stringify({ pid: process.pid, hostname: hostname(), address, started_at: startedAt })).catch(() => {})
  // now, and on every reconnection: a Redis restarted empty learns about this instance again
  publishInfo()
  writer.on('ready', publishInfo)
  subscriber.subscribe(RELOAD_CHANNEL).catch((err: Error) => app.log.error({ error: err.message }, 'could not subscribe to shared reload requests'))
  subscriber.on('message', (_channel: string, message: string) => {
    let id: number
    try {
      id = Number((JSON.parse(message) as { id: unknown }).id)
    } catch {
      return
    }
    app.reloadDatasets(`shared request ${id}`)
      .then((outcome) => writer.multi().hset(reloadResultsKey(id), instance.id, JSON.stringify(outcome)).pexpire(reloadResultsKey(id), 600_000).exec())
      .catch((err: Error) => app.log.error({ error: err.message }, 'the outcome of a shared reload could not be written'))
  })
  app.addHook('onListen', async () => {
    const listening = app.server.address()
    if (listening && typeof listening === 'object') address = `${listening.address}:${listening.port}`
    await publishInfo()
  })
  app.addHook('preClose', async () => {
    await writer.hdel(INSTANCE_INFO, instance.id).catch(() => {})
    subscriber.disconnect()
  })
}

export default fp(reload, { name: 'reload', dependencies: ['datasets', 'partners', 'health', 'metrics', 'shared-state'] })
