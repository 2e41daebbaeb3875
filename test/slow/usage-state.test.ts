// The usage state on its own, without Fastify. In process, on a real control.db: a save writes the
// counters, the telemetry feed and the history, and a new state restores them; close() stops the
// periodic save and saves once more; a save on a closed control.db reports instead of throwing.
// With a real redis-server: close() adds the history counts left, and says when it cannot.
import t, { type Test } from 'tap'
import { Redis } from 'ioredis'
import { ControlDbHealth } from '../../src/health/control-db.ts'
import { PartnerStore, controlPath } from '../../src/partners/store.ts'
import type { Limits } from '../../src/partners/tiers.ts'
import { dateOf } from '../../src/usage/history.ts'
import { readRedisHistory } from '../../src/usage/history-redis.ts'
import { readSqliteHistory } from '../../src/usage/history-sqlite.ts'
import type { TelemetryEvent } from '../../src/usage/telemetry.ts'
import { readSavedEvents } from '../../src/usage/telemetry-store.ts'
import { createUsageState, type UsageStateOptions } from '../../src/usage/usage-state.ts'
import { tmpDataDir } from '../helper.ts'
import { redisMissing, startRedis } from '../redis.ts'
import { setTimeout as sleep } from 'node:timers/promises'

const LIMITS: Limits = { minute: 100, hour: 1000, day: 10_000 }
// today (UTC): Redis expires the history's days at absolute times, which must be ahead of the clock
const NOW = Math.floor(Date.now() / 60_000) * 60_000
const TODAY = dateOf(Math.floor(NOW / 86_400_000))
const event = (rows: number): TelemetryEvent =>
  ({ timestamp: NOW, endpoint: '/v1/sites', status: 200, rows, durationMs: 1, dataset: 'production', cache: 'miss' })

function recordingLog () {
  const lines: [string, string][] = []
  const at = (level: string) => (_obj: object, msg: string) => { lines.push([level, msg]) }
  return { lines, log: { info: at('info'), warn: at('warn'), error: at('error') } }
}

/** control.db as the service opens it, and what the saves report to its health. */
function controlDb (t: Test) {
  const store = new PartnerStore(controlPath(tmpDataDir(t)))
  t.teardown(() => { if (store.db.open) store.close() })
  const reports: string[] = []
  const controlDbHealth = {
    succeeded: (job: string) => { reports.push(`${job} ok`) },
    failed: (job: string, err: unknown) => { reports.push(`${job} failed: ${(err as Error).message}`) }
  }
  return { db: store.db, store, reports, controlDbHealth }
}

function options (db: UsageStateOptions['db'], overrides: Partial<UsageStateOptions> = {}): UsageStateOptions {
  return {
    db, instanceId: 'test-instance', log: recordingLog().log, controlDbHealth: new ControlDbHealth(recordingLog().log),
    clock: () => NOW, saveMs: 3_600_000, historyDays: 90, ...overrides
  }
}

/** Three requests of partner p, answered with 5 rows each, as the partner routes count them. */
async function traffic (state: ReturnType<typeof createUsageState>) {
  for (let i = 0; i < 3; i++) {
    const hit = await state.limiter.hit('p', LIMITS)
    await state.limiter.setRows('p', hit.seq!, 5)
    state.telemetry.record('p', event(5))
  }
}

t.test('in process: a save writes the counters, the feed and the history; a new state restores them', async (t) => {
  const { db, reports, controlDbHealth } = controlDb(t)
  const { lines, log } = recordingLog()
  const state = createUsageState(options(db, { log, controlDbHealth }))
  t.same(lines, [['info', 'rate-limit counters and telemetry restored']], 'says what it restored (nothing yet)')
  t.equal(state.failover, undefined, 'no shared state without redis')
  await traffic(state)
  t.equal(state.save(), undefined, 'synchronous: saved when it returns')
  t.same(reports, ['counters ok'], 'reported to control.db\'s health')
  t.same(readSavedEvents(db, 'p').map((e) => e.rows), [5, 5, 5], 'the telemetry feed')
  t.match(readSqliteHistory(db, 'p', TODAY, TODAY).get(TODAY), { requests: 3, rows: 15 }, 'the history')

  const restarted = createUsageState(options(db))
  t.same((await restarted.limiter.state('p', LIMITS)).windows.map((w) => [w.used, w.rows]), [[3, 15], [3, 15], [3, 15]],
    'the windows, restored')
  t.same((await restarted.telemetry.block('p', NOW)).recent_events.map((e) => e.rows), [5, 5, 5], 'the feed, restored')
  await Promise.all([state.close(), restarted.close()])
})

t.test('in process: close() stops the periodic save and saves once more', async (t) => {
  const { db, reports, controlDbHealth } = controlDb(t)
  const state = createUsageState(options(db, { controlDbHealth, saveMs: 20 }))
  for (let i = 0; i < 100 && reports.length < 2; i++) await sleep(20)
  t.ok(reports.length >= 2, 'saved every saveMs')
  await traffic(state)
  const before = reports.length
  await state.close()
  t.equal(reports.length, before + 1, 'one save at close')
  t.same(readSavedEvents(db, 'p').map((e) => e.rows), [5, 5, 5],
    'what was counted since the last save is in control.db')
  await sleep(100)
  t.equal(reports.length, before + 1, 'no save after close')
})

t.test('in process: a save on a closed control.db reports the failure and does not throw', async (t) => {
  const { db, store, reports, controlDbHealth } = controlDb(t)
  const state = createUsageState(options(db, { controlDbHealth }))
  await traffic(state)
  store.close()
  t.doesNotThrow(() => state.save())
  t.match(reports, [/^counters failed: /])
  await state.close()
})

t.test('with Redis', { skip: redisMissing() }, async (t) => {
  const server = await startRedis(t)
  const connect = async () => {
    // as plugins/shared-state.ts connects: commands fail at once while Redis is away
    const redis = new Redis(server.url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: 500,
      retryStrategy: () => 100,
      lazyConnect: true
    })
    redis.on('error', () => {})
    t.teardown(() => redis.disconnect())
    await redis.connect()
    return redis
  }
  const { db } = controlDb(t)

  t.test('close() adds the history counts not yet flushed', async (t) => {
    const redis = await connect()
    const { lines, log } = recordingLog()
    // no periodic flush within the test: only close() can have added the counts
    const state = createUsageState(options(db, { redis, log, instanceId: 'a', historyFlushMs: 3_600_000 }))
    t.ok(state.failover, 'the shared state\'s store')
    await traffic(state)
    t.same((await readRedisHistory(redis, 'p', TODAY, TODAY)).size, 0, 'not flushed before close')
    await state.close()
    t.match((await readRedisHistory(redis, 'p', TODAY, TODAY)).get(TODAY), { requests: 3, rows: 15 },
      'flushed at close')
    t.same(lines.filter(([level]) => level !== 'info'), [], 'nothing lost, nothing to warn of')
  })

  t.test('close() with Redis away: the history counts are said to be lost', async (t) => {
    const redis = await connect()
    const { lines, log } = recordingLog()
    const state = createUsageState(options(db, { redis, log, instanceId: 'b' }))
    await traffic(state)
    await server.kill()
    for (let i = 0; i < 100 && redis.status === 'ready'; i++) await sleep(20)
    await state.close()
    t.match(lines.filter(([level]) => level === 'error'),
      [['error', /usage history counts could not be added .* at close; they are lost/]])
  })
})
