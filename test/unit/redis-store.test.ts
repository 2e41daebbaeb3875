// The limiter's Redis store against a real redis-server: the same model check as the in-process
// store (a reference sliding log), exact under concurrency from three clients (three instances),
// rows, usage state, a clock that steps back, and requests merged in after an outage.
import t from 'tap'
import { Redis } from 'ioredis'
import { RateLimiter, windowSpecs } from '../../src/limits/limiter.ts'
import { RedisStore } from '../../src/limits/redis-store.ts'
import { RedisPartnerStore } from '../../src/partners/redis-store.ts'
import { tokenDigest } from '../../src/partners/tokens.ts'
import type { Limits } from '../../src/partners/tiers.ts'
import { skippedWithoutRedis, startRedis } from '../redis.ts'
import { modelCheck } from '../helper.ts'

if (!skippedWithoutRedis(t)) {
  const redis = await startRedis(t)
  const clients = [0, 1, 2].map(() => new Redis(redis.url))
  t.teardown(() => { for (const c of clients) c.disconnect() })
  let now = Date.UTC(2026, 10, 21, 12)
  const limiters = clients.map((c) => new RateLimiter(new RedisStore(c, 'test:'), () => now))

  t.test('model check against a reference sliding log, the three instances taking turns', async (t) => {
    const disagreement = await modelCheck({
      seed: 'redis-model',
      runs: 12,
      steps: 300,
      limiterAt: (at, random) => { now = at; return limiters[Math.floor(random() * 3)] }
    })
    t.equal(disagreement, undefined, '12 runs of 300 steps agree')
  })

  t.test('100 simultaneous requests through three instances at a limit of 30: exactly 30', async (t) => {
    const limits: Limits = { minute: 30, hour: 200, day: 1000 }
    const results = await Promise.all(Array.from({ length: 100 }, (_, i) => limiters[i % 3].hit('crowd', limits)))
    t.equal(results.filter((r) => r.allowed).length, 30)
    const refused = results.filter((r) => !r.allowed)
    t.ok(refused.every((r) => r.refusedBy === 'minute' && r.retryAfterMs === 60_000))
    const { windows } = await limiters[1].state('crowd', limits)
    t.same(windows.map((w) => [w.name, w.used, w.remaining]), [['minute', 30, 0], ['hour', 30, 170], ['day', 30, 970]])
  })

  t.test('rows, unlimited windows, and a clock that steps back', async (t) => {
    const limits: Limits = { minute: 5, hour: null, day: null }
    const a = await limiters[0].hit('rows', limits)
    const b = await limiters[1].hit('rows', limits)
    await limiters[2].setRows('rows', a.seq!, 12)
    await limiters[0].setRows('rows', b.seq!, 3)
    await limiters[0].setRows('rows', 999_999, 50) // unknown seq: ignored
    const { windows } = await limiters[2].state('rows', limits)
    t.same(windows.map((w) => [w.used, w.rows, w.remaining, w.resetsInMs]), [[2, 15, 3, 60_000], [2, 15, null, null], [2, 15, null, null]])
    now -= 30_000
    const back = await limiters[0].hit('rows', limits)
    t.equal(back.allowed, true)
    t.equal(back.now, now, 'the clock read')
    now += 30_000
    t.equal((await limiters[0].state('rows', limits)).windows[0].used, 3)
  })

  const reasonOf = (p: Promise<unknown>) => p.then(() => 'no error', (err: { reason?: string }) => err.reason)

  t.test('partners in Redis: unique slugs, the digest index kept right, rows checked', async (t) => {
    const store = new RedisPartnerStore(clients[1], 'ptest:')
    const { partner, token } = await store.create({ name: 'Acme', tier: 'growth' })
    t.equal(await reasonOf(store.create({ name: 'Acme again', slug: 'acme' })), 'conflict')
    t.equal(await reasonOf(store.update('nobody', { name: 'x' })), 'not_found')
    t.equal(await reasonOf(store.update('acme', { limitOverrides: { minute: 0 } })), 'invalid')
    const digests = async () => Object.keys(await clients[1].hgetall('ptest:partner-digests'))
    t.same(await digests(), [tokenDigest(token)])
    const v1 = await store.version()
    const rotated = await store.rotate('acme')
    t.same(await digests(), [tokenDigest(rotated.token)], 'the old digest is gone from the index')
    t.ok(await store.version() > v1, 'every write moves the version')
    const updated = await store.update('acme', { categories: [7, 4, 4], siteById: true })
    t.same([updated.id, updated.categories, updated.siteById], [partner.id, [4, 7], true])
    const rows = await store.exportRows()
    t.equal(await reasonOf(store.importRows([{ ...rows[0], token_sha256: 'nope' }])), 'invalid')
    t.same(await store.importRows(rows), { created: 0, replaced: 1 })
    t.same((await store.listWithDigests()).map((e) => e.digest), [tokenDigest(rotated.token)])
  })

  t.test('partners put back into a Redis that lost them: all in one step, and only once', async (t) => {
    const source = new RedisPartnerStore(clients[0], 'rtest-source:')
    for (const name of ['Alpha', 'Bravo', 'Charlie', 'Delta']) await source.create({ name, tier: 'growth' })
    const rows = await source.exportRows()
    const store = new RedisPartnerStore(clients[1], 'rtest:')
    const other = new RedisPartnerStore(clients[2], 'rtest:')
    t.equal(await store.version(), 0)
    t.equal(await reasonOf(store.restoreRows([{ ...rows[0], token_sha256: 'nope' }])), 'invalid', 'rows checked')
    t.equal(await clients[1].hlen('rtest:partners'), 0)
    // two instances at once: one puts the rows back, the other finds them there
    const outcomes = await Promise.all([store.restoreRows(rows), other.restoreRows(rows)])
    t.same(outcomes.sort(), [false, true])
    t.equal(await store.version(), 1, 'the version moved once (a row at a time would be 4 steps, each readable)')
    t.same(await store.exportRows(), rows)
    t.same(Object.keys(await clients[1].hgetall('rtest:partner-digests')).sort(), rows.map((r) => r.token_sha256).sort())
    t.equal(await store.restoreRows(rows.slice(0, 1)), false, 'a store with partners is left alone')
    t.equal(await clients[1].hlen('rtest:partners'), 4)
    t.equal(await store.version(), 1)
  })

  t.test('after an outage: what was known put back where the log lacks it, then the requests accepted alone', async (t) => {
    const store = new RedisStore(clients[0], 'test:')
    const limits: Limits = { minute: 10, hour: null, day: null }
    const seconds = [60, 3600, 86400]
    await store.rejoin('merged', seconds, undefined, [now - 5000, now - 4000, now - 3000, now - 70_000], now)
    let { windows } = await limiters[1].state('merged', limits)
    t.same([windows[0].used, windows[1].used], [3, 4])
    t.same(store.answers.get('merged'), { at: now, windows: [{ seconds: 60, used: 3 }, { seconds: 3600, used: 4 }, { seconds: 86400, used: 4 }] }, 'the answer remembered')

    // known now: 2 a minute, 5 an hour, 9 a day; the log has 3, 4 and 4 of them
    const known = { at: now, windows: [{ seconds: 60, used: 2 }, { seconds: 3600, used: 5 }, { seconds: 86400, used: 9 }] }
    await store.rejoin('merged', seconds, known, [], now)
    ;({ windows } = await limiters[1].state('merged', limits))
    t.same(windows.map((w) => w.used), [3, 5, 9], 'the minute had them; one more in the hour, four more in the day')
    const log = await clients[0].zrange('test:rl:{merged}:log', 0, -1, 'WITHSCORES')
    t.same(log.filter((_, i) => i % 2 === 1).map((s) => Number(s) - now),
      [-3_600_000, -3_600_000, -3_600_000, -3_600_000, -70_000, -60_000, -5000, -4000, -3000], 'each put back at the latest time it can have')
    await store.rejoin('merged', seconds, known, [], now)
    t.same((await limiters[1].state('merged', limits)).windows.map((w) => w.used), [3, 5, 9], 'put back once: a second instance knowing the same adds nothing')
  })

  t.test('a script that reaches Redis after its command timed out here changes nothing', async (t) => {
    const client = new Redis(redis.url, { commandTimeout: 500 })
    t.teardown(() => client.disconnect())
    const store = new RedisStore(client, 'test:')
    const limits: Limits = { minute: 10, hour: null, day: null }
    const limiter = new RateLimiter(store, () => now)
    store.clockOffsetMs = -60_000 // as if it had waited a minute in a Redis that hung
    await t.rejects(store.hit('late', windowSpecs(limits), now), { message: /after its command had timed out here/ })
    await t.rejects(store.rejoin('late', [60], undefined, [now], now), { message: /after its command had timed out here/ })
    t.same((await limiters[0].state('late', limits)).windows.map((w) => w.used), [0, 0, 0])
    store.clockOffsetMs = 0
    t.equal((await limiter.hit('late', limits)).allowed, true, 'in time: recorded')
  })
}
