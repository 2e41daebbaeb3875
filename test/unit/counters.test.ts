// The in-process counters saved to control.db (real SQLite) and restored, with an injected clock:
// whatever the clock does between saves, every accepted request and its rows reach the save.
import t, { type Test } from 'tap'
import Database from 'better-sqlite3'
import { join } from 'node:path'
import { counterSaver, restoreCounters } from '../../src/limits/counters.ts'
import { LocalStore, RateLimiter } from '../../src/limits/limiter.ts'
import type { Limits } from '../../src/partners/tiers.ts'
import { tmpDataDir } from '../helper.ts'

const LIMITS: Limits = { minute: 100, hour: 1000, day: 10_000 }

function setup (t: Test, start: number) {
  const db = new Database(join(tmpDataDir(t), 'control.db'))
  t.teardown(() => db.close())
  let now = start
  const store = new LocalStore()
  restoreCounters(db, store, now)
  const clock = () => now
  return {
    db,
    store,
    limiter: new RateLimiter(store, clock),
    save: counterSaver(db, store, clock),
    at: (ms: number) => { now = ms }
  }
}

/** A new process on the same control.db: what it restores. */
async function restoredUsed (db: Database.Database, now: number, key: string) {
  const store = new LocalStore()
  restoreCounters(db, store, now)
  return (await new RateLimiter(store, () => now).state(key, LIMITS)).windows.map((w) => [w.used, w.rows])
}

t.test('a clock that ran ahead and was stepped back: the requests accepted since are saved', async (t) => {
  const T = Date.UTC(2026, 10, 21, 12)
  const { db, limiter, save, at } = setup(t, T)
  at(T + 3_600_000) // the clock runs an hour ahead: a request of partner a, and a save
  t.equal((await limiter.hit('a', LIMITS)).allowed, true)
  save()
  at(T + 1000) // set right again: partner b's first requests
  for (let i = 0; i < 3; i++) t.equal((await limiter.hit('b', LIMITS)).allowed, true)
  save()
  t.same(await restoredUsed(db, T + 2000, 'b'), [[3, 0], [3, 0], [3, 0]],
    'after a restart, b\'s 3 requests are still counted')
})

t.test('the rows of a request answered more than 10 s after it was accepted are saved', async (t) => {
  const T = Date.UTC(2026, 10, 21, 12)
  const { db, limiter, save, at } = setup(t, T)
  const slow = await limiter.hit('p', LIMITS)
  save()
  at(T + 30_000) // a long answer: its rows are known 30 s later, after other saves
  await limiter.hit('q', LIMITS)
  save()
  await limiter.setRows('p', slow.seq!, 500)
  save()
  t.same(await restoredUsed(db, T + 31_000, 'p'), [[1, 500], [1, 500], [1, 500]],
    'after a restart, its 500 rows are still counted')
})
