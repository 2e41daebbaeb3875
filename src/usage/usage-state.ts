// Usage: the limiter's windows, the telemetry feed and the daily history, in process (saved to
// control.db every saveMs and at close, restored here) or in Redis (STATE_URL, behind a store that
// limits alone while Redis is away), each instance then adding its history counts every second.
import type Database from 'better-sqlite3'
import type { Redis } from 'ioredis'
import type { ControlDbHealth } from '../health/control-db.ts'
import { outageReporter } from '../health/outage.ts'
import { counterSaver, restoreCounters } from '../limits/counters.ts'
import { FailoverStore } from '../limits/failover-store.ts'
import { LocalStore, RateLimiter } from '../limits/limiter.ts'
import { RedisStore } from '../limits/redis-store.ts'
import { HistoryCounter } from './history.ts'
import { RedisHistory } from './history-redis.ts'
import { SqliteHistory } from './history-sqlite.ts'
import { SharedTelemetry, TelemetryFeed, type Telemetry } from './telemetry.ts'
import { restoreTelemetry, telemetrySaver } from './telemetry-store.ts'
import type { Log } from '../log.ts'

const SHARED_HISTORY_FLUSH_MS = 1000

export interface UsageStateOptions {
  /** control.db, where the in-process state is saved (unused with redis) */
  db: Database.Database
  /** the shared state (STATE_URL); without it, the state is in process */
  redis?: Redis
  /** under which this instance heartbeats and adds its history batches in Redis */
  instanceId: string
  log: Log
  /** where the in-process saves report (job `counters`) */
  controlDbHealth: Pick<ControlDbHealth, 'succeeded' | 'failed'>
  clock: () => number
  saveMs: number
  /** days of history kept (USAGE_HISTORY_DAYS) */
  historyDays: number
  historyFlushMs?: number
}

interface UsageState {
  limiter: RateLimiter
  telemetry: Telemetry
  /** the shared state's store and health, with redis */
  failover?: FailoverStore
  /** Saves now; never throws or rejects. Synchronous in process; with redis, the history's flush (one at a time). */
  save: () => void | Promise<void>
  /** Stops the periodic saves and saves a last time; never rejects. Call it once every request is answered. */
  close: () => Promise<void>
}

export function createUsageState (options: UsageStateOptions): UsageState {
  return options.redis ? sharedState(options.redis, options) : localState(options)
}

function sharedState (redis: Redis, options: UsageStateOptions): UsageState {
  const { instanceId, log, clock, historyDays, historyFlushMs = SHARED_HISTORY_FLUSH_MS } = options
  const failover = new FailoverStore(redis, new RedisStore(redis), instanceId, log, { clock })
  const counter = new HistoryCounter()
  const history = new RedisHistory(redis, historyDays, instanceId)
  const report = outageReporter(
    (err) => log.warn({ err },
      'usage history cannot be added to the shared state (Redis); counted in this process meanwhile'),
    () => log.info({}, 'usage history is added to the shared state (Redis) again'))
  let flushing: Promise<void> | undefined
  // one flush at a time, so that a batch is never sent twice at once; a failure's counts are kept
  const save = () => {
    flushing ??= history.flush(counter).then(() => report(), report).finally(() => { flushing = undefined })
    return flushing
  }
  const timer = setInterval(save, historyFlushMs).unref()
  const close = async () => {
    clearInterval(timer)
    await flushing
    // batches kept from a failed flush go first, the counts since in the flush after
    for (let i = 0; i < 2 && (history.unsent > 0 || !counter.empty); i++) await save()
    if (history.unsent > 0 || !counter.empty) {
      log.error({}, 'usage history counts could not be added to the shared state (Redis) at close; they are lost')
    }
    await failover.close()
  }
  const telemetry = new SharedTelemetry(redis, { log, history: counter })
  return { limiter: new RateLimiter(failover, clock), telemetry, failover, save, close }
}

function localState ({ db, log, controlDbHealth, clock, saveMs, historyDays }: UsageStateOptions): UsageState {
  const store = new LocalStore()
  const counter = new HistoryCounter()
  const telemetry = new TelemetryFeed(undefined, { history: counter })
  const restored = { partners: restoreCounters(db, store, clock()), feeds: restoreTelemetry(db, telemetry) }
  log.info(restored, 'rate-limit counters and telemetry restored')
  const history = new SqliteHistory(db, historyDays)
  const saveCounters = counterSaver(db, store, clock)
  const saveTelemetry = telemetrySaver(db, telemetry)
  const save = () => {
    let failure: unknown
    // each keeps what it could not write for the next save
    for (const work of [saveCounters, saveTelemetry, () => history.flush(counter, clock())]) {
      try { work() } catch (err) { failure ??= err }
    }
    if (failure === undefined) controlDbHealth.succeeded('counters')
    else controlDbHealth.failed('counters', failure)
  }
  const timer = setInterval(save, saveMs).unref()
  const close = async () => {
    clearInterval(timer)
    save()
  }
  return { limiter: new RateLimiter(store, clock), telemetry, save, close }
}
