// `datasets reload --all` over Redis (STATE_URL), for instances on several machines: every instance
// subscribed to the reload channel reloads from its own files and writes its outcome under the
// request's key. Its pid and address are published beside its heartbeat for the CLI to print, with its host and
// start for an operator who looks in Redis (docs/scaling.md).
import { hostname } from 'node:os'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Redis } from 'ioredis'
import { INSTANCE_STALE_MS, askReload, instancesKey, type LiveInstance, type ReloadOutcome } from './instances.ts'
import type { Log } from '../log.ts'

const RELOAD_CHANNEL = 'lsp:reload'
const INSTANCES_KEY = instancesKey('lsp:')
const INSTANCE_INFO = 'lsp:instance-info'
const reloadResultsKey = (requestId: number) => `lsp:reload:${requestId}`
/** How long a boot waits for the subscription before it listens without it. */
const SUBSCRIBE_WAIT_MS = 5_000

export function listenForSharedReloads (
  writer: Redis,
  instanceId: string,
  reload: (reason: string) => Promise<ReloadOutcome>,
  log: Pick<Log, 'error'>
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
     * Resolves true once subscribed, the info published and a first heartbeat written (the limiter's store
     * writes the next ones), or false after SUBSCRIBE_WAIT_MS (ioredis subscribes when Redis is back).
     */
    async ready (): Promise<boolean> {
      const heartbeat = writer.zadd(INSTANCES_KEY, Date.now(), instanceId).catch(() => {})
      const late = sleep(SUBSCRIBE_WAIT_MS, false, { ref: false })
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

/** The CLI's side. */
export function requestSharedReload (redis: Redis, options: { timeoutMs: number }) {
  const live = async () => {
    const ids = await redis.zrangebyscore(INSTANCES_KEY, Date.now() - INSTANCE_STALE_MS, '+inf')
    const info = ids.length === 0 ? [] : await redis.hmget(INSTANCE_INFO, ...ids)
    return ids.map((id, i): LiveInstance => {
      const known = JSON.parse(info[i] ?? '{}') as Partial<LiveInstance>
      return { id, pid: known.pid ?? 0, address: known.address ?? null }
    })
  }
  const post = async () => {
    const requestId = await redis.incr('lsp:reload:seq')
    await redis.publish(RELOAD_CHANNEL, JSON.stringify({ id: requestId }))
    return requestId
  }
  return askReload(live, post, (id) => redis.hgetall(reloadResultsKey(id)), options.timeoutMs)
}
