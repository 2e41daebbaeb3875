// The daily usage history: what the counter makes of events, the days as the CLI prints them,
// and control.db's store (real SQLite): deltas of several instances add up, the busiest minute
// is exact whatever the order of the flushes, a failed flush loses and doubles nothing, old days
// go. Redis's store: the same sums from two instances, and a batch Redis ran after its sender had
// given up on it (a Redis that hung) is added once, not twice.
import t, { type Test } from 'tap'
import Database from 'better-sqlite3'
import { Redis } from 'ioredis'
import { once } from 'node:events'
import { join } from 'node:path'
import { HistoryCounter, dateOf, dayRecord, lastDays, type DayRecord } from '../../src/usage/history.ts'
import { SqliteHistory, readSqliteHistory } from '../../src/usage/history-sqlite.ts'
import { RedisHistory, readRedisHistory } from '../../src/usage/history-redis.ts'
import { tmpDataDir } from '../helper.ts'
import { redisMissing, startRedis } from '../redis.ts'

// today (UTC): Redis expires the days at absolute times, which must be ahead of the clock
const DAY = Math.floor(Date.now() / 86_400_000) * 86_400_000
const D0 = dateOf(DAY / 86_400_000)
const D1 = dateOf(DAY / 86_400_000 - 1)
const D2 = dateOf(DAY / 86_400_000 - 2)
const at = (h: number, m: number, s = 0) => DAY + ((h * 60 + m) * 60 + s) * 1000
const ev = (timestamp: number, status = 200, rows = 0) => ({ timestamp, status, rows })

/** Known traffic: 10:00 has 3 answers, 10:01 has 4 (two 429), 23:59 of the day before 1. */
function traffic (counter: HistoryCounter) {
  counter.record('p', ev(at(10, 0, 1), 200, 5))
  counter.record('p', ev(at(10, 0, 2), 400))
  counter.record('p', ev(at(10, 0, 59), 200, 7))
  counter.record('p', ev(at(10, 1, 0), 404))
  counter.record('p', ev(at(10, 1, 1), 429))
  counter.record('p', ev(at(10, 1, 2), 429))
  counter.record('p', ev(at(10, 1, 3), 503))
  counter.record('p', ev(DAY - 1000, 304))
  counter.record('q', ev(at(12, 0), 200, 1))
}

const expectedDay: DayRecord = {
  date: D0,
  requests: 7,
  accepted: 5,
  refused: 2,
  client_errors: { 400: 1, 404: 1 },
  server_errors: { 503: 1 },
  rows: 12,
  busiest_minute: { minute: `${D0}T10:01Z`, requests: 4 }
}

t.test('the counter: deltas per partner and day, statuses from 400, requests per minute', async (t) => {
  const counter = new HistoryCounter()
  t.ok(counter.empty)
  traffic(counter)
  const deltas = counter.deltas()
  counter.clear()
  t.ok(counter.empty, 'taken: it starts again from nothing')
  const p = deltas.get('p')!
  const today = p.get(Math.floor(DAY / 86_400_000))!
  t.same([today.requests, today.rows], [7, 12])
  t.same([...today.statuses].sort(), [[400, 1], [404, 1], [429, 2], [503, 1]])
  t.same([...today.minutes], [[Math.floor(at(10, 0) / 60_000), 3], [Math.floor(at(10, 1) / 60_000), 4]])
  const yesterday = p.get(Math.floor(DAY / 86_400_000) - 1)!
  t.same([yesterday.requests, yesterday.statuses.size], [1, 0], 'a 304 the day before: a request, no error')
  t.equal(deltas.get('q')!.size, 1)

  // deltas read but not cleared (a failed flush): what comes since is counted on into them
  traffic(counter)
  t.equal(counter.deltas().get('p')!.get(Math.floor(DAY / 86_400_000))!.requests, 7)
  traffic(counter)
  counter.record('p', ev(at(10, 1, 30), 200, 1))
  const merged = counter.deltas().get('p')!.get(Math.floor(DAY / 86_400_000))!
  t.same([merged.requests, merged.rows, merged.minutes.get(Math.floor(at(10, 1) / 60_000))], [15, 25, 9],
    'not cleared: what was read stays, with what came since')
})

t.test('a day as printed, and the last N days oldest first', async (t) => {
  const fields = {
    requests: 7, rows: 12, s400: 1, s404: 1, s429: 2, s503: 1, bm: Math.floor(at(10, 1) / 60_000), bc: 4
  }
  t.same(dayRecord(D0, fields), expectedDay)
  t.same(dayRecord(D1, {}), {
    date: D1, requests: 0, accepted: 0, refused: 0, client_errors: {}, server_errors: {}, rows: 0, busiest_minute: null
  })
  const days = lastDays(new Map([[D2, { requests: 2 }]]), at(15, 0), 3)
  t.same(days.map((d) => [d.date, d.requests]), [[D2, 2], [D1, 0], [D0, 0]])
})

const sqlite = (t: Test) => {
  const db = new Database(join(tmpDataDir(t), 'control.db'))
  t.teardown(() => db.close())
  return db
}

