// Record fragments within a memory limit: past it, the oldest chunk not used since it last came up
// is forgotten at an answer's start and its fragments are made again when asked for; every answer
// stays byte for byte.
import t from 'tap'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { FragmentMemory } from '../../src/answers/fragment-memory.ts'
import { FragmentStore, type Placed } from '../../src/answers/records.ts'
import { seededRandom } from '../../src/sites/generator.ts'

const CHUNK = FragmentMemory.CHUNK_BYTES

t.test('answers stay byte for byte while chunks are forgotten and their fragments made again', async (t) => {
  const count = 12_000
  const random = seededRandom('fragment memory')
  // about 2 kB a fragment: some 4,000 to a chunk, three chunks for every site of one store
  const text = (form: string) => (p: number) =>
    JSON.stringify({ form, p, pad: String.fromCharCode(97 + (p % 26)).repeat(1000 + ((p * 7919) % 2000)) })
  const memory = new FragmentMemory(3 * CHUNK)
  const made = [0, 0]
  const stores = ['a', 'b'].map((form, i) =>
    new FragmentStore(count, (p) => { made[i]++; return text(form)(p) }, memory))
  const shuffled = () => {
    const order = Uint32Array.from({ length: count }, (_, i) => i)
    for (let i = count - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1))
      ;[order[i], order[j]] = [order[j], order[i]]
    }
    return order
  }
  // a sub-index's order (places read as they are) and a tag's list (pages laid out in it)
  const tree = shuffled()
  const list = shuffled()
  const join = (form: string, positions: ArrayLike<number>) => `[${Array.from(positions, text(form)).join(',')}]`
  let compared = 0
  let largest = 0
  for (let i = 0; i < 3000; i++) {
    const s = i % 2
    const store = stores[s]
    const form = s === 0 ? 'a' : 'b'
    const n = 1 + Math.floor(random() * 100)
    let answer: string
    let expected: string
    switch (i % 5) {
      case 0: { // positions
        const positions = Array.from({ length: n }, () => Math.floor(random() * count))
        answer = store.array(positions).toString()
        expected = join(form, positions)
        break
      }
      case 1: { // places of a sub-index
        const places = Array.from({ length: n }, () => Math.floor(random() * count))
        const placed: Placed = { order: tree, places }
        answer = store.array(placed, '{"x":', '}').toString()
        expected = `{"x":${join(form, places.map((slot) => tree[slot]))}}`
        break
      }
      case 2: case 3: { // a page of a laid-out list
        const perPage = [10, 100, 500][Math.floor(random() * 3)]
        const first = Math.floor(random() * Math.ceil(count / perPage)) * perPage
        const places = Array.from({ length: Math.min(perPage, count - first) }, (_, k) => first + k)
        answer = store.array({ order: list, places }, '', '', true).toString()
        expected = join(form, places.map((slot) => list[slot]))
        break
      }
      default: { // one record, and one with text put in before its end
        const p = Math.floor(random() * count)
        answer = store.one(p).toString() + store.spliced(p, 2, ',"q":1').toString()
        const own = text(form)(p)
        expected = own + own.slice(0, -2) + ',"q":1' + own.slice(-2)
      }
    }
    if (answer !== expected) { t.fail(`answer ${i} differs`); return }
    compared++
    largest = Math.max(largest, memory.bytes)
    // every chunk counted once: the stores' and, at most, the spare
    const unheld = memory.bytes - stores[0].chunkBytes - stores[1].chunkBytes
    if (unheld !== 0 && unheld !== CHUNK) {
      t.fail(`answer ${i}: ${unheld} bytes counted beside the stores' chunks`)
      return
    }
  }
  t.equal(compared, 3000)
  t.ok(memory.forgotten >= 10, `chunks forgotten: ${memory.forgotten}`)
  t.ok(made[0] > count && made[1] > count, `fragments made again: ${made.join(', ')} for ${count} sites each`)
  t.ok(largest <= 4 * CHUNK, `at most the limit and the chunk an answer opened past it: ${largest / CHUNK} chunks`)
})

