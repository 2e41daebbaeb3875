// A Redis that stalls longer than the 500 ms command timeout, again and again, under load: two
// instances (the real app, in process, on the real clock: the scripts' deadlines are on it) sharing
// a real redis-server, two partners at 200 and 300 a minute sent 20-40 requests a second each over
// both instances, while Redis sleeps (DEBUG SLEEP) or is stopped (SIGSTOP) for 0.7 s every second
// for 14 s. Requests in flight when an instance goes alone may be admitted by Redis, answered in
// time or not: no more than the limit is admitted in the minute, and, once Redis is steady again,
// each request admitted is in the shared windows once.
import t, { type Test } from 'tap'
import { Redis } from 'ioredis'
import type { FastifyInstance } from 'fastify'
import { RedisPartnerStore } from '../../src/partners/redis-store.ts'
import { partnerCalls, sharedInstance } from '../helper.ts'
import { sleep, until } from '../latency.ts'
import { skippedWithoutRedis, startRedis } from '../redis.ts'

if (!skippedWithoutRedis(t)) {
  const redis = await startRedis(t)
  const admin = new Redis(redis.url)
  t.teardown(() => admin.disconnect())
  const partners = new RedisPartnerStore(admin)
  const tokens: Record<string, string> = {}
  for (const [slug, minute] of [['s200', 200], ['s300', 300], ['p200', 200], ['p300', 300]] as const) {
    tokens[slug] = (await partners.create({ name: slug, slug, tier: 'demo' })).token
    await partners.update(slug, { limitOverrides: { minute, hour: 'unlimited', day: 'unlimited' } })
  }
  const both = [await sharedInstance(t, redis.url), await sharedInstance(t, redis.url)]
  const { get, window } = partnerCalls(tokens)
  const used = async (app: FastifyInstance, slug: string) => (await window(app, slug, 'minute')).used
  const steady = () => until('both instances on Redis, and each seeing the other back', () =>
    both.every((app) => !app.sharedState!.degraded && !app.sharedState!.rejoining), 30_000)

  /**
   * For 14 s, `stall` every second, and each partner sent a request every 35 ms (about 29 a second)
   * taking turns over both instances, each answered when it is (not waited for). The statuses by partner.
   */
  const load = async (slugs: string[], stall: () => Promise<void>) => {
    await until('both instances counting two', () => both.every((app) => app.sharedState!.status().instances === 2),
      30_000)
    // every instance has had an answer about each partner (none used)
    for (const app of both) for (const slug of slugs) t.equal(await used(app, slug), 0)
    const answers = new Map(slugs.map((slug) => [slug, [] as Promise<number>[]]))
    let turn = 0
    const sender = setInterval(() => {
      turn++
      for (const slug of slugs) answers.get(slug)!.push(get(both[turn % 2], slug).then((r) => r.statusCode))
    }, 35)
    const started = Date.now()
    while (Date.now() - started < 14_000) {
      await sleep(300)
      await stall()
    }
    clearInterval(sender)
    const statuses = new Map<string, number[]>()
    for (const [slug, list] of answers) statuses.set(slug, await Promise.all(list))
    return statuses
  }

  const check = async (t: Test, statuses: Map<string, number[]>, limits: Record<string, number>) => {
    await steady()
    for (const [slug, list] of statuses) {
      const accepted = list.filter((s) => s === 200).length
      t.ok(list.every((s) => s === 200 || s === 429), `${slug}: only 200s and 429s (${list.length} requests)`)
      t.ok(list.length > limits[slug], `${slug}: more requests than its limit were sent`)
      t.ok(accepted > 0 && accepted <= limits[slug],
        `${slug}: ${accepted} accepted in the minute, some and at most ${limits[slug]} a minute`)
      for (const app of both) {
        t.equal(await used(app, slug), accepted, `${slug}: each request admitted is in the shared window once`)
      }
    }
  }

  t.test('Redis sleeping 0.7 s every second for 14 s: no more than the limit', async (t) => {
    const statuses = await load(['s200', 's300'], async () => {
      await admin.call('DEBUG', 'SLEEP', '0.7')
    })
    await check(t, statuses, { s200: 200, s300: 300 })
  })

  t.test('Redis stopped 0.7 s every second for 14 s: no more than the limit', async (t) => {
    const statuses = await load(['p200', 'p300'], async () => {
      redis.pause()
      await sleep(700)
      redis.resume()
    })
    await check(t, statuses, { p200: 200, p300: 300 })
  })
}
