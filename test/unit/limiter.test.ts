// The limiter as pure logic with an injected clock: exact windows, Retry-After, rows,
// refusals that count nothing, unlimited windows, persistence, and a model check against a
// reference sliding log.
import t from 'tap'
import {
  LocalStore, RateLimiter, logCapacity, rateLimitHeaders, retryAfterSeconds, windowSpecs
} from '../../src/limits/limiter.ts'
import { seededRandom } from '../../src/sites/generator.ts'
import { modelCheck } from '../helper.ts'
import type { Limits } from '../../src/partners/tiers.ts'

const DEMO: Limits = { minute: 30, hour: 200, day: 1000 }

function setup (start = 0) {
  let now = start
  const store = new LocalStore()
  const limiter = new RateLimiter(store, () => now)
  return { limiter, store, at: (ms: number) => { now = ms }, now: () => now }
}

t.test('30 requests at 59 s, the 31st at 61 s refused, accepted again at 119 s', async (t) => {
  const { limiter, at } = setup()
  at(59_000)
  for (let i = 0; i < 30; i++) t.ok((await limiter.hit('p', DEMO)).allowed)
  at(61_000)
  const refused = await limiter.hit('p', DEMO)
  t.equal(refused.allowed, false)
  t.equal(refused.refusedBy, 'minute')
  t.equal(refused.retryAfterMs, 58_000)
  t.equal(retryAfterSeconds(refused.retryAfterMs!), 58)
  at(118_999)
  t.equal((await limiter.hit('p', DEMO)).allowed, false, 'one ms before the window frees up')
  at(61_000 + 58_000) // exactly Retry-After seconds later
  t.equal((await limiter.hit('p', DEMO)).allowed, true, 'a request sent Retry-After seconds later is accepted')
})

t.test('Retry-After is exact to the second and always admits the retry', async (t) => {
  const random = seededRandom('retry')
  for (let round = 0; round < 200; round++) {
    const { limiter, at, now } = setup(1_000_000)
    const limits: Limits = { minute: 1 + Math.floor(random() * 5), hour: 3 + Math.floor(random() * 10), day: null }
    let time = 1_000_000
    let refused: Awaited<ReturnType<RateLimiter['hit']>> | undefined
    while (!refused) {
      time += Math.floor(random() * 20_000)
      at(time)
      const r = await limiter.hit('p', limits)
      if (!r.allowed) refused = r
    }
    const wait = retryAfterSeconds(refused.retryAfterMs!)
    at(now() + wait * 1000 - 1000)
    const early = await limiter.hit('p', limits)
    at(refused.now + wait * 1000)
    const onTime = await limiter.hit('p', limits)
    if (onTime.allowed !== true) { t.fail('retry after Retry-After was refused', { round, wait }); return }
    if (wait > 1 && early.allowed) { t.fail('Retry-After was not the shortest wait', { round, wait }); return }
  }
  t.pass('200 random histories')
})

t.test('refused requests count against nothing; hour and day untouched', async (t) => {
  const { limiter, at } = setup()
  at(1000)
  for (let i = 0; i < 30; i++) await limiter.hit('p', DEMO)
  for (let i = 0; i < 500; i++) t.equal((await limiter.hit('p', DEMO)).allowed, false)
  const { windows } = await limiter.state('p', DEMO)
  t.same(windows.map((w) => [w.name, w.used, w.remaining]), [['minute', 30, 0], ['hour', 30, 170], ['day', 30, 970]])
  at(61_000)
  t.equal((await limiter.hit('p', DEMO)).allowed, true,
    'a partner that kept calling is served once the window frees up')
})

