// The accepted-request log: a window's start found by walking on from the last one is always the
// binary search's answer, whatever the log does in between (growth, wrap-around, drops, resizes,
// a start that moves back or far on).
import t from 'tap'
import { AcceptLog } from '../../src/limits/accept-log.ts'
import { seededRandom } from '../../src/sites/generator.ts'

t.test('windowStart agrees with firstAfter through growth, wrap-around, drops, evictions and resizes', async (t) => {
  const random = seededRandom('accept-log')
  const windows = [60_000, 3_600_000, 86_400_000, 5_000]
  let checks = 0
  let walkedFar = 0
  let movedBack = 0
  for (let run = 0; run < 30; run++) {
    const capacity = 1 + Math.floor(random() * 3000)
    const log = new AcceptLog(capacity, 4, capacity + Math.floor(random() * 1000)) // a maximum that evicts
    let now = 0
    for (let step = 0; step < 3000; step++) {
      const r = random()
      if (r < 0.6) {
        now += random() < 0.2 ? 0 : Math.floor(random() * 2000) // equal times too
        log.push(now)
      } else if (r < 0.62) {
        now += Math.floor(random() * 4_000_000) // a long pause: a window's start moves far on
        walkedFar++
      } else if (r < 0.64) {
        const until = now - 86_400_000 * random()
        const expected = log.size - log.firstAfter(until)
        log.dropUntil(until)
        if (log.size !== expected || (log.size > 0 && log.at(0) <= until)) {
          t.fail(`run ${run} step ${step}: dropUntil(${until}) left ${log.size} entries, not ${expected}`)
          return
        }
      } else if (r < 0.65) {
        log.resize(1 + Math.floor(random() * 3000))
      }
      const w = windows[Math.floor(random() * windows.length)]
      let after = now - w
      if (random() < 0.05) {
        after -= Math.floor(random() * 100_000) // a start that moved back
        movedBack++
      }
      const expected = log.firstAfter(after)
      const got = log.windowStart(w, after)
      if (got !== expected) {
        t.fail(`run ${run} step ${step}: window ${w}, after ${after}: ${got} instead of ${expected} (size ${log.size})`)
        return
      }
      checks++
    }
  }
  t.ok(walkedFar > 500 && movedBack > 3000, `${walkedFar} long pauses, ${movedBack} starts moved back`)
  t.equal(checks, 90_000, 'every step checked')
})

t.test('dropUntil drops exactly the entries at or before the time, from the oldest end', async (t) => {
  const log = new AcceptLog(100, 4)
  for (const time of [1, 2, 2, 3, 5, 8, 13, 21, 34, 55, 89]) log.push(time)
  log.dropUntil(2)
  t.same([log.size, log.at(0)], [8, 3])
  log.dropUntil(0)
  t.equal(log.size, 8, 'nothing older: nothing dropped')
  log.dropUntil(60)
  t.same([log.size, log.at(0)], [1, 89])
  const big = new AcceptLog(10_000, 4)
  for (let i = 0; i < 5000; i++) big.push(i)
  big.dropUntil(4321)
  t.same([big.size, big.at(0), big.nextSeq], [678, 4322, 5000], 'a drop longer than the walk is searched')
  big.dropUntil(99_999)
  t.equal(big.size, 0)
})

t.test('past its capacity the log grows, keeping every entry; only at its maximum does the oldest leave', async (t) => {
  const log = new AcceptLog(4, 2, 10)
  for (let i = 0; i < 10; i++) log.push(i, i)
  t.same([log.size, log.at(0), log.recent(1)], [10, 0, 9], 'ten kept with a capacity of four')
  log.resize(2)
  t.same([log.size, log.at(0)], [10, 0], 'a lower capacity drops nothing')
  log.push(10, 10)
  log.push(11, 11)
  t.same([log.size, log.at(0), log.rowsAt(0), log.recent(1), log.nextSeq], [10, 2, 2, 11, 12],
    'at the maximum the oldest leave')
  log.dropUntil(8)
  t.same([log.size, log.at(0)], [3, 9], 'entries leave by age')
  log.setRows(11, 7)
  t.equal(log.rowsAt(2), 7, 'entries are still addressed by their sequence number')
})