t.test('the oldest full chunk goes first, whichever store holds it, and its memory is used again', async (t) => {
  // four fragments and their commas fill a chunk exactly
  const quarter = (p: number) => JSON.stringify(String.fromCharCode(97 + p).repeat(CHUNK / 4 - 3))
  const memory = new FragmentMemory(3 * CHUNK)
  const madeA: number[] = []
  const a = new FragmentStore(12, (p) => { madeA.push(p); return quarter(p) }, memory)
  const b = new FragmentStore(12, quarter, memory)
  const state = () => ({
    a: a.chunkBytes / CHUNK,
    b: b.chunkBytes / CHUNK,
    all: memory.bytes / CHUNK,
    forgotten: memory.forgotten,
    pressing: memory.pressing
  })
  t.equal(a.array([0, 1, 2, 3]).toString(), `[${[0, 1, 2, 3].map(quarter).join(',')}]`)
  a.one(4) // a's second chunk
  b.one(0)
  t.same(state(), { a: 2, b: 1, all: 3, forgotten: 0, pressing: true }, 'at the limit, no room for another chunk')
  t.equal(b.one(1).toString(), quarter(1))
  t.same(state(), { a: 1, b: 1, all: 3, forgotten: 1, pressing: false },
    'the next answer first forgot a\'s first chunk, kept as the spare')
  t.equal(a.array([4, 0]).toString(), `[${quarter(4)},${quarter(0)}]`)
  t.same(madeA, [0, 1, 2, 3, 4, 0], 'site 0 made again; 4 where it was')
  t.equal(a.array([5, 6, 7]).toString(), `[${quarter(5)},${quarter(6)},${quarter(7)}]`)
  t.same(state(), { a: 2, b: 1, all: 3, forgotten: 1, pressing: true },
    'the spare used for a\'s third chunk, nothing allocated')
  t.equal(b.one(2).toString(), quarter(2))
  t.same(state(), { a: 1, b: 1, all: 3, forgotten: 2, pressing: false }, 'then a\'s second chunk, the oldest')
  t.equal(a.array([8, 9, 10, 11]).toString(), `[${[8, 9, 10, 11].map(quarter).join(',')}]`)
  t.same(state(), { a: 2, b: 1, all: 3, forgotten: 2, pressing: true })
  t.equal(a.one(4).toString(), quarter(4))
  t.same(state(), { a: 1, b: 1, all: 3, forgotten: 3, pressing: false },
    'then a\'s full third chunk, not b\'s older one that is still being written')
  t.equal(a.array([7, 11, 4]).toString(), `[${quarter(7)},${quarter(11)},${quarter(4)}]`)
  t.same(madeA, [0, 1, 2, 3, 4, 0, 5, 6, 7, 8, 9, 10, 11, 4, 7], 'sites 4 and 7 made again')
  t.equal(b.array([0, 1, 2]).toString(), `[${quarter(0)},${quarter(1)},${quarter(2)}]`)
})

t.test('a chunk answers keep reading is passed over: the oldest unread one goes, ' +
  'and a read chunk goes behind the rest', async (t) => {
  for (const by of ['positions', 'places in an order'] as const) {
    await t.test(by, async (t) => {
      // four fragments and their commas fill a chunk exactly
      const quarter = (p: number) => JSON.stringify(String.fromCharCode(97 + (p % 26)).repeat(CHUNK / 4 - 3))
      const memory = new FragmentMemory(4 * CHUNK)
      const made = new Map<number, number>()
      const a = new FragmentStore(200, (p) => { made.set(p, (made.get(p) ?? 0) + 1); return quarter(p) }, memory)
      // sites 0 and 1 are hot: asked for before every cold site; the cold ones are each asked for once
      const order = Uint32Array.from({ length: 200 }, (_, i) => i)
      const hot = (first: number, second: number) => a.array(
        by === 'positions' ? [first, second] : { order, places: [first, second] }
      ).toString()
      t.equal(hot(0, 1), `[${quarter(0)},${quarter(1)}]`)
      let compared = 0
      for (let cold = 2; cold < 150; cold++) {
        if (hot(1, 0) !== `[${quarter(1)},${quarter(0)}]`) { t.fail(`hot answer before ${cold} differs`); return }
        if (a.one(cold).toString() !== quarter(cold)) { t.fail(`cold site ${cold} differs`); return }
        compared++
      }
      t.equal(compared, 148)
      t.equal(memory.forgotten, 35,
        'chunk after chunk of cold sites forgotten: 38 made, the hot one and the last two held')
      t.same([made.get(0), made.get(1)], [1, 1], 'the hot sites\' chunk kept all along: made once')
      t.ok([...made.entries()].every(([p, n]) => n === 1), 'no cold site made twice either')
      t.ok(memory.bytes <= 4 * CHUNK)
    })
  }
})