t.test('used + remaining = limit; rows per window; resets', async (t) => {
  const { limiter, at } = setup()
  const random = seededRandom('rows')
  let time = 0
  const accepted: { time: number, rows: number }[] = []
  for (let i = 0; i < 400; i++) {
    time += Math.floor(random() * 30_000)
    at(time)
    const r = await limiter.hit('p', DEMO)
    if (r.allowed) {
      const rows = Math.floor(random() * 100)
      await limiter.setRows('p', r.seq!, rows)
      accepted.push({ time, rows })
    }
    for (const w of r.windows) {
      if (w.used + w.remaining! !== w.limit) { t.fail(`used + remaining != limit in ${w.name}`); return }
    }
  }
  const { now, windows } = await limiter.state('p', DEMO)
  for (const w of windows) {
    const inWindow = accepted.filter((a) => a.time > now - w.seconds * 1000)
    t.equal(w.used, inWindow.length, `${w.name} used`)
    t.equal(w.rows, inWindow.reduce((sum, a) => sum + a.rows, 0), `${w.name} rows`)
    t.equal(w.resetsInMs, inWindow.length === 0 ? 0 : inWindow[0].time + w.seconds * 1000 - now,
      `${w.name} resets when its oldest request leaves`)
  }
})

t.test('unlimited windows report used and rows, with null remaining and reset', async (t) => {
  const { limiter, at } = setup()
  const limits: Limits = { minute: null, hour: 5, day: null }
  at(10)
  for (let i = 0; i < 5; i++) await limiter.hit('p', limits)
  const r = await limiter.hit('p', limits)
  t.equal(r.allowed, false)
  t.equal(r.refusedBy, 'hour')
  t.same(r.windows.map((w) => [w.name, w.limit, w.used, w.remaining, w.resetsInMs]), [
    ['minute', null, 5, null, null], ['hour', 5, 5, 0, 3_600_000], ['day', null, 5, null, null]
  ])
  const all = { minute: null, hour: null, day: null }
  for (let i = 0; i < 1000; i++) t.equal((await limiter.hit('q', all)).allowed, true)
  t.equal((await limiter.state('q', all)).windows[2].used, 1000)
  const blocked = await limiter.hit('z', { minute: 0, hour: null, day: null })
  t.same([blocked.allowed, blocked.refusedBy, blocked.retryAfterMs], [false, 'minute', 60_000],
    'a limit of 0 admits nothing')
})

t.test('the longest wait wins when several windows are full', async (t) => {
  const { limiter, at } = setup()
  const limits: Limits = { minute: 2, hour: 3, day: null }
  at(0); await limiter.hit('p', limits)
  at(1000); await limiter.hit('p', limits)
  at(120_000); await limiter.hit('p', limits)
  at(121_000)
  const r = await limiter.hit('p', limits)
  t.same([r.allowed, r.refusedBy, r.retryAfterMs], [false, 'hour', 3_600_000 - 121_000])
})

t.test('headers: policy, the tightest window, GitHub-style fields', async (t) => {
  const { limiter, at } = setup()
  at(1_700_000_000_000)
  for (let i = 0; i < 12; i++) await limiter.hit('p', DEMO)
  at(1_700_000_026_400)
  const r = await limiter.hit('p', DEMO)
  t.same(rateLimitHeaders(r.windows, r.now), {
    'ratelimit-policy': '"minute";q=30;w=60, "hour";q=200;w=3600, "day";q=1000;w=86400',
    ratelimit: '"minute";r=17;t=34',
    'x-ratelimit-limit': '30',
    'x-ratelimit-remaining': '17',
    'x-ratelimit-used': '13',
    'x-ratelimit-reset': '1700000060'
  })
  const partial = await limiter.hit('u', { minute: null, hour: 50, day: null })
  t.same(rateLimitHeaders(partial.windows, partial.now)['ratelimit-policy'], '"hour";q=50;w=3600',
    'unlimited windows left out')
  const unlimited = await limiter.hit('v', { minute: null, hour: null, day: null })
  t.same(rateLimitHeaders(unlimited.windows, 0), {}, 'no limited window, no fields')
})

