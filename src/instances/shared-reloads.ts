// `datasets reload --all` over Redis: a subscriber connection listens on the reload channel; this
// instance reloads from its own files and writes its outcome under the request's key. Its pid,
// host and address are published beside its heartbeat for the CLI to print.
import { hostname } from 'node:os'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Redis } from 'ioredis'
import { INSTANCE_INFO, INSTANCES_KEY, RELOAD_CHANNEL, reloadResultsKey, type ReloadOutcome } from './instances.ts'

/** How long a boot waits for the subscription before it listens without it. */
const SUBSCRIBE_WAIT_MS = 5_000

export function listenForSharedReloads (
  writer: Redis,
  instanceId: string,
  reload: (reason: string) => Promise<ReloadOutcome>,
  log: { error (obj: object, msg: string): void }
) {
  const subscriber = writer.duplicate({ enableOfflineQueue: true, lazyConnect: false })
  subscriber.on('error', () => {}) // the limiter's way down reports Redis trouble, once
  const startedAt = new Date().toISOString()
  let address: string | null = null
  const publishInfo = () => {
    const info = JSON.stringify({ pid: process.pid, hostname: hostname(), address, started_at: startedAt })
    return writer.hset(INSTANCE_INFO, instanceId, info).catch(() => {})
  }
  // now, and on every reconnection: a Redis restarted empty learns about this instance again
  publishInfo()
  writer.on('ready', publishInfo)
  const subscribed = subscriber.subscribe(RELOAD_CHANNEL).then(() => true, (err: Error) => {
    log.error({ error: err.message }, 'could not subscribe to shared reload requests')
    return false
  })
  // outcomes still to write: close() waits for them, while the writer is still connected
  const answering = new Set<Promise<void>>()
  subscriber.on('message', (_channel: string, message: string) => {
    let id: number
    try {
      id = Number((JSON.parse(message) as { id: unknown }).id)
    } catch {
      return
    }
    const key = reloadResultsKey(id)
    const answer = reload(`shared request ${id}`)
      .then((outcome) => writer.multi().hset(key, instanceId, JSON.stringify(outcome)).pexpire(key, 600_000).exec())
      .then(() => {}, (err: Error) => {
        log.error({ error: err.message }, 'the outcome of a shared reload could not be written')
      })
      .finally(() => answering.delete(answer))
    answering.add(answer)
  })
  return {
    /**
     * Resolves true once subscribed, the info published and a first heartbeat written (the
     * limiter's store writes the next ones), or false after `timeoutMs` (ioredis subscribes when
     * Redis is back).
     */
    async ready (timeoutMs = SUBSCRIBE_WAIT_MS): Promise<boolean> {
      const heartbeat = writer.zadd(INSTANCES_KEY, Date.now(), instanceId).catch(() => {})
      const late = sleep(timeoutMs, false, { ref: false })
      return await Promise.race([Promise.all([subscribed, publishInfo(), heartbeat]).then(([ok]) => ok), late])
    },
    /** the address this instance listens on, published for the CLI */
    async listening (at: string) {
      address = at
      await publishInfo()
    },
    async close () {
      subscriber.disconnect() // no request taken from now on
      await Promise.all(answering)
      writer.off('ready', publishInfo)
      await writer.hdel(INSTANCE_INFO, instanceId).catch(() => {})
    }
  }
}
