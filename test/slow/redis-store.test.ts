// The limiter's Redis store against a real redis-server: the same model check as the in-process
// store (a reference sliding log), exact under concurrency from three clients (three instances),
// rows, usage state, a clock that steps back, and requests merged in after an outage.
import t, { type Test } from 'tap'
import { Redis } from 'ioredis'
import { RateLimiter, rateLimitHeaders, retryAfterSeconds, windowSpecs } from '../../src/limits/limiter.ts'
import { RedisStore } from '../../src/limits/redis-store.ts'
import { PartnerDirectory } from '../../src/partners/directory.ts'
import { CHANGES_KEPT, RedisPartnerStore } from '../../src/partners/redis-store.ts'
import { PartnerStore, controlPath } from '../../src/partners/store.ts'
import { scriptDeadline } from '../../src/shared-state/script-deadline.ts'
import { tokenDigest } from '../../src/partners/tokens.ts'
import type { Limits } from '../../src/partners/tiers.ts'
import { skippedWithoutRedis, startRedis } from '../redis.ts'
import { modelCheck, tmpDataDir } from '../helper.ts'

if (!skippedWithoutRedis(t)) {
  const redis = await startRedis(t)
  const clients = [0, 1, 2].map(() => new Redis(redis.url))
  t.teardown(() => { for (const c of clients) c.disconnect() })
  let now = Date.UTC(2026, 10, 21, 12)
  const limiters = clients.map((c) => new RateLimiter(new RedisStore(c, 'test:'), () => now))
  /** An instance's control.db, and the partners in Redis under `prefix`, for a PartnerDirectory of both. */
  const stores = (t: Test, prefix: string) => {
    const control = new PartnerStore(controlPath(tmpDataDir(t, 'lsp-directory-')))
    t.teardown(() => control.close())
    return { control, shared: new RedisPartnerStore(clients[0], prefix) }
  }

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
    // each instance records the rows of the requests it admitted (their numbers are its own)
    await limiters[0].setRows('rows', a.seq!, 12)
    await limiters[1].setRows('rows', b.seq!, 3)
    await limiters[0].setRows('rows', 999_999, 50) // unknown seq: ignored
    const { windows } = await limiters[2].state('rows', limits)
    t.same(windows.map((w) => [w.used, w.rows, w.remaining, w.resetsInMs]),
      [[2, 15, 3, 60_000], [2, 15, null, null], [2, 15, null, null]])
    now -= 30_000
    const back = await limiters[0].hit('rows', limits)
    t.equal(back.allowed, true)
    t.equal(back.now, now, 'the clock read')
    now += 30_000
    t.equal((await limiters[0].state('rows', limits)).windows[0].used, 3)
  })

  t.test('a clock stepped back (or an instance behind another): a retry after Retry-After is accepted', async (t) => {
    const limits: Limits = { minute: 2, hour: null, day: null }
    const start = now
    for (let i = 0; i < 2; i++) t.equal((await limiters[0].hit('behind', limits)).allowed, true)
    now = start - 50_000 // logged at start, they leave the minute at start + 60 s on this clock
    const r = await limiters[1].hit('behind', limits)
    t.equal(r.allowed, false)
    const wait = retryAfterSeconds(r.retryAfterMs!)
    t.equal(rateLimitHeaders(r.windows, r.now)['x-ratelimit-reset'], String(Math.ceil((start + 60_000) / 1000)),
      'the window frees up at start + 60 s')
    const usage = await limiters[2].state('behind', limits)
    t.equal(usage.now + usage.windows[0].resetsInMs!, start + 60_000, '/usage: resets_at is when the oldest leaves')
    now = start - 50_000 + wait * 1000
    t.equal((await limiters[1].hit('behind', limits)).allowed, true,
      'a request sent Retry-After seconds later is accepted')
    now = start + 60_000
  })

  /** The partners' version: moved by every write. */
  const versionOf = async (store: RedisPartnerStore) => (await store.state()).version
  const reasonOf = (p: Promise<unknown>) => p.then(() => 'no error', (err: { reason?: string }) => err.reason)
  /** Every key of a partners' store: deleting them is a Redis that lost its data. */
  const partnerKeys = (prefix: string) =>
    ['partners', 'partner-digests', 'partners:version', 'partners:epoch', 'partners:changes'].map((k) => prefix + k)

  t.test('partners in Redis: unique slugs, the digest index kept right, rows checked', async (t) => {
    const store = new RedisPartnerStore(clients[1], 'ptest:')
    const { partner, token } = await store.create({ name: 'Acme', tier: 'growth' })
    t.equal(await reasonOf(store.create({ name: 'Acme again', slug: 'acme' })), 'conflict')
    t.equal(await reasonOf(store.update('nobody', { name: 'x' })), 'not_found')
    t.equal(await reasonOf(store.update('acme', { limitOverrides: { minute: 0 } })), 'invalid')
    const digests = async () => Object.keys(await clients[1].hgetall('ptest:partner-digests'))
    t.same(await digests(), [tokenDigest(token)])
    const v1 = await versionOf(store)
    const rotated = await store.rotate('acme')
    t.same(await digests(), [tokenDigest(rotated.token)], 'the old digest is gone from the index')
    t.ok(await versionOf(store) > v1, 'every write moves the version')
    const updated = await store.update('acme', { categories: [7, 4, 4], siteById: true })
    t.same([updated.id, updated.categories, updated.siteById], [partner.id, [4, 7], true])
    const rows = await store.exportRows()
    t.equal(await reasonOf(store.importRows([{ ...rows[0], token_sha256: 'nope' }])), 'invalid')
    t.same(await store.importRows(rows), { created: 0, replaced: 1 })
    t.same((await store.exportRows()).map((r) => r.token_sha256), [tokenDigest(rotated.token)])
  })

  t.test('partners put back into a Redis that lost them: in one step, ' +
    'never over a partner written since', async (t) => {
    const source = new RedisPartnerStore(clients[0], 'rtest-source:')
    for (const name of ['Alpha', 'Bravo', 'Charlie', 'Delta']) await source.create({ name, tier: 'growth' })
    const rows = await source.exportRows()
    const store = new RedisPartnerStore(clients[1], 'rtest:')
    const other = new RedisPartnerStore(clients[2], 'rtest:')
    t.equal(await versionOf(store), 0)
    t.equal(await reasonOf(store.mergeRows([{ ...rows[0], token_sha256: 'nope' }])), 'invalid', 'rows checked')
    t.equal(await clients[1].hlen('rtest:partners'), 0)
    // an operator's write lands first (Redis came back empty): Bravo anew, with another token
    const { partner: bravo } = await store.create({ name: 'Bravo', tier: 'scale' })
    const versionAfterCreate = await versionOf(store)
    // two instances at once: both merge; the rows go in once, Bravo's new row stays
    const written = await Promise.all([store.mergeRows(rows), other.mergeRows(rows)])
    t.same(written.sort(), [0, 3])
    t.equal(await versionOf(store), versionAfterCreate + 1,
      'the version moved once (a row at a time would be 3 steps, each readable)')
    const now = await store.exportRows()
    t.same(now.map((r) => r.slug), ['alpha', 'bravo', 'charlie', 'delta'])
    t.equal(now.find((r) => r.slug === 'bravo')!.id, bravo.id, 'the partner written since the loss is kept')
    const bravoNow = now.find((r) => r.slug === 'bravo')!
    t.same(Object.keys(await clients[1].hgetall('rtest:partner-digests')).sort(),
      [...rows.filter((r) => r.slug !== 'bravo').map((r) => r.token_sha256), bravoNow.token_sha256].sort())
    t.equal(await store.mergeRows(rows), 0, 'nothing missing, nothing written')
  })

  t.test('an instance puts the partners back even when an operator wrote one first ' +
    '(issue: a store with one partner refused every other token)', async (t) => {
    const { control, shared } = stores(t, 'rtest-dir:')
    const alpha = await shared.create({ name: 'Alpha' })
    const bravo = await shared.create({ name: 'Bravo' })
    const directory = new PartnerDirectory(control, shared)
    t.same(await directory.refreshShared(), { restored: false, changed: 2 })
    t.equal(directory.byToken(alpha.token)?.slug, 'alpha')
    // Redis restarts empty; the CLI creates a partner before this instance looks again
    await clients[0].del(...partnerKeys('rtest-dir:'))
    const charlie = await shared.create({ name: 'Charlie' })
    t.same(await directory.refreshShared(), { restored: true, changed: 3 })
    t.same([alpha, bravo, charlie].map((p) => directory.byToken(p.token)?.slug), ['alpha', 'bravo', 'charlie'])
    t.same((await shared.exportRows()).map((r) => r.slug), ['alpha', 'bravo', 'charlie'],
      'and put back into Redis for every instance')
    t.same(await directory.refreshShared(), { restored: false, changed: 0 })
    const rotated = await shared.rotate('bravo')
    t.same(await directory.refreshShared(), { restored: false, changed: 1 }, 'after the loss, changes one by one again')
    t.same([directory.byToken(bravo.token), directory.byToken(rotated.token)?.slug], [undefined, 'bravo'])
  })

  t.test('an instance reads again only the partners written since its last look', async (t) => {
    const { control, shared } = stores(t, 'rtest-changes:')
    const tokens: string[] = []
    for (let i = 0; i < 50; i++) tokens.push((await shared.create({ name: `Partner ${i}` })).token)
    const directory = new PartnerDirectory(control, shared)
    t.same(await directory.refreshShared(), { restored: false, changed: 50 })
    t.equal(directory.rowsRead, 50)
    t.same(await directory.refreshShared(), { restored: false, changed: 0 }, 'nothing written: nothing read')
    t.equal(directory.rowsRead, 50)

    await shared.update('partner-7', { status: 'suspended' })
    t.same(await directory.refreshShared(), { restored: false, changed: 1 })
    t.equal(directory.rowsRead, 51, 'one row read')
    t.equal(directory.byToken(tokens[7])?.status, 'suspended')
    const rotated = await shared.rotate('partner-8')
    await shared.update('partner-8', { maxResults: 8 })
    await shared.update('partner-9', { maxResults: 9 })
    t.same(await directory.refreshShared(), { restored: false, changed: 2 }, 'three writes of two partners')
    t.same([directory.byToken(tokens[8]), directory.byToken(rotated.token)?.maxResults], [undefined, 8])
    const rows = await shared.exportRows()
    const row = (slug: string) => rows.find((r) => r.slug === slug)!
    // an import swaps two partners' digests and adds one
    const added = { ...row('partner-1'), slug: 'added', id: 'ptn_00000000beef', token_sha256: tokenDigest('lsp_added') }
    await shared.importRows([{ ...row('partner-1'), token_sha256: row('partner-2').token_sha256 },
      { ...row('partner-2'), token_sha256: row('partner-1').token_sha256 }, added])
    t.same(await directory.refreshShared(), { restored: false, changed: 3 })
    t.same([tokens[1], tokens[2], 'lsp_added'].map((token) => directory.byToken(token)?.slug),
      ['partner-2', 'partner-1', 'added'])
    t.equal(directory.rowsRead, 56)
    t.equal(directory.size, 51)
  })

  t.test('a write without its change noted (an older CLI), or a list that no longer reaches back: ' +
    'everything read again', async (t) => {
    const { control, shared } = stores(t, 'rtest-unnoted:')
    for (const name of ['Alpha', 'Bravo', 'Charlie']) await shared.create({ name })
    const directory = new PartnerDirectory(control, shared)
    await directory.refreshShared()
    // as a build before the changes list wrote: the row and the version, nothing else
    const alpha = { ...JSON.parse((await clients[0].hget('rtest-unnoted:partners', 'alpha'))!), max_results: 5 }
    await clients[0].hset('rtest-unnoted:partners', 'alpha', JSON.stringify(alpha))
    await clients[0].incr('rtest-unnoted:partners:version')
    await shared.update('bravo', { maxResults: 6 }) // noted: the list alone would miss alpha
    t.same(await directory.refreshShared(), { restored: false, changed: 3 })
    t.equal((await shared.get('alpha')).maxResults, 5)
    const token = (await shared.rotate('alpha')).token
    t.same(await directory.refreshShared(), { restored: false, changed: 1 }, 'then one by one again')
    t.equal(directory.byToken(token)?.maxResults, 5)
    for (let i = 0; i <= CHANGES_KEPT; i++) await shared.update('charlie', { maxResults: 1 + (i % 100) })
    t.equal(await clients[0].llen('rtest-unnoted:partners:changes'), CHANGES_KEPT)
    t.same(await directory.refreshShared(), { restored: false, changed: 3 }, 'further behind than the list')
  })

  t.test('the epoch changes only when Redis lost the partners', async (t) => {
    const store = new RedisPartnerStore(clients[0], 'rtest-epoch:')
    const first = await store.state()
    t.same(first.version, 0)
    await store.create({ name: 'Echo' })
    const second = await store.state()
    t.equal(second.epoch, first.epoch, 'writes keep it')
    t.equal(second.version, 1)
    await clients[0].del(...partnerKeys('rtest-epoch:'))
    await store.create({ name: 'Foxtrot' })
    t.not((await store.state()).epoch, first.epoch, 'a store that lost its data has a new one, whoever writes first')
  })

  t.test('a change writes only its fields; a rotation moves the index', async (t) => {
    const store = new RedisPartnerStore(clients[0], 'rtest-patch:')
    const { partner, token } = await store.create({ name: 'Golf', tier: 'growth' })
    // two changes at once, each of one field: both take effect
    await Promise.all([
      store.update('golf', { status: 'suspended' }),
      store.update('golf', { maxResults: 7 }),
      store.update('golf', { limitOverrides: { hour: 50 } })
    ])
    const after = await store.get('golf')
    t.same([after.status, after.maxResults, after.limitOverrides, after.tier, after.id],
      ['suspended', 7, { minute: null, hour: 50, day: null }, 'growth', partner.id])
    const rotated = await store.rotate('golf')
    const digests = await clients[0].hgetall('rtest-patch:partner-digests')
    t.same(Object.values(digests), ['golf'])
    t.notOk(Object.keys(digests).includes(tokenDigest(token)), 'the old digest is gone')
    t.ok(Object.keys(digests).includes(tokenDigest(rotated.token)))
    t.equal((await store.get('golf')).maxResults, 7, 'the rotation kept the other fields')
    t.equal(await reasonOf(store.update('nobody', { status: 'active' })), 'not_found')
  })

  t.test('after an outage: each request put back once, by its name, with its rows; ' +
    'those refused alone taken out', async (t) => {
    const store = new RedisStore(clients[0], 'test:')
    const limits: Limits = { minute: 10, hour: null, day: null }
    const seconds = [60, 3600, 86400]
    const admitted = await store.hit('merged', windowSpecs(limits), now - 2000)
    const late = await store.hit('merged', windowSpecs(limits), now - 1000) // its answer lost here: refused alone
    t.same([admitted.allowed, late.allowed], [true, true])
    const requests = [
      { id: admitted.seq!, time: now - 2000, rows: 5 }, // in Redis already, its rows not yet
      { id: store.newId(), time: now - 5000, rows: 7 }, { id: store.newId(), time: now - 4000, rows: 0 },
      { id: store.newId(), time: now - 70_000, rows: 100 }, { id: store.newId(), time: now - 86_400_000, rows: 1 }
    ]
    await store.putBack('merged', seconds, requests, [late.seq!], now)
    const { windows } = await limiters[1].state('merged', limits)
    t.same(windows.map((w) => w.used), [3, 4, 4],
      'the one in Redis once, the one refused alone taken out, the one of a day ago left out')
    t.same([windows[0].rows, windows[1].rows], [12, 112], 'their rows too')
    const used = (minute: number, hour: number, day: number) =>
      [{ seconds: 60, used: minute }, { seconds: 3600, used: hour }, { seconds: 86400, used: day }]
    t.same(store.answers.get('merged'), { at: now, windows: used(3, 4, 4) }, 'the answer remembered')
    const log = async () => await clients[0].zrange('test:rl:{merged}:log', 0, -1, 'WITHSCORES')
    const before = await log()
    t.same(before.filter((_, i) => i % 2 === 1).map((time) => Number(time) - now), [-70_000, -5000, -4000, -2000],
      'each at its own time')
    await store.putBack('merged', seconds, requests, [late.seq!], now, false)
    await store.putBack('merged', seconds, requests.slice(1, 3), [], now, false)
    t.same(await log(), before, 'put back again, whole or in part: nothing added')
    t.same((await limiters[1].state('merged', limits)).windows.map((w) => w.rows), [12, 112, 112])
    const other = new RedisStore(clients[1], 'test:')
    t.not(other.tag, store.tag, 'another instance names its requests otherwise')
    await other.putBack('merged', seconds, [{ id: requests[1].id, time: now - 5000, rows: 0 }], [], now)
    t.equal((await limiters[1].state('merged', limits)).windows[0].used, 4,
      'the same number from another instance is another request')
  })

  t.test('a script that reaches Redis after its command timed out here changes nothing', async (t) => {
    const client = new Redis(redis.url, { commandTimeout: 500 })
    t.teardown(() => client.disconnect())
    const store = new RedisStore(client, 'test:')
    const limits: Limits = { minute: 10, hour: null, day: null }
    const limiter = new RateLimiter(store, () => now)
    store.deadlines.clockOffsetMs = -60_000 // as if it had waited a minute in a Redis that hung
    await t.rejects(store.hit('late', windowSpecs(limits), now), { message: /after its command had timed out here/ })
    t.same((await limiters[0].state('late', limits)).windows.map((w) => w.used), [0, 0, 0])
    store.deadlines.clockOffsetMs = 0
    t.equal((await limiter.hit('late', limits)).allowed, true, 'in time: recorded')
  })

  t.test('a rotation whose command timed out here is not applied by a Redis that was slow and goes on', async (t) => {
    const client = new Redis(redis.url, { commandTimeout: 1000 })
    const other = new Redis(redis.url)
    t.teardown(() => { client.disconnect(); other.disconnect() })
    const store = new RedisPartnerStore(client, 'rtest-slow:')
    const { token } = await store.create({ name: 'India' })
    await store.update('india', { maxResults: 5 }) // the script is loaded: a later call is one EVALSHA
    // for 1.5 s Redis holds every write it receives (reads are answered), then runs them
    await other.call('CLIENT', 'PAUSE', '1500', 'WRITE')
    await t.rejects(store.rotate('india'), { message: 'Command timed out' }, 'the CLI exits 1 and prints no token')
    await client.ping() // answered after the rotation's script (at the pause's end): Redis has run or refused it
    t.same(await client.hgetall('rtest-slow:partner-digests'), { [tokenDigest(token)]: 'india' },
      'the working token still works')
    t.equal((await store.get('india')).maxResults, 5)
  })

  t.test('every partner write that reaches Redis after its deadline changes nothing', async (t) => {
    const client = new Redis(redis.url, { commandTimeout: 500 })
    t.teardown(() => client.disconnect())
    const store = new RedisPartnerStore(client, 'rtest-late:')
    const { token } = await store.create({ name: 'Juliet' })
    const rows = await store.exportRows()
    const stored = async () => [
      await client.hgetall('rtest-late:partners'),
      await client.hgetall('rtest-late:partner-digests'),
      await versionOf(store)
    ]
    const before = await stored()
    scriptDeadline(client).clockOffsetMs = -60_000 // as if each had waited a minute in a Redis that hung
    const late = { message: /after its deadline/ }
    await t.rejects(store.create({ name: 'Kilo' }), late)
    await t.rejects(store.update('juliet', { status: 'suspended' }), late)
    await t.rejects(store.rotate('juliet'), late)
    await t.rejects(store.importRows([{ ...rows[0], name: 'Juliet renamed' }]), late)
    t.same(await stored(), before, 'nothing written')
    await client.del('rtest-late:partners', 'rtest-late:partner-digests') // Redis lost them
    await t.rejects(store.mergeRows(rows), late)
    t.equal(await client.hlen('rtest-late:partners'), 0, 'nothing put back')
    scriptDeadline(client).clockOffsetMs = 0
    t.equal(await store.mergeRows(rows), 1, 'in time: put back')
    t.same((await store.exportRows()).map((r) => r.token_sha256), [tokenDigest(token)])
  })

  t.test('partners imported in one script: checked against each other and what Redis keeps, ' +
    'then all written or none', async (t) => {
    const store = new RedisPartnerStore(clients[0], 'rtest-import:')
    const source = new RedisPartnerStore(clients[0], 'rtest-import-source:')
    for (const name of ['Lima', 'Mike', 'November']) await source.create({ name })
    const [lima, mike, november] = await source.exportRows()
    t.same(await store.importRows([lima]), { created: 1, replaced: 0 })
    const version = await versionOf(store)
    const message = (p: Promise<unknown>) => p.then(() => 'no error', (err: Error) => err.message)
    const withNovember = (change: Partial<typeof november>) =>
      message(store.importRows([mike, { ...november, ...change }]))
    t.equal(await withNovember({ slug: 'mike' }), 'partner "mike" is in the file twice')
    t.equal(await withNovember({ id: mike.id }), 'partner "november": its id is also partner "mike"\'s')
    t.equal(await withNovember({ token_sha256: mike.token_sha256 }),
      'partner "november": its token_sha256 is also partner "mike"\'s')
    t.equal(await withNovember({ id: lima.id }),
      'partner "november": its id is also partner "lima"\'s, in the shared state')
    t.equal(await withNovember({ token_sha256: lima.token_sha256 }),
      'partner "november": its token_sha256 is also partner "lima"\'s, in the shared state')
    t.same([await versionOf(store), (await store.exportRows()).map((r) => r.slug)],
      [version, ['lima']], 'none written')
    // lima replaced by a row with another id and token: its old ones are free for the others
    t.same(await store.importRows([
      mike,
      { ...lima, id: november.id, token_sha256: november.token_sha256 },
      { ...november, id: lima.id, token_sha256: lima.token_sha256 }
    ]), { created: 2, replaced: 1 })
    t.same(await clients[0].hgetall('rtest-import:partner-digests'),
      { [mike.token_sha256]: 'mike', [november.token_sha256]: 'lima', [lima.token_sha256]: 'november' })
    t.equal(await versionOf(store), version + 1, 'the version moved once')
  })
}
