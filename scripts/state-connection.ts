// The operator CLI's connection to the shared state (STATE_URL), for one command.
import type { Redis } from 'ioredis'
import { withoutCredentials } from '../src/http/redact.ts'
import { FailedError } from './cli-errors.ts'

/** How long the CLI waits for Redis to connect, and for each command. */
const REDIS_TIMEOUT_MS = 5_000

/**
 * A connection to the shared state for one command: a FailedError (exit 1) when Redis is away
 * or does not answer (a Redis that hangs accepts connections and answers nothing).
 */
export async function connectState (url: string): Promise<Redis> {
  // loaded here: ioredis costs the start-up of every command that does not use Redis
  const { Redis } = await import('ioredis')
  const redis = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    connectTimeout: REDIS_TIMEOUT_MS,
    commandTimeout: REDIS_TIMEOUT_MS,
    retryStrategy: () => null
  })
  redis.on('error', () => {})
  let timer: NodeJS.Timeout | undefined
  try {
    // the ready check (INFO) is not bound by either timeout: the connection as a whole is
    await Promise.race([
      redis.connect(),
      new Promise((_resolve, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${REDIS_TIMEOUT_MS / 1000} s`)), REDIS_TIMEOUT_MS)
      })
    ])
  } catch (err) {
    redis.disconnect()
    const reason = (err as Error).message
    throw new FailedError(`cannot reach the shared state at STATE_URL (${withoutCredentials(url)}): ${reason}`)
  } finally {
    clearTimeout(timer)
  }
  return redis
}
