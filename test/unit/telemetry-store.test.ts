// The in-process telemetry feed in control.db (real SQLite): saved and restored as it was (the
// same block), only new events written, each partner trimmed to the feed's size, a failed save
// kept for the next; TelemetryFeed.block is a promise; the history sees every event recorded.
import t from 'tap'
import Database from 'better-sqlite3'
import { join } from 'node:path'
import { TelemetryFeed, type TelemetryEvent } from '../../src/usage/telemetry.ts'
import { readSavedEvents, restoreTelemetry, telemetrySaver } from '../../src/usage/telemetry-store.ts'
import { HistoryCounter } from '../../src/usage/history.ts'
import { tmpDataDir } from '../helper.ts'

const T0 = Date.UTC(2026, 10, 23, 10)
const event = (n: number, status = 200): TelemetryEvent => ({
  timestamp: T0 + n * 1000, endpoint: n % 2 ? 'sites' : 'nearest', status, rows: n, durationMs: n + 0.25,
  dataset: n % 3 ? 'sandbox' : null, cache: 'miss'
})

t.test('saved, restored and read back as recorded', async (t) => {
  const db = new Database(join(tmpDataDir(t), 'control.db'))
  t.teardown(() => db.close())
  const history = new HistoryCounter()
  const feed = new TelemetryFeed(5, { history })
  const save = telemetrySaver(db, feed)
  for (let n = 1; n <= 3; n++) feed.record('p', event(n))
  save()
  t.equal(db.prepare('SELECT count(*) FROM telemetry_events').pluck().get(), 3)
  for (let n = 4; n <= 12; n++) feed.record('p', event(n, n === 12 ? 404 : 200))
  feed.record('q', event(1))
  const changes = () => db.prepare('SELECT total_changes()').pluck().get() as number
  const seqsOfP = () => db.prepare("SELECT seq FROM telemetry_events WHERE partner_id = 'p' ORDER BY seq").pluck().all()
  let before = changes()
  save()
  t.equal(changes() - before, 5 + 1 + 3,
    'written: the 5 events of p still in the feed, the one of q; the 3 saved before removed')
  t.same(seqsOfP(), [8, 9, 10, 11, 12], 'the last 5 of 12 kept')
  before = changes()
  save()
  t.equal(changes() - before, 0, 'nothing new: nothing written')
  const block = feed.block('p', T0 + 20_000)
  t.type(block, Promise, 'block is a promise')

  const restored = new TelemetryFeed(5)
  t.equal(restoreTelemetry(db, restored), 2, 'two partners restored')
  t.same(await restored.block('p', T0 + 20_000), await block, 'the same block after a restart')
  t.same(readSavedEvents(db, 'p', 5), feed.events('p'), 'the CLI reads the feed newest first')
  t.same(readSavedEvents(db, 'q', 5), [event(1)])

  // the restarted feed goes on numbering after the saved events
  const saveRestored = telemetrySaver(db, restored)
  restored.record('p', event(13))
  saveRestored()
  t.same(seqsOfP(), [9, 10, 11, 12, 13])
  t.same(readSavedEvents(db, 'p', 5)[0], event(13))

  const day = history.deltas().get('p')!.values().next().value!
  t.same([day.requests, day.rows, [...day.statuses]], [12, 78, [[404, 1]]], 'every recorded event went to the history')
})

t.test('a failed save is written by the next', async (t) => {
  const db = new Database(join(tmpDataDir(t), 'control.db'))
  t.teardown(() => db.close())
  const feed = new TelemetryFeed(5)
  const save = telemetrySaver(db, feed)
  feed.record('p', event(1))
  db.exec("CREATE TRIGGER fail BEFORE INSERT ON telemetry_events BEGIN SELECT RAISE(ABORT, 'disk full'); END")
  t.throws(save, /disk full/)
  feed.record('p', event(2))
  db.exec('DROP TRIGGER fail')
  save()
  t.same(readSavedEvents(db, 'p'), [event(2), event(1)])
  t.same(readSavedEvents(new Database(':memory:'), 'p'), [], 'no table yet: no events')
})