t.test('headers of a refusal when two windows are spent: the one that frees up last, as Retry-After', async (t) => {
  const { limiter, at } = setup()
  const limits: Limits = { minute: 2, hour: 2, day: 100 }
  at(0); await limiter.hit('p', limits)
  at(1000); await limiter.hit('p', limits)
  at(2000)
  const r = await limiter.hit('p', limits)
  t.same([r.allowed, r.refusedBy, retryAfterSeconds(r.retryAfterMs!)], [false, 'hour', 3598])
  const headers = rateLimitHeaders(r.windows, r.now)
  t.equal(headers.ratelimit, '"hour";r=0;t=3598')
  t.equal(headers['x-ratelimit-reset'], '3600')
  t.equal(headers['x-ratelimit-limit'], '2')
  const room = await limiter.hit('q', { minute: 5, hour: 5, day: 100 })
  t.equal(rateLimitHeaders(room.windows, room.now).ratelimit, '"minute";r=4;t=60',
    'with room left in both, the first of the tightest')
})

t.test('limits that change (tier or override) keep the windows exact', async (t) => {
  const { limiter, store, at } = setup()
  at(0)
  for (let i = 0; i < 30; i++) await limiter.hit('p', DEMO)
  const growth: Limits = { minute: 90, hour: 1200, day: 12000 }
  t.equal((await limiter.hit('p', growth)).allowed, true, 'more room once upgraded')
  t.equal(store.logs.get('p')!.capacity, logCapacity(windowSpecs(growth)))
  const tight: Limits = { minute: 5, hour: 200, day: 1000 }
  const r = await limiter.hit('p', tight)
  t.same([r.allowed, r.windows[0].used], [false, 31], 'a lower limit applies to what was already accepted')
})

t.test('counters saved per second and restored: never more admitted than before the restart', async (t) => {
  const { limiter, store, at } = setup()
  at(5_000_000)
  for (let i = 0; i < 25; i++) {
    at(5_000_000 + i * 100) // 25 requests over 2.5 s
    const r = await limiter.hit('p', DEMO)
    await limiter.setRows('p', r.seq!, i)
  }
  const saved = store.takeDirty(0)
  t.same(saved.map((s) => s.key), ['p'])
  t.same(saved[0].buckets, [
    { second: 5000, requests: 10, rows: 45 },
    { second: 5001, requests: 10, rows: 145 },
    { second: 5002, requests: 5, rows: 110 }
  ])
  t.same(store.takeDirty(0), [], 'nothing dirty after a save')
  t.same(store.takeDirty(5_001_000), [], 'and nothing from a later second either')

  const copy = new LocalStore()
  copy.restore('p', saved[0].buckets, 5_003_000)
  const restored = new RateLimiter(copy, () => 5_003_000)
  const { windows } = await restored.state('p', DEMO)
  t.same(windows.map((w) => [w.used, w.rows]), [[25, 300], [25, 300], [25, 300]], 'the same counts and rows')
  for (let i = 0; i < 5; i++) t.equal((await restored.hit('p', DEMO)).allowed, true)
  const refused = await restored.hit('p', DEMO)
  t.equal(refused.allowed, false, 'the 31st in the minute is refused after a restore')
  t.equal(refused.retryAfterMs, 5_000_999 + 60_000 - 5_003_000,
    'requests count from the end of their second: never earlier than they happened')
  const later = new LocalStore()
  later.restore('p', saved[0].buckets, 5_003_000 + 86_400_000)
  t.equal(later.logs.get('p')!.size, 0, 'buckets older than a day are dropped on restore')
})

t.test('a clock that steps back does not break the log', async (t) => {
  const { limiter, at } = setup()
  at(100_000)
  for (let i = 0; i < 30; i++) await limiter.hit('p', DEMO)
  at(50_000)
  const r = await limiter.hit('p', DEMO)
  t.same([r.allowed, r.retryAfterMs], [false, 110_000], 'until the 30 logged at 100 s leave the minute, on this clock')
})

