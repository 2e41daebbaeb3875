// The pool of answer buffers: references, reuse, sizes that are not pooled.
import t from 'tap'
import { AnswerPool, MAX_POOLED_BYTES, MIN_POOLED_BYTES } from '../../src/answers/pool.ts'

t.test('a buffer is used again only when every reference is given back', async (t) => {
  const pool = new AnswerPool()
  const a = pool.take(19_000)
  t.equal(a.length, 19_000)
  t.equal(pool.footprint(a), 20_480, 'capacity rounded up to 4 kB')
  t.ok(pool.holds(a))
  pool.retain(a) // the cache
  pool.release(a) // the request
  t.ok(pool.holds(a), 'still held by the cache')
  const b = pool.take(19_000)
  t.not(b.buffer, a.buffer, 'a held buffer is not handed out again')
  pool.release(a) // the cache lets go
  t.notOk(pool.holds(a))
  const c = pool.take(17_000)
  t.equal(c.buffer, a.buffer, 'a buffer given back is used for the next answer of its size class')
  t.equal(c.length, 17_000)
  const d = pool.take(30_000)
  t.not(d.buffer, a.buffer, 'another size class gets another buffer')
  t.same(pool.stats(), { taken: 4, out: 3, free: 0, made: 3 })
  pool.release(b)
  pool.release(c)
  pool.release(d)
  t.same(pool.stats(), { taken: 4, out: 0, free: 3, made: 3 })
  pool.release(d) // once too often: ignored
  t.same(pool.stats(), { taken: 4, out: 0, free: 3, made: 3 })
})

t.test('small and very large answers are not pooled; other buffers pass through', async (t) => {
  const pool = new AnswerPool()
  const small = pool.take(MIN_POOLED_BYTES - 1)
  const large = pool.take(MAX_POOLED_BYTES + 1)
  const other = Buffer.from('{"x":1}')
  for (const b of [small, large, other]) {
    t.notOk(pool.holds(b))
    pool.retain(b)
    pool.release(b)
    t.equal(pool.footprint(b), b.length)
  }
  t.equal(large.length, MAX_POOLED_BYTES + 1)
  t.ok(pool.holds(pool.take(MIN_POOLED_BYTES)))
  t.ok(pool.holds(pool.take(MAX_POOLED_BYTES)))
  t.same(pool.stats(), { taken: 2, out: 2, free: 0, made: 2 })
})

t.test('free buffers kept per size class are bounded', async (t) => {
  const pool = new AnswerPool()
  const taken = Array.from({ length: 200 }, () => pool.take(MAX_POOLED_BYTES))
  for (const b of taken) pool.release(b)
  t.equal(pool.stats().free, 16, '4 MB of 256 kB buffers; the rest left to the garbage collector')
})
