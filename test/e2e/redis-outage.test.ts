// No window over-admits while the shared state (Redis) is away, nor after it comes back: two
// instances (the real app, in process, with an injected clock) sharing a real redis-server that
// hangs (SIGSTOP, then SIGCONT) or is killed and restarted empty on the same port. Each stage has
// its own partner, so its windows start empty.
import t from 'tap'
import { Redis } from 'ioredis'
import type { FastifyInstance } from 'fastify'
import { RedisPartnerStore } from '../../src/partners/redis-store.ts'
import { partnerCalls, sharedInstance } from '../helper.ts'
import { until } from '../latency.ts'
import { skippedWithoutRedis, startRedis } from '../redis.ts'
import { parseMetrics } from '../run.ts'

if (!skippedWithoutRedis(t)) {
  const redis = await startRedis(t)
  let now = Date.UTC(2026, 10, 21, 12)
  const clock = () => now

  const client = new Redis(redis.url)
  const partners = new RedisPartnerStore(client)
  const tokens: Record<string, string> = {}
  type Limit = number | 'unlimited'
  const partner = async (slug: string, limitOverrides: { minute: Limit, hour: Limit, day: Limit }) => {
    tokens[slug] = (await partners.create({ name: slug, slug, tier: 'demo' })).token
    await partners.update(slug, { limitOverrides })
  }
  const perMinute = { minute: 60, hour: 'unlimited', day: 'unlimited' } as const
  await partner('hung', perMinute)
  await partner('restarted', perMinute)
  await partner('partial', perMinute)
  await partner('pinned', perMinute) // called on instance a only before the outage
  await partner('daily', { minute: 'unlimited', hour: 'unlimited', day: 40 })
  client.disconnect()

  const instance = () => sharedInstance(t, redis.url, { clock })
  const a = await instance()
  const b = await instance()
  const both = [a, b]
  const { get, statuses, tally, window } = partnerCalls(tokens)

  /** n requests taking turns over both instances, a first */
  const burst = async (slug: string, n: number) => {
    const out: number[] = []
    for (let i = 0; i < n; i++) out.push((await get(both[i % 2], slug)).statusCode)
    return out
  }
  const status = async (app: FastifyInstance) => JSON.parse((await app.inject('/readyz')).body).status
  const allStatus = (wanted: string) =>
    until(`both instances ${wanted}`, async () => (await Promise.all(both.map(status))).every((s) => s === wanted),
      20_000)
  // and each has seen the other back, so no room is kept for it any more
  const allBack = async () => {
    await allStatus('ready')
    await until('both instances to see the other back', () => both.every((app) => !app.sharedState!.rejoining), 20_000)
  }

  await until('both instances to count two', () => both.every((app) => app.sharedState!.status().instances === 2),
    20_000)

  t.test('Redis hangs after a burst that used the limit: nothing more in the window, ' +
    'while it hangs and after', async (t) => {
    const start = now
    t.same(tally(await burst('hung', 60)), [60, 0])
    now += 20_000
    redis.pause()
    t.same(tally([...await statuses(a, 'hung', 10), ...await statuses(b, 'hung', 10)]), [0, 20],
      'nothing admitted while Redis hangs')
    const refused = await get(a, 'hung')
    t.equal(refused.headers['retry-after'], '40', 'until the burst leaves the window')
    for (const app of both) {
      t.same(await window(app, 'hung', 'minute'), { limit: 30, used: 30, remaining: 0 },
        'each instance\'s share, all used')
    }
    redis.resume()
    await allBack()
    now += 5_000
    t.same(tally([...await statuses(a, 'hung', 5), ...await statuses(b, 'hung', 5)]), [0, 10],
      'nothing admitted after it went on')
    for (const app of both) t.same(await window(app, 'hung', 'minute'), { limit: 60, used: 60, remaining: 0 })
    now = start + 60_001
    t.equal((await get(b, 'hung')).statusCode, 200, 'served once the burst left the window')
  })

  t.test('Redis killed after a burst and restarted empty: still nothing more in the window', async (t) => {
    now += 600_000
    const start = now
    t.same(tally(await burst('restarted', 60)), [60, 0])
    now += 10_000
    await redis.kill()
    await allStatus('degraded')
    t.same(tally([...await statuses(a, 'restarted', 5), ...await statuses(b, 'restarted', 5)]), [0, 10],
      'nothing admitted while Redis is down')
    t.equal((await get(b, 'restarted')).headers['retry-after'], '50')
    await redis.start()
    await allBack()
    now += 5_000
    for (const app of both) {
      t.same(await window(app, 'restarted', 'minute'), { limit: 60, used: 60, remaining: 0 },
        'the burst was put back into the empty Redis')
    }
    t.same(tally([...await statuses(a, 'restarted', 5), ...await statuses(b, 'restarted', 5)]), [0, 10],
      'no fresh window')
    now = start + 60_001
    t.equal((await get(a, 'restarted')).statusCode, 200, 'served once the burst left the window')
  })

  t.test('20 of 60 used, then Redis hangs: each instance admits its share of the 40 left, no more', async (t) => {
    now += 600_000
    t.same(tally(await burst('partial', 20)), [20, 0])
    t.same(tally(await statuses(a, 'pinned', 20)), [20, 0])
    for (const app of both) t.same(await window(app, 'partial', 'minute'), { limit: 60, used: 20, remaining: 40 })
    now += 5_000
    redis.pause()
    t.same(tally(await statuses(a, 'partial', 40)), [20, 20], 'a: half of the 40 left')
    t.same(tally(await statuses(b, 'partial', 40)), [20, 20], 'b: half of the 40 left; 60 in all')
    for (const app of both) t.same(await window(app, 'partial', 'minute'), { limit: 30, used: 30, remaining: 0 })
    t.same(tally(await statuses(a, 'pinned', 40)), [20, 20], 'a knew of the 20: half of the 40 left')
    const pinned = await statuses(b, 'pinned', 40)
    t.same(pinned, Array(40).fill(503),
      'b never had an answer about this partner: it cannot know its windows, and none is full')
    const unavailable = await get(b, 'pinned')
    t.same(unavailable.json(), {
      code: 'svc_partner_api_unavailable',
      message: 'The rate limits cannot be checked right now. Retry after 5 seconds; this request was not counted.',
      data: { status: 503, retry_after: 5 }
    })
    const limitFields = Object.keys(unavailable.headers).filter((h) => /^(retry-after|x-ratelimit|ratelimit)/.test(h))
    t.same(limitFields, ['retry-after'], 'Retry-After alone: no window to describe')
    t.same([unavailable.headers['retry-after'], unavailable.headers['cache-control']], ['5', 'no-store'])
    t.match(unavailable.headers['x-request-id'], /^[0-9a-f-]{36}$/)
    t.match(JSON.parse((await b.inject('/readyz')).body).shared_state,
      { connected: false, error: /timed out/i, unavailable_answers: 41 })
    const metrics = parseMetrics(await b.metrics.registry.metrics())
    t.same([metrics.get('lsp_shared_state_unavailable_total'), metrics.get('lsp_shared_state_connected')], [41, 0])
    t.same(await window(b, 'pinned', 'minute'), { limit: 30, used: 30, remaining: 0 })
    redis.resume()
    await allBack()
    for (const app of both) {
      t.same(await window(app, 'partial', 'minute'), { limit: 60, used: 60, remaining: 0 },
        'the 40 accepted alone added, and nothing else')
      t.same(await window(app, 'pinned', 'minute'), { limit: 60, used: 40, remaining: 20 }, 'the 503s counted nowhere')
    }
    t.equal((await get(b, 'partial')).statusCode, 429)
  })

  t.test('a day limit of 40 used, Redis killed and restarted empty: 40 in the day, not 80', async (t) => {
    now += 600_000
    const start = now
    t.same(tally(await burst('daily', 40)), [40, 0])
    now += 2 * 3_600_000
    await redis.kill()
    await allStatus('degraded')
    t.same(tally([...await statuses(a, 'daily', 20), ...await statuses(b, 'daily', 20)]), [0, 40],
      'nothing admitted while Redis is down')
    t.equal((await get(a, 'daily')).headers['retry-after'], String(22 * 3600))
    for (const app of both) t.same(await window(app, 'daily', 'day'), { limit: 20, used: 20, remaining: 0 })
    await redis.start()
    await allBack()
    for (const app of both) t.same(await window(app, 'daily', 'day'), { limit: 40, used: 40, remaining: 0 })
    t.same(tally([...await statuses(a, 'daily', 5), ...await statuses(b, 'daily', 5)]), [0, 10])
    now = start + 86_400_001
    t.equal((await get(b, 'daily')).statusCode, 200, 'served once the day moved on')
  })
}