t.test('a chunk used since it last came up goes behind the others, its mark cleared; ' +
  'one only made in goes first', async (t) => {
  const quarter = (p: number) => JSON.stringify(String.fromCharCode(97 + p).repeat(CHUNK / 4 - 3))
  const memory = new FragmentMemory(3 * CHUNK)
  const madeA: number[] = []
  const a = new FragmentStore(20, (p) => { madeA.push(p); return quarter(p) }, memory)
  a.array([0, 1, 2, 3]) // chunk 0: copied out of while being written to (no mark)
  a.array([4, 5, 6, 7]) // chunk 1
  t.equal(a.one(0).toString(), quarter(0), 'site 0 used again: chunk 0 marked')
  a.one(8) // chunk 2: at the limit
  t.equal(memory.pressing, true)
  a.one(9) // this answer's start: chunk 0 passed over (its mark cleared, behind chunk 2), chunk 1 forgotten
  t.same([memory.forgotten, memory.pressing], [1, false])
  t.equal(a.array([0, 4]).toString(), `[${quarter(0)},${quarter(4)}]`)
  t.same(madeA, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 4],
    'site 4 made again; site 0 not (chunk 0, the oldest, kept), and chunk 0 marked again')
  a.array([10]) // chunk 2 full (8, 9, 4, 10)
  a.one(11) // opens the next chunk from the spare
  t.equal(memory.pressing, true)
  a.one(12) // chunk 2 comes up first, only ever copied out of while written to: forgotten; chunk 0 not even asked
  t.equal(a.array([0, 8]).toString(), `[${quarter(0)},${quarter(8)}]`)
  t.same(madeA, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 4, 10, 11, 12, 8], 'site 8 made again, site 0 still not')
  t.equal(memory.forgotten, 2)
})

t.test('no mark for the answer that wrote to a chunk, nor for a page\'s copy laid out from it; ' +
  'a mark serves once', async (t) => {
  const quarter = (p: number) => JSON.stringify(String.fromCharCode(97 + p).repeat(CHUNK / 4 - 3))
  const memory = new FragmentMemory(3 * CHUNK)
  const madeA: number[] = []
  const a = new FragmentStore(24, (p) => { madeA.push(p); return quarter(p) }, memory)
  const last = () => madeA[madeA.length - 1]
  a.array([0, 1, 2, 3, 4]) // chunk 0 filled and chunk 1 opened by one answer, which copies out of both
  // chunk 1 filled by answers of one site each (no mark), chunk 2 opened: at the limit
  for (const p of [5, 6, 7, 8]) a.one(p)
  t.equal(memory.pressing, true)
  a.one(9) // chunk 0 unmarked: forgotten
  t.equal(a.array([0, 4]).toString(), `[${quarter(0)},${quarter(4)}]`)
  t.same(madeA.slice(-2), [9, 0],
    'site 0 made again, site 4 not: chunk 0 went first, chunk 1 (now read by another answer) kept')
  a.array([10, 11]) // chunk 2 full (8, 9, 0, 10); 11 opens the next from the spare
  a.one(12) // chunk 1 marked: passed over, its mark cleared; chunk 2 forgotten
  t.same(madeA.slice(-3), [10, 11, 12])
  a.array([13, 14]) // chunk 3 full (11, 12, 13, 14)
  a.one(15) // opens the next
  a.one(16) // chunk 3 goes (chunk 1 is behind it)
  a.array([17, 18]) // chunk 4 full
  a.one(19) // opens the next
  a.one(20) // chunk 1 comes up again, not read since its mark was cleared: forgotten now
  t.equal(memory.forgotten, 4)
  t.equal(a.one(4).toString(), quarter(4))
  t.equal(last(), 4, 'site 4 made again: a mark gives one second chance, not two')

  // a page laid out in a tag's order copies fragments made elsewhere: the copies are what the page reads
  const b = new FragmentStore(8, (p) => { madeA.push(100 + p); return quarter(p) }, new FragmentMemory(3 * CHUNK))
  const order = Uint32Array.from({ length: 8 }, (_, i) => i)
  b.array([0, 1, 2, 3]) // chunk 0
  t.equal(b.array({ order, places: [0, 1] }, '', '', true).toString(), `[${quarter(0)},${quarter(1)}]`,
    'sites 0 and 1 copied into chunk 1')
  for (const p of [4, 5, 6]) b.one(p) // chunk 1 full (copies of 0 and 1, then 4, 5); 6 opens chunk 2: at the limit
  b.one(7) // chunk 0, only copied from: forgotten
  t.equal(b.one(2).toString(), quarter(2))
  t.equal(last(), 102, 'site 2 made again: chunk 0 was not marked by the copies laid out from it')
})

