// The two-generation map behind the response cache's aliases: never more than 2 × max entries,
// never a stale value, and the last `max` distinct keys used are always found.
import t from 'tap'
import { BoundedMap } from '../../src/bounded-map.ts'
import { seededRandom } from '../../src/sites/generator.ts'

t.test('the least used go first; a key found in the old generation is kept', async (t) => {
  const m = new BoundedMap<string, number>(2)
  m.set('a', 1)
  m.set('b', 2)
  m.set('c', 3) // young was full: {a, b} become the old generation
  t.same([...m.keys()], ['c', 'a', 'b'])
  t.equal(m.get('a'), 1) // back to the young generation
  t.same([...m.keys()], ['c', 'a', 'b'])
  m.set('d', 4) // young {c, a} full: it becomes old, and b (unused) is forgotten
  t.equal(m.get('b'), undefined)
  t.same([...m.keys()].sort(), ['a', 'c', 'd'])
  m.set('a', 10) // a new value for a key of the old generation
  t.equal(m.get('a'), 10)
  t.equal(m.size <= 4, true)
  m.clear()
  t.equal(m.size, 0)
  t.equal(m.get('d'), undefined)
})

t.test('max must be a positive integer', async (t) => {
  for (const bad of [0, -1, 1.5, Number.NaN]) t.throws(() => new BoundedMap(bad), RangeError)
})

t.test('random use against a model: at most 2 × max entries, no stale value, the last max keys kept', async (t) => {
  const random = seededRandom('bounded-map')
  let checks = 0
  for (let run = 0; run < 20; run++) {
    const max = 1 + Math.floor(random() * 50)
    const m = new BoundedMap<number, number>(max)
    const latest = new Map<number, number>() // every key's last value
    const recent: number[] = [] // keys used (set, or found), most recent last
    const use = (key: number) => {
      const i = recent.lastIndexOf(key)
      if (i !== -1) recent.splice(i, 1)
      recent.push(key)
    }
    for (let step = 0; step < 4000; step++) {
      const key = Math.floor(random() * max * 4)
      if (random() < 0.5) {
        const value = step
        m.set(key, value)
        latest.set(key, value)
        use(key)
      } else {
        const found = m.get(key)
        if (found !== undefined) {
          if (found !== latest.get(key)) t.fail(`run ${run} step ${step}: key ${key} gave ${found}, not ${latest.get(key)}`)
          use(key)
        }
      }
      if (m.size > 2 * max) t.fail(`run ${run} step ${step}: ${m.size} entries, max ${max}`)
      for (const k of recent.slice(-max)) {
        if (m.get(k) !== latest.get(k)) t.fail(`run ${run} step ${step}: recently used key ${k} forgotten`)
        use(k)
        checks++
      }
    }
  }
  t.ok(checks > 100_000, `${checks} checks`)
})
