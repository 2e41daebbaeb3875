// pageOf, which picks a page of a box's positions (or of their slots) in order without sorting them all, against a
// full sort: spread and clustered positions, datasets smaller and larger than its buckets, pages across bucket edges
// and past the end.
import t from 'tap'
import { pageOf } from '../../src/sites/areas.ts'
import { seededRandom } from '../../src/sites/generator.ts'

t.test('every page equals the same ranks of the sorted positions', async (t) => {
  const random = seededRandom('box pages')
  let checked = 0
  // one set of buckets for every page, as a route group's scratch is used again by each request
  const buckets = new Uint32Array(1024)
  // a slot for each position, as a tree's order would give (any one-to-one map)
  const slotOf = (p: number) => (p * 2_654_435_761) >>> 0
  for (const count of [1, 7, 1000, 1024, 1025, 5000, 1_000_000]) {
    for (let round = 0; round < 40; round++) {
      // distinct positions below count: spread over it, or clustered in a narrow run of it
      const n = Math.min(count, 1 + Math.floor(random() * 3000))
      const span = round % 2 === 0 ? count : Math.min(count, n + Math.floor(random() * 50))
      const start = Math.floor(random() * (count - span + 1))
      const chosen = new Set<number>()
      while (chosen.size < n) chosen.add(start + Math.floor(random() * span))
      const positions = Uint32Array.from(chosen)
      const sorted = Array.from(chosen).sort((a, b) => a - b)
      for (const size of [1, 3, 200, 500]) {
        for (const from of [0, size, Math.floor(random() * n), n - 1, n, n + 5]) {
          const got = Array.from(pageOf(positions.slice(), from, size, count, buckets))
          const expected = sorted.slice(from, from + size)
          // with each position's slot beside it: the page's slots in position order
          const gotSlots = Array.from(pageOf(positions.slice(), from, size, count, buckets, positions.map(slotOf)))
          const expectedSlots = expected.map(slotOf)
          if (got.join() !== expected.join() || gotSlots.join() !== expectedSlots.join()) {
            t.same(got, expected, `count ${count}, ${n} positions, from ${from}, size ${size}`)
            t.same(gotSlots, expectedSlots, `slots: count ${count}, ${n} positions, from ${from}, size ${size}`)
            return
          }
          checked++
        }
      }
    }
  }
  t.pass(`${checked} pages equal those of a full sort`)
})