t.test('control.db: two instances\' deltas add up, the busiest minute exact in any order', async (t) => {
  const db = sqlite(t)
  const history = new SqliteHistory(db, 90)
  const a = new HistoryCounter()
  const b = new HistoryCounter()
  // the same traffic split over two instances and four flushes: 10:01's four requests arrive 1 + 3
  a.record('p', ev(at(10, 0, 1), 200, 5))
  a.record('p', ev(at(10, 1, 0), 404))
  history.flush(a, at(10, 2))
  b.record('p', ev(at(10, 0, 2), 400))
  b.record('p', ev(at(10, 0, 59), 200, 7))
  history.flush(b, at(10, 2))
  t.same(dayRecord(D0, readSqliteHistory(db, 'p', D0, D0).get(D0)!).busiest_minute,
    { minute: `${D0}T10:00Z`, requests: 3 }, '10:00 is busiest so far')
  b.record('p', ev(at(10, 1, 1), 429))
  b.record('p', ev(at(10, 1, 2), 429))
  history.flush(b, at(10, 2))
  t.same(dayRecord(D0, readSqliteHistory(db, 'p', D0, D0).get(D0)!).busiest_minute,
    { minute: `${D0}T10:00Z`, requests: 3 }, 'a tie of 3: the earlier minute')
  a.record('p', ev(at(10, 1, 3), 503))
  a.record('p', ev(DAY - 1000, 304))
  history.flush(a, at(10, 2))
  const stored = readSqliteHistory(db, 'p', D1, D0)
  t.same(dayRecord(D0, stored.get(D0)!), expectedDay)
  t.same(dayRecord(D1, stored.get(D1)!).requests, 1)
})

t.test('control.db: a failed flush keeps its deltas for the next, adding nothing twice', async (t) => {
  const db = sqlite(t)
  const history = new SqliteHistory(db, 90)
  const counter = new HistoryCounter()
  traffic(counter)
  history.flush(counter, at(10, 2))
  traffic(counter)
  // a write that fails half-way: the transaction is rolled back
  db.exec("CREATE TRIGGER fail BEFORE INSERT ON usage_minutes WHEN NEW.partner_id = 'q' " +
    "BEGIN SELECT RAISE(ABORT, 'disk full'); END")
  t.throws(() => history.flush(counter, at(10, 3)), /disk full/)
  t.same(readSqliteHistory(db, 'p', D0, D0).get(D0)!.requests, 7, 'nothing of the failed flush is stored')
  db.exec('DROP TRIGGER fail')
  history.flush(counter, at(10, 4))
  const day = dayRecord(D0, readSqliteHistory(db, 'p', D0, D0).get(D0)!)
  t.same([day.requests, day.refused, day.rows, day.busiest_minute],
    [14, 4, 24, { minute: `${D0}T10:01Z`, requests: 8 }], 'then all of it, once')
  t.equal(readSqliteHistory(db, 'q', D0, D0).get(D0)!.requests, 2)
})

t.test('control.db: days older than the days kept are removed', async (t) => {
  const db = sqlite(t)
  const history = new SqliteHistory(db, 3)
  const counter = new HistoryCounter()
  for (let d = 0; d < 5; d++) counter.record('p', ev(DAY - d * 86_400_000 + 1000))
  history.flush(counter, DAY + 1000)
  t.same([...readSqliteHistory(db, 'p', '0000-01-01', '9999-12-31').keys()].sort(), [D2, D1, D0],
    'today and the two days before')
  t.same(db.prepare('SELECT min(minute) FROM usage_minutes').pluck().get(),
    Math.floor((DAY - 86_400_000 + 1000) / 60_000), 'minute counts from yesterday on')
})

t.test('Redis: two instances add up; ' +
  'a batch run after its sender gave up is added once', { skip: redisMissing() }, async (t) => {
  const server = await startRedis(t)
  const connect = () => {
    // as plugins/shared-state.ts connects: fail fast, 500 ms per command
    const c = new Redis(server.url, { enableOfflineQueue: false, maxRetriesPerRequest: 0, commandTimeout: 500 })
    c.on('error', () => {})
    t.teardown(() => c.disconnect())
    return c
  }
  const [ra, rb] = [connect(), connect()]
  await Promise.all([ra, rb].map((c) => once(c, 'ready')))
  const a = { counter: new HistoryCounter(), history: new RedisHistory(ra, 90, 'instance-a', 'test:') }
  const b = { counter: new HistoryCounter(), history: new RedisHistory(rb, 90, 'instance-b', 'test:') }
  a.counter.record('p', ev(at(10, 0, 1), 200, 5))
  a.counter.record('p', ev(at(10, 1, 0), 404))
  a.counter.record('p', ev(at(10, 1, 3), 503))
  b.counter.record('p', ev(at(10, 0, 2), 400))
  b.counter.record('p', ev(at(10, 0, 59), 200, 7))
  b.counter.record('p', ev(at(10, 1, 1), 429))
  b.counter.record('p', ev(DAY - 1000, 304))
  await Promise.all([a.history.flush(a.counter), b.history.flush(b.counter)])
  // Redis hangs while a flush is on its way: the command times out here, Redis runs it later
  a.counter.record('p', ev(at(10, 1, 2), 429))
  server.pause()
  await t.rejects(a.history.flush(a.counter), /timed? ?out/i)
  t.equal(a.history.unsent, 1, 'the batch is kept, with its number')
  server.resume()
  await new Promise((resolve) => setTimeout(resolve, 300))
  a.counter.record('p', ev(at(10, 5), 200, 0))
  await a.history.flush(a.counter) // sends the kept batch again: Redis has it already
  t.equal(a.history.unsent, 0)
  await a.history.flush(a.counter) // then what came since
  const stored = await readRedisHistory(ra, 'p', D1, D0, 'test:')
  t.same(dayRecord(D0, stored.get(D0)!), { ...expectedDay, requests: 8, accepted: 6 },
    'every count once (and one more request at 10:05)')
  t.equal(stored.get(D1)!.requests, 1)
  t.equal(await ra.call('PEXPIRETIME', `test:uh:{p}:${D0}`), DAY + 90 * 86_400_000,
    'the day expires when it is no longer kept')
  t.same(await ra.hgetall(`test:ub:{p}:${D0}`), { 'instance-a': '3', 'instance-b': '1' },
    'the last batch added from each instance')
})
