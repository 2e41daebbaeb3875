// String columns give back exactly the strings they were made from.
import { test } from 'tap'
import { StringColumn } from '../../src/sites/columns.ts'

test('every string back as it went in, empty and multi-byte ones included', async (t) => {
  const values = ['', 'a', 'prd-0000001', 'Héliport de l\'Île ✈', 'Emoji 🚁 pad', '', 'Line\u2028separator', 'x'.repeat(70_000), 'Quote "q" \\ back']
  const column = StringColumn.from(values)
  t.equal(column.length, values.length)
  for (let i = 0; i < values.length; i++) t.equal(column.at(i), values[i], `string ${i}`)
  t.same(column.toArray(), values)
  t.equal(column.bytes.length, values.reduce((n, v) => n + Buffer.byteLength(v), 0))
  t.same(StringColumn.from([]).toArray(), [])
  const copy = new StringColumn(Buffer.from(column.bytes), new Uint32Array(column.ends))
  t.same(copy.toArray(), values, 'rebuilt from its bytes and ends (as a snapshot reads it)')
  t.throws(() => new StringColumn(Buffer.from('abc'), new Uint32Array([1, 2])), /do not match/)
})

test('indexOfSorted finds every string of a sorted column and nothing else', async (t) => {
  const sorted = ['', 'a', 'a-1', 'a0', 'ab', 'b', 'prd-0000001', 'prd-0000010', 'prd-0000100', 'z']
  const column = StringColumn.from(sorted)
  for (let i = 0; i < sorted.length; i++) t.equal(column.indexOfSorted(sorted[i]), i, JSON.stringify(sorted[i]))
  for (const missing of ['0', 'a-', 'aa', 'prd-000001', 'prd-00000010', 'zz', 'A']) t.equal(column.indexOfSorted(missing), -1, JSON.stringify(missing))
  t.equal(StringColumn.from([]).indexOfSorted('a'), -1)
})