t.test('a chunk still being written to is forgotten after the full ones, however old', async (t) => {
  const quarter = (p: number) => JSON.stringify(String.fromCharCode(97 + p).repeat(CHUNK / 4 - 3))
  const memory = new FragmentMemory(3 * CHUNK)
  const a = new FragmentStore(8, quarter, memory)
  const b = new FragmentStore(8, quarter, memory)
  a.one(0) // a's only chunk, a quarter written
  b.array([0, 1, 2, 3, 4]) // b's first chunk full, its second begun
  t.same([a.chunkBytes, b.chunkBytes, memory.pressing], [CHUNK, 2 * CHUNK, true])
  t.equal(a.array([1, 0]).toString(), `[${quarter(1)},${quarter(0)}]`)
  t.same([a.chunkBytes, b.chunkBytes, memory.forgotten], [CHUNK, CHUNK, 1],
    'b\'s full chunk forgotten, not a\'s older one')
})

t.test('a fragment larger than a chunk: past the limit until the next answer, then given back', async (t) => {
  const memory = new FragmentMemory(2 * CHUNK)
  const text = (p: number) => JSON.stringify(p === 0 ? 'x'.repeat(CHUNK + 10) : String(p))
  const store = new FragmentStore(3, text, memory)
  t.equal(store.one(1).toString(), text(1))
  t.equal(store.one(0).toString(), text(0))
  t.equal(memory.bytes, 2 * CHUNK + 13, 'its own chunk, past the limit')
  t.equal(store.one(2).toString(), text(2))
  t.same([memory.bytes, memory.forgotten], [CHUNK, 2],
    'both forgotten: the large one freed, the first kept as the spare and used for site 2')
  t.equal(store.array([0, 1, 2]).toString(), `[${text(0)},${text(1)},${text(2)}]`)
})

// V8's gc(), for tests of what a collection frees
setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

/** A store holding one chunk, returned, and one holding two, used and let go. */
function keptBesideDropped (memory: FragmentMemory): FragmentStore {
  const kept = new FragmentStore(4, String, memory)
  kept.one(0)
  const dropped = new FragmentStore(2, (p) => JSON.stringify(String(p).repeat(CHUNK / 2)), memory)
  dropped.array([0, 1])
  return kept
}

t.test('the chunks of a store that is collected (a dataset dropped by a reload) leave the count', async (t) => {
  const memory = new FragmentMemory(4 * CHUNK)
  const kept = keptBesideDropped(memory)
  t.equal(memory.bytes, 3 * CHUNK)
  for (let i = 0; i < 50 && memory.bytes > CHUNK; i++) {
    gc()
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  t.equal(memory.bytes, CHUNK, 'only the kept store\'s chunk')
  t.equal(kept.one(0).toString(), '0')
})

t.test('a store collected before its finalizer has run: its chunks leave the count when met', async (t) => {
  const memory = new FragmentMemory(3 * CHUNK)
  const kept = keptBesideDropped(memory)
  t.same([memory.bytes, memory.pressing], [3 * CHUNK, true])
  await new Promise((resolve) => setImmediate(resolve)) // the job that used the store is over
  // collected, and met by the next answer's start in the same job, before any finalizer runs
  gc()
  t.equal(kept.one(1).toString(), '1')
  t.same([memory.bytes, memory.forgotten, memory.pressing], [CHUNK, 0, false],
    'its two chunks out of the count, none forgotten')
  for (let i = 0; i < 5; i++) {
    gc()
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  t.equal(memory.bytes, CHUNK, 'its finalizer takes nothing more')
})
