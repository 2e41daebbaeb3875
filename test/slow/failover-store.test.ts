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
import { setTimeout as sleep } from 'node:timers/promises'

if (!skippedWithoutRedis(t)) {
  const redis = await startRedis(t)
  let now = Date.UTC(2026, 10, 21, 12)
  const clock = () => now
  const quiet = { error () {}, info () {}, warn () {} } as unknown as FastifyBaseLogger
  /** a's warnings */
  const warned: string[] = []
  const instance = async (id: string) => {
    // as plugins/shared-state.ts connects, with reconnections a little faster
    const client = new Redis(redis.url,
      { enableOfflineQueue: false, maxRetriesPerRequest: 0, commandTimeout: 500, retryStrategy: () => 50 })
    client.on('error', () => {})
    await once(client, 'ready')
    const log = id === 'a' ? { ...quiet, warn: (_: object, msg: string) => { warned.push(msg) } } : quiet
    const store = new FailoverStore(client, new RedisStore(client, 'fo:'), id, log,
      { clock, probeMs: 0 })
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
  /** Redis hangs (answers nothing, keeps its data): each instance's heartbeat times out */
  const hang = async () => {
    redis.pause()
    await Promise.all([a.store.tick(), b.store.tick()])
  }
  /**
   * Ticks the instances in turn, in this order, until each uses Redis again; both: until each has
   * seen the other back, so that no room is kept for it any more (alone again, it would be kept).
   */
  const back = async (...which: typeof a[]) => {
    await until('Redis answering again', async () => {
      for (const i of which) await i.store.tick()
      return which.every((i) => !i.store.degraded)
    })
    if (which.length < 2) return
    await until('each instance seeing the other back', async () => {
      for (const i of which) await i.store.tick()
      return which.every((i) => !i.store.rejoining)
    })
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
    const unknown = await b.limiter.hit('tiers', limits)
    t.same([unknown.allowed, unknown.unavailable, unknown.retryAfterMs], [false, true, 5000],
      'nor does it refuse as if a window were full: it cannot know, and says when to ask again')
    t.equal(unknown.refusedBy, undefined)
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
    await hang()
    t.same([a.store.degraded, b.store.degraded], [true, true])
    t.equal(await admitted(a.limiter, 'catch-up', limits, 30), 20, 'a: half of the 40 left')
    t.equal(await admitted(b.limiter, 'catch-up', limits, 30), 20, 'b: the other half')
    redis.resume()
    await back(a)
    t.equal(b.store.degraded, true, 'b has not added its 20 yet')
    t.equal(a.store.rejoining, true)
    t.same(await used(a.limiter, 'catch-up', limits), [40, 40, 40], 'the 20 of before, and a\'s 20 added')
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

  t.test('Redis restarted empty three times: each request put back once, whichever instance comes back first',
    async (t) => {
      const limits: Limits = { minute: null, hour: 250, day: null }
      now += 3_600_000
      const start = now
      // taking turns a second apart: b's last answer is a second later than a's, and knows one more
      for (let i = 0; i < 100; i++) {
        t.equal((await [a, b][i % 2].limiter.hit('thrice', limits)).allowed, true)
        now += 1000
      }
      // asked of b: its answer is now the latest, a's the one of its last request
      const before = await used(b.limiter, 'thrice', limits)
      t.same(before, [59, 100, 100], `the windows (a and b degraded: ${a.store.degraded}, ${b.store.degraded})`)
      for (let restart = 1; restart <= 3; restart++) {
        await down()
        await redis.start()
        await until('both connected again', async () => a.client.status === 'ready' && b.client.status === 'ready')
        await back(b, a)
        for (const i of [a, b]) {
          t.same(await used(i.limiter, 'thrice', limits), before, `restart ${restart}: the same windows`)
        }
      }
      for (const i of [a, b]) await i.store.tick() // each has seen the other back: no share kept free
      t.equal(await admitted(a.limiter, 'thrice', limits, 200), 150, 'the 150 left of the hour, no more')
      const refused = await b.limiter.hit('thrice', limits)
      t.same([refused.refusedBy, refused.retryAfterMs], ['hour', start + 3_600_000 - now],
        'until the first request of the hour leaves it: its own time, not a time made up')
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

  t.test('Redis hangs with requests in flight: those it admits count in the instance\'s own view, ' +
    'answered in time or not', async (t) => {
    const limits: Limits = { minute: 20, hour: null, day: null }
    now += 3_600_000
    t.same(await used(a.limiter, 'stalled', limits), [0, 0, 0], 'an answer: nothing used')
    redis.pause()
    const first = a.limiter.hit('stalled', limits) // times out here 500 ms on: a limits alone from then
    await sleep(300)
    const inFlight = Array.from({ length: 8 }, () => a.limiter.hit('stalled', limits))
    await sleep(220) // the first has timed out: Redis goes on and runs the others in time
    redis.resume()
    const results = await Promise.all([first, ...inFlight])
    t.equal(a.store.degraded, true)
    t.same(results.map((r) => r.allowed), Array(9).fill(true), 'the first admitted alone, the 8 others by Redis')
    t.same(results.map((r) => r.seq! < 0), [true, ...Array(8).fill(false)])
    t.equal(await admitted(a.limiter, 'stalled', limits, 10), 1,
      'a\'s share is 10 of the 20: the 8 admitted by Redis after a went alone count in it')
    await back(a)
    t.same(await used(b.limiter, 'stalled', limits), [10, 10, 10], 'each request in Redis once')
    await back(a, b)
  })

  t.test('Redis refuses writes (maxmemory reached): limiting alone with the windows it can still read, ' +
    'saying why', async (t) => {
    const limits: Limits = { minute: 10, hour: null, day: null }
    now += 3_600_000
    const admin = new Redis(redis.url)
    t.teardown(() => admin.disconnect())
    t.same(await used(a.limiter, 'full', limits), [0, 0, 0], 'a has an answer about the partner; b none')
    await admin.config('SET', 'maxmemory-policy', 'noeviction')
    await admin.config('SET', 'maxmemory', '1')
    for (const i of [a, b]) {
      await i.store.tick() // the heartbeat is refused
      t.match(i.store.status(), { connected: false, error: /^OOM command not allowed/ }, 'Redis\'s reason in /readyz')
    }
    t.equal(await admitted(a.limiter, 'full', limits, 10), 5, 'a: half of the 10 left')
    t.equal(await admitted(b.limiter, 'full', limits, 10), 5,
      'b read the windows it knew nothing of: half of the 10 left, not a refusal')
    for (const i of [a, b]) {
      await i.store.tick()
      t.match(i.store.status(), { connected: false, error: /^OOM command not allowed/, unavailable_answers: 0 },
        'still alone after a probe (a write)')
    }
    await admin.config('SET', 'maxmemory', '0')
    await back(a, b)
    t.same(await used(a.limiter, 'full', limits), [10, 10, 10], 'the 10 accepted alone added')
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

  t.test('50,000 a day, 60,000 requests over two instances, Redis restarted empty: exactly 50,000', async (t) => {
    const limits: Limits = { minute: null, hour: null, day: 50_000 }
    now += 3_600_000
    let accepted = 0
    for (let i = 0; i < 600; i++) {
      const hits = Array.from({ length: 100 }, (_, j) => [a, b][j % 2].limiter.hit('busy', limits))
      accepted += (await Promise.all(hits)).filter((r) => r.allowed).length
      now += 1000
    }
    t.equal(accepted, 50_000)
    t.equal((await used(b.limiter, 'busy', limits))[2], 50_000)
    await down()
    await redis.start()
    await until('both connected again', async () => a.client.status === 'ready' && b.client.status === 'ready')
    await back(a, b)
    for (const i of [a, b]) t.equal((await used(i.limiter, 'busy', limits))[2], 50_000, 'each put back once')
    t.equal((await a.limiter.hit('busy', limits)).allowed, false)
  })

  t.test('Redis restarted empty: the instance back first waits for the others to put back theirs, ' +
    'and for an instance that never comes back, INSTANCE_STALE_MS', async (t) => {
    const limits: Limits = { minute: 30, hour: null, day: null }
    now += 3_600_000
    const c = await instance('c')
    for (const i of [c, a, b]) await i.store.tick()
    t.equal(a.store.status().instances, 3)
    for (let i = 0; i < 15; i++) t.equal((await [a, b, c][i % 3].limiter.hit('waited', limits)).allowed, true)
    t.same(await used(a.limiter, 'waited', limits), [15, 15, 15])
    await down()
    await c.store.tick()
    await redis.start()
    await until('all connected again', async () => [a, b, c].every((i) => i.client.status === 'ready'))
    warned.length = 0
    await a.store.tick()
    t.match(a.store.status(), {
      connected: false, error: 'the shared state lost its data: waiting for 2 other instance(s) to put back the ' +
        'requests they accepted'
    }, 'a put back its 5, and limits alone until b and c have put back theirs')
    t.same(await used(b.limiter, 'waited', limits), [5, 14, 14],
      'b, alone too, knows 14 used (c\'s last request came after its last answer): its share, 5')
    t.equal(await admitted(a.limiter, 'waited', limits, 10), 5, 'a: a third of the 15 left')
    await b.store.tick()
    await a.store.tick()
    t.equal(a.store.degraded, true, 'c, silent, has not put back its 5')
    const waited = Date.now()
    await until('a to stop waiting for c', async () => {
      await a.store.tick()
      return !a.store.degraded
    })
    t.ok(Date.now() - waited > 5000, 'a waited for c until INSTANCE_STALE_MS after it saw the loss')
    t.match(warned, [/lost its data/, /instances did not put back their requests .* within 10 s/])
    await back(b)
    t.same(await used(a.limiter, 'waited', limits), [15, 15, 15],
      'a\'s and b\'s 10 put back, a\'s 5 accepted alone added; c\'s 5 went with it')
    await c.store.close()
  })
}