t.test('a clock stepped back: Retry-After and the reset are counted on the clock the client waits by', async (t) => {
  const { limiter, at } = setup()
  const limits: Limits = { minute: 2, hour: null, day: null }
  at(100_000)
  for (let i = 0; i < 2; i++) t.equal((await limiter.hit('p', limits)).allowed, true)
  at(50_000) // stepped back 50 s: the two requests are logged at 100 s, so they leave the minute at 160 s
  const r = await limiter.hit('p', limits)
  t.equal(r.allowed, false)
  const wait = retryAfterSeconds(r.retryAfterMs!)
  const headers = rateLimitHeaders(r.windows, r.now)
  t.equal(headers['x-ratelimit-reset'], '160', 'the window frees up at 160 s on this clock')
  t.equal(headers.ratelimit, `"minute";r=0;t=${wait}`, 'RateLimit t= says the same wait as Retry-After')
  const usage = await limiter.state('p', limits)
  t.equal(usage.now + usage.windows[0].resetsInMs!, 160_000, '/usage: resets_at is when the oldest leaves')
  at(50_000 + wait * 1000 - 1000)
  t.equal((await limiter.hit('p', limits)).allowed, false, 'a second before Retry-After: still refused')
  at(50_000 + wait * 1000)
  t.equal((await limiter.hit('p', limits)).allowed, true,
    'a request sent Retry-After seconds later is accepted')
})

t.test('model check against a reference sliding log', async (t) => {
  const { limiter, at } = setup()
  const limiterAt = (now: number) => {
    at(now)
    return limiter
  }
  const disagreement = await modelCheck({ seed: 'model', runs: 40, steps: 600, limiterAt })
  t.equal(disagreement, undefined, '40 runs of 600 steps agree')
})

t.test('a limit tightened after a busy day keeps the day exact ' +
  '(the log is not cut below the day\'s limit)', async (t) => {
  const { limiter, at } = setup()
  const dayOnly: Limits = { minute: null, hour: null, day: 100 }
  for (let i = 0; i < 100; i++) {
    at(i * 10)
    t.equal((await limiter.hit('p', dayOnly)).allowed, true)
  }
  // an hour limit of 2 bounds a day at 48: the log of the 100 accepted must not shrink to that
  const tightened: Limits = { minute: null, hour: 2, day: 100 }
  at(3_700_000)
  const r = await limiter.hit('p', tightened)
  t.same([r.allowed, r.refusedBy, r.windows[2].used], [false, 'day', 100], 'the day is still full an hour later')
  t.equal(r.retryAfterMs, 86_400_000 - 3_700_000, 'until the 100th most recent leaves the day')
})

t.test('requests of a day under looser limits stay counted when the log is over its new capacity', async (t) => {
  const { limiter, at } = setup()
  const hourly: Limits = { minute: null, hour: 10, day: null } // a log of 240 entries a day
  for (let i = 0; i < 200; i++) {
    at(i * 360_000) // 10 an hour for 20 hours
    t.equal((await limiter.hit('p', hourly)).allowed, true)
  }
  const tighter: Limits = { minute: null, hour: 1, day: null } // 24 a day: below the 200 held
  at(199 * 360_000 + 3_600_001) // the last hour is free
  const one = await limiter.hit('p', tighter)
  t.same([one.allowed, one.windows[2].used], [true, 201], 'the unlimited day counts all 201')
  at(199 * 360_000 + 3_660_001)
  t.same((await limiter.state('p', tighter)).windows.map((w) => w.used), [0, 1, 201],
    'a minute later the day still holds all 201')
  const capped: Limits = { minute: null, hour: 10, day: 201 }
  const r = await limiter.hit('p', capped)
  t.same([r.allowed, r.refusedBy, r.windows[2].used], [false, 'day', 201],
    'a day limit set later sees every request of the day')
})
