// The limiter's way down, against a real redis-server killed and restarted empty: two stores (two
// instances) stepped by hand (tick), with an injected clock. Alone, each admits its share of what
// its last answer left, and says when it will admit again; back, what Redis lost is put back and
// room is kept for the instance that has not added what it accepted alone yet; a Redis restarted
// between two probes with no command failing is noticed on reconnection.
import t from 'tap'
import { once } from 'node:events'
import { Redis } from 'ioredis'
import type { FastifyBaseLogger } from 'fastify'
import { FailoverStore } from '../../src/limits/failover-store.ts'
import { RateLimiter, windowSpecs } from '../../src/limits/limiter.ts'
import { RedisStore } from '../../src/limits/redis-store.ts'
import type { Limits } from '../../src/partners/tiers.ts'
import { skippedWithoutRedis, startRedis } from '../redis.ts'

if (!skippedWithoutRedis(t)) {
  const redis = await startRedis(t)
  let now = Date.UTC(2026, 10, 21, 12)
  const clock = () => now
  const quiet = { error () {}, info () {}, warn () {} } as unknown as FastifyBaseLogger
  const instance = async (id: string) => {
    // as plugins/shared-state.ts connects, with reconnections a little faster
    const client = new Redis(redis.url,
      { enableOfflineQueue: false, maxRetriesPerRequest: 0, commandTimeout: 500, retryStrategy: () => 50 })
    client.on('error', () => {})
    await once(client, 'ready')
    const store = new FailoverStore(client, new RedisStore(client, 'fo:'), id, quiet,
      { prefix: 'fo:', clock, probeMs: 0 })
    t.teardown(async () => { await store.close(); client.disconnect() })
    return { client, store, limiter: new RateLimiter(store, clock) }
  }
  const a = await instance('a')
  const b = await instance('b')
  await a.store.tick()
  await b.store.tick()
  await a.store.tick()
  t.equal(a.store.status().instances, 2)

  const admitted = async (limiter: RateLimiter, key: string, limits: Limits, n: number) => {
    let count = 0
    for (let i = 0; i < n; i++) if ((await limiter.hit(key, limits)).allowed) count++
    return count
  }
  const used = async (limiter: RateLimiter, key: string, limits: Limits) =>
    (await limiter.state(key, limits)).windows.map((w) => w.used)
  const until = async (what: string, check: () => Promise<boolean>) => {
    const deadline = Date.now() + 10_000
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }
  const down = async () => {
    await redis.kill()
    await a.store.tick()
    await b.store.tick()
  }
  const back = async (...which: typeof a[]) => {
    for (const i of which) {
      await until('Redis answering again', async () => {
        await i.store.tick()
        return !i.store.degraded
      })
    }
  }

  t.test('alone: each window\'s share of what the last answer left, and when it admits again', async (t) => {
    const limits: Limits = { minute: 10, hour: 20, day: null }
    const start = now
    t.equal(await admitted(a.limiter, 'tiers', limits, 8), 8)
    now += 120_000
    t.equal(await admitted(a.limiter, 'tiers', limits, 4), 4, 'the last answer: 4 in the minute, 12 in the hour')
    await down()
    now += 10_000
    // minute: (10 - 4) / 2 = 3; hour: (20 - 12) / 2 = 4
    t.equal(await admitted(a.limiter, 'tiers', limits, 3), 3)
    // the partner routes take this store's answers as promises, chosen once: alone too
    const windows = windowSpecs(limits)
    t.ok(a.store.hit('tiers', windows, now) instanceof Promise, 'hit: a promise while alone')
    t.ok(a.store.state('tiers', windows, now) instanceof Promise, 'state: a promise while alone')
    let refused = await a.limiter.hit('tiers', limits)
    t.same([refused.allowed, refused.refusedBy, refused.retryAfterMs], [false, 'minute', 50_000],
      'until the 4 leave the minute')
    t.same(refused.windows.map((w) => [w.limit, w.used, w.remaining]), [[5, 5, 0], [10, 9, 1], [null, 15, null]],
      'limits: the instance\'s shares; remaining: what it may still admit')
    now = start + 180_000
    t.equal(await admitted(a.limiter, 'tiers', limits, 1), 1, 'the minute\'s share is 5 now')
    refused = await a.limiter.hit('tiers', limits)
    // the 8 accepted at the start are taken to be as recent as they can be: a minute before the answer
    t.same([refused.refusedBy, refused.retryAfterMs], ['hour', start + 60_000 + 3_600_000 - now],
      'until those 8 leave the hour')
    t.same(await used(b.limiter, 'tiers', limits), [5, 10, 0],
      'b never had an answer about the partner: nothing left to it for a window\'s length')
    await redis.start()
    await back(a, b)
    await a.store.tick()
    t.same(await used(a.limiter, 'tiers', limits), [4, 16, 16], 'back: the answer put back, the 4 accepted alone added')
  })

  t.test('back from an outage: room kept for the instance that has not added what it accepted alone', async (t) => {
    const limits: Limits = { minute: 60, hour: null, day: null }
    now += 3_600_000
    for (let i = 0; i < 20; i++) t.equal((await [a, b][i % 2].limiter.hit('catch-up', limits)).allowed, true)
    t.same(await used(a.limiter, 'catch-up', limits), [20, 20, 20])
    await down()
    t.equal(await admitted(a.limiter, 'catch-up', limits, 30), 20, 'a: half of the 40 left')
    t.equal(await admitted(b.limiter, 'catch-up', limits, 30), 20, 'b: the other half')
    await redis.start()
    await back(a)
    t.equal(b.store.degraded, true, 'b has not added its 20 yet')
    t.equal(a.store.rejoining, true)
    t.same(await used(a.limiter, 'catch-up', limits), [40, 40, 40], 'the 20 of before put back, a\'s 20 added')
    const hit = await a.limiter.hit('catch-up', limits)
    t.same([hit.allowed, hit.windows[0].limit], [false, 30],
      'b\'s share kept free: 20 left in Redis, but b may have used them')
    await back(b)
    await a.store.tick()
    t.equal(a.store.rejoining, false, 'a has seen b back')
    t.same(await used(a.limiter, 'catch-up', limits), [60, 60, 60])
    t.equal((await a.limiter.hit('catch-up', limits)).allowed, false)
  })

  t.test('the rows of the requests accepted alone reach Redis with them', async (t) => {
    const limits: Limits = { minute: 30, hour: null, day: null }
    now += 3_600_000
    t.equal((await a.limiter.hit('rows', limits)).allowed, true, 'an answer before the outage')
    await down()
    for (const rows of [7, 0, 11]) {
      const r = await a.limiter.hit('rows', limits)
      t.equal(r.allowed, true)
      if (rows > 0) await a.limiter.setRows('rows', r.seq!, rows)
    }
    t.same((await a.limiter.state('rows', limits)).windows[0].rows, 18, 'alone: its own rows')
    await redis.start()
    await back(a, b)
    const windows = (await b.limiter.state('rows', limits)).windows
    // Redis came back empty: the request of before is put back from a's answer, without rows (none known)
    t.same([windows[0].used, windows[0].rows], [4, 18],
      'back: every request and the rows of those accepted alone, on any instance')
    for (const i of [a, b]) await i.store.tick() // each has seen the other back: no share kept free
    t.same([a.store.rejoining, b.store.rejoining], [false, false])
  })

  t.test('a Redis restarted empty between two probes, no command failing: noticed on reconnection', async (t) => {
    const limits: Limits = { minute: 30, hour: null, day: null }
    now += 3_600_000
    t.equal(await admitted(a.limiter, 'quick', limits, 30), 30)
    await redis.kill()
    // not once(): each reconnection refused until the server is up is an 'error', which would reject it
    const reconnected = new Promise((resolve) => a.client.once('ready', resolve))
    await redis.start()
    await reconnected
    t.equal(a.store.degraded, true)
    t.equal((await a.limiter.hit('quick', limits)).allowed, false, 'not a fresh window in the empty Redis')
    await back(a, b)
    t.same(await used(a.limiter, 'quick', limits), [30, 30, 30], 'put back')
    t.equal((await a.limiter.hit('quick', limits)).allowed, false)
  })

  t.test('alone, with the clock stepped back: a retry after Retry-After is accepted', async (t) => {
    const limits: Limits = { minute: 4, hour: null, day: null }
    now += 3_600_000
    t.same(await used(a.limiter, 'stepped', limits), [0, 0, 0], 'an answer: nothing used')
    await down()
    const start = now
    t.equal(await admitted(a.limiter, 'stepped', limits, 3), 2, 'a: half of the 4')
    now = start - 50_000 // logged at start, the two leave the minute at start + 60 s on this clock
    const r = await a.limiter.hit('stepped', limits)
    t.equal(r.allowed, false)
    const wait = Math.ceil(r.retryAfterMs! / 1000)
    const usage = await a.limiter.state('stepped', limits)
    t.equal(usage.now + usage.windows[0].resetsInMs!, start + 60_000, '/usage: resets when the two leave')
    now = start - 50_000 + wait * 1000
    t.equal((await a.limiter.hit('stepped', limits)).allowed, true,
      'a request sent Retry-After seconds later is accepted')
    now = start + 60_000
    await redis.start()
    await back(a, b)
  })
}
