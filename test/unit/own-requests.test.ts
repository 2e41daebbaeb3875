// The requests one instance accepted for a partner: those not yet in Redis's log (accepted alone)
// are the ones added when it answers again, all of them when it lost its data; rows set by number;
// a day's requests kept, within a bound.
import t from 'tap'
import { OwnRequests } from '../../src/limits/own-requests.ts'

t.test('what is added: the requests since the first accepted alone, or all', async (t) => {
  const own = new OwnRequests()
  own.push(1, 1000, true)
  own.push(2, 2000, true)
  own.push(5, 3000, false) // accepted alone
  own.push(3, 3000, true) // admitted by Redis, its answer after the one above
  own.push(6, 4000, false)
  own.setRows(5, 7)
  own.setRows(1, 2)
  own.setRows(99, 1) // not kept: nothing
  const alone = own.toAdd(false)
  t.same(alone.requests, [
    { id: 5, time: 3000, rows: 7 }, { id: 3, time: 3000, rows: 0 }, { id: 6, time: 4000, rows: 0 }
  ], 'from the first one not in Redis on (one already there is added by name: nothing)')
  t.same(own.toAdd(true).requests.map((r) => r.id), [1, 2, 5, 3, 6])
  own.push(7, 5000, true) // admitted by Redis while they are being added
  own.added(alone.upTo)
  t.same(own.toAdd(false).requests.map((r) => r.id), [7], 'sent again, it adds nothing')
  own.added(own.toAdd(false).upTo)
  own.push(8, 6000, true)
  t.same(own.toAdd(false).requests.map((r) => r.id), [], 'all in Redis')
  own.push(9, 6000, false)
  t.same(own.toAdd(false).requests.map((r) => r.id), [9])
  t.equal(own.rowsAfter(2500), 7)
  own.dropUntil(3000)
  t.same([own.size, own.toAdd(true).requests.map((r) => r.id)], [4, [6, 7, 8, 9]], 'a day ago and before: dropped')
})

t.test('at its bound, the oldest request leaves', async (t) => {
  const own = new OwnRequests(40)
  for (let id = 1; id <= 50; id++) own.push(id, id * 1000, id <= 45) // the last five accepted alone
  t.equal(own.size, 40)
  t.same(own.toAdd(true).requests.map((r) => r.id), Array.from({ length: 40 }, (_, i) => i + 11))
  t.same(own.toAdd(false).requests.map((r) => r.id), [46, 47, 48, 49, 50])
})
