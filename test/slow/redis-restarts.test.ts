// The shared state (Redis) restarted empty again and again, and a Redis that refuses writes
// (maxmemory reached, noeviction): two instances (the real app, in process, with an injected clock)
// sharing a real redis-server. Each request is put back once, however many restarts; a Redis that
// refuses writes leaves each instance limiting alone, with the windows it can still read, and
// saying why in /readyz, its metrics and its log.
import t from 'tap'
import { Redis } from 'ioredis'
import type { FastifyInstance } from 'fastify'
import { RedisPartnerStore } from '../../src/partners/redis-store.ts'
import { logCapture, partnerCalls, sharedInstance } from '../helper.ts'
import { until } from '../latency.ts'
import { skippedWithoutRedis, startRedis } from '../redis.ts'
import { parseMetrics } from '../run.ts'

if (!skippedWithoutRedis(t)) {
  const redis = await startRedis(t)
  let now = Date.UTC(2026, 10, 21, 12)
  const clock = () => now

  const admin = new Redis(redis.url)
  admin.on('error', () => {}) // Redis is killed: it reconnects
  t.teardown(() => admin.disconnect())
  const partners = new RedisPartnerStore(admin)
  const tokens: Record<string, string> = {}
  const partner = async (slug: string, minute: number | 'unlimited', hour: number | 'unlimited') => {
    tokens[slug] = (await partners.create({ name: slug, slug, tier: 'demo' })).token
    await partners.update(slug, { limitOverrides: { minute, hour, day: 'unlimited' } })
  }
  await partner('thrice', 'unlimited', 250)
  await partner('full', 10, 'unlimited')

  const logs = [logCapture(), logCapture()]
  const instance = (i: number) =>
    sharedInstance(t, redis.url, { clock, logger: { level: 'info', stream: logs[i].stream } })
  const both = [await instance(0), await instance(1)]
  const [a, b] = both
  const { get, statuses, tally, window } = partnerCalls(tokens)
  const readyz = async (app: FastifyInstance) => JSON.parse((await app.inject('/readyz')).body)
  const allStatus = (wanted: string) => until(`both instances ${wanted}`,
    async () => (await Promise.all(both.map(readyz))).every((r) => r.status === wanted), 20_000)
  // and each has seen the other back, so no room is kept for it any more
  const allBack = async () => {
    await allStatus('ready')
    await until('both instances to see the other back', () => both.every((app) => !app.sharedState!.rejoining),
      20_000)
  }
  await until('both instances to count two', () => both.every((app) => app.sharedState!.status().instances === 2),
    20_000)

  t.test('Redis restarted empty three times: a partner\'s 100 requests are 100 in its windows each time',
    async (t) => {
      const start = now
      for (let i = 0; i < 100; i++) {
        t.equal((await get(both[i % 2], 'thrice')).statusCode, 200)
        now += 1000
      }
      const before = await window(b, 'thrice', 'hour')
      t.same(before, { limit: 250, used: 100, remaining: 150 })
      for (let restart = 1; restart <= 3; restart++) {
        await redis.kill()
        await allStatus('degraded')
        await redis.start()
        await allBack()
        for (const app of both) {
          t.same(await window(app, 'thrice', 'hour'), before, `restart ${restart}: /usage as before`)
        }
      }
      const rest = []
      for (let i = 0; i < 151; i++) rest.push((await get(both[i % 2], 'thrice')).statusCode)
      t.same(tally(rest), [150, 1], 'the 150 left, no more')
      t.equal((await get(a, 'thrice')).headers['retry-after'], String((start + 3_600_000 - now) / 1000),
        'until the first request leaves the hour: its own time, kept through the restarts')
      const lines = logs[0].lines.join('')
      t.equal(lines.match(/the shared state \(Redis\) lost its data/g)?.length, 3, 'each loss said once')
    })

  t.test('Redis refuses writes (maxmemory, noeviction): each instance limits alone with the windows it reads, ' +
    'and says why', async (t) => {
    now += 3_600_000
    t.same(await window(a, 'full', 'minute'), { limit: 10, used: 0, remaining: 10 }, 'a has an answer; b none')
    for (const log of logs) log.clear()
    await admin.config('SET', 'maxmemory-policy', 'noeviction')
    await admin.config('SET', 'maxmemory', '1')
    t.teardown(() => admin.config('SET', 'maxmemory', '0'))
    await allStatus('degraded') // their heartbeats are refused
    for (const app of both) {
      t.match((await readyz(app)).shared_state,
        { connected: false, error: /^OOM command not allowed when used memory > 'maxmemory'/, unavailable_answers: 0 })
    }
    t.same(tally(await statuses(a, 'full', 10)), [5, 5], 'a: half of the 10 left')
    const refused = await get(a, 'full')
    t.equal(refused.statusCode, 429)
    t.equal(refused.headers['retry-after'], '60', 'a window it knows: until its first request of the five leaves')
    t.same(tally(await statuses(b, 'full', 10)), [5, 5], 'b read the windows it had no answer about: the other half')
    await new Promise((resolve) => setTimeout(resolve, 2500))
    t.same((await Promise.all(both.map(readyz))).map((r) => r.status), ['degraded', 'degraded'],
      'still alone after its probes (writes)')
    const metrics = parseMetrics(await a.metrics.registry.metrics())
    t.same([metrics.get('lsp_shared_state_connected'), metrics.get('lsp_shared_state_unavailable_total')], [0, 0])
    for (const log of logs) {
      const lines = log.lines.map((l) => JSON.parse(l))
      const unavailable = lines.filter((l) => /shared state \(Redis\) unavailable/.test(l.msg))
      t.same(unavailable.map((l) => [l.level, l.error]),
        [[50, 'OOM command not allowed when used memory > \'maxmemory\'.']], 'said once, with the reason')
    }
    await admin.config('SET', 'maxmemory', '0')
    await allBack()
    for (const app of both) t.same(await window(app, 'full', 'minute'), { limit: 10, used: 10, remaining: 0 })
    t.equal((await get(b, 'full')).statusCode, 429)
  })
}
