// The shared telemetry feed against a real redis-server that goes away and comes back: failed
// writes are logged once per outage (a warning when they start failing, an info line when they
// work again), and events keep being answered from the process meanwhile.
import t from 'tap'
import { Redis } from 'ioredis'
import { SharedTelemetry, type TelemetryEvent } from '../../src/usage/telemetry.ts'
import { skippedWithoutRedis, startRedis } from '../redis.ts'
import { setTimeout as sleep } from 'node:timers/promises'

const until = async (ok: () => boolean) => {
  for (let i = 0; i < 100 && !ok(); i++) await sleep(50)
}
const event = (n: number): TelemetryEvent => ({
  timestamp: Date.UTC(2026, 0, 1) + n, endpoint: '/v1/sites', status: 200, rows: n, durationMs: 1,
  dataset: 'production', cache: 'miss'
})

if (!skippedWithoutRedis(t)) {
  t.test('a Redis outage: one warning when writes fail, one info line when they work again', async (t) => {
    const server = await startRedis(t)
    // as plugins/shared-state.ts connects: commands fail at once while Redis is away
    const redis = new Redis(server.url,
      { enableOfflineQueue: false, maxRetriesPerRequest: 0, commandTimeout: 500, retryStrategy: () => 100 })
    redis.on('error', () => {})
    t.teardown(() => redis.disconnect())
    await until(() => redis.status === 'ready')
    const logged: [string, string, string | undefined][] = []
    const log = {
      warn: (obj: { err?: Error }, msg: string) => { logged.push(['warn', msg, obj.err?.message]) },
      info: (_obj: object, msg: string) => { logged.push(['info', msg, undefined]) }
    }
    const telemetry = new SharedTelemetry(redis, { prefix: 'test:', log })
    telemetry.record('p', event(1))
    await until(() => telemetry.events('p').length === 1)
    await sleep(100)
    t.same(logged, [], 'nothing said while writes work')

    await server.kill()
    await until(() => redis.status !== 'ready')
    for (let n = 2; n <= 6; n++) telemetry.record('p', event(n))
    await until(() => logged.length > 0)
    await sleep(200)
    t.same(logged.map(([level, msg]) => [level, msg]),
      [['warn', 'telemetry events cannot be written to the shared state (Redis); kept in this process meanwhile']],
      'five failed writes: one warning')
    t.type(logged[0][2], 'string', 'with the error')
    t.same((await telemetry.block('p', Date.UTC(2026, 0, 1) + 10)).recent_events.map((e) => e.rows), [6, 5, 4, 3, 2, 1],
      'answered from the process meanwhile')

    await server.start()
    await until(() => redis.status === 'ready')
    telemetry.record('p', event(7))
    telemetry.record('p', event(8))
    await until(() => logged.length > 1)
    await sleep(200)
    t.same(logged.slice(1).map(([level, msg]) => [level, msg]),
      [['info', 'telemetry events are written to the shared state (Redis) again']],
      'one info line once writes work again')
    t.same(await redis.lrange('test:tm:{p}', 0, -1).then((list) => list.map((e) => JSON.parse(e).rows)), [8, 7],
      'written again (the restarted Redis is empty)')
  })
}
