// String and code columns give back exactly the strings they were made from.
import { test } from 'tap'
import { CodeColumn, StringColumn } from '../../src/sites/columns.ts'
import { columnValues as all } from '../helper.ts'

test('every string back as it went in, empty and multi-byte ones included', async (t) => {
  const values = [
    '', 'a', 'prd-0000001', 'Héliport de l\'Île ✈', 'Emoji 🚁 pad', '', 'Line\u2028separator', 'x'.repeat(70_000),
    'Quote "q" \\ back'
  ]
  const column = StringColumn.from(values)
  t.equal(column.length, values.length)
  for (let i = 0; i < values.length; i++) t.equal(column.at(i), values[i], `string ${i}`)
  t.same(all(column), values)
  t.equal(column.bytes.length, values.reduce((n, v) => n + Buffer.byteLength(v), 0))
  t.same(all(StringColumn.from([])), [])
  const copy = new StringColumn(Buffer.from(column.bytes), new Uint32Array(column.ends))
  t.same(all(copy), values, 'rebuilt from its bytes and ends (as a snapshot reads it)')
  t.throws(() => new StringColumn(Buffer.from('abc'), new Uint32Array([1, 2])), /do not match/)
})

test('indexOfSorted finds every string of a sorted column and nothing else', async (t) => {
  const sorted = ['', 'a', 'a-1', 'a0', 'ab', 'b', 'prd-0000001', 'prd-0000010', 'prd-0000100', 'z']
  const column = StringColumn.from(sorted)
  for (let i = 0; i < sorted.length; i++) t.equal(column.indexOfSorted(sorted[i]), i, JSON.stringify(sorted[i]))
  for (const missing of ['0', 'a-', 'aa', 'prd-000001', 'prd-00000010', 'zz', 'A']) {
    t.equal(column.indexOfSorted(missing), -1, JSON.stringify(missing))
  }
  t.equal(StringColumn.from([]).indexOfSorted('a'), -1)
})

/** A code column of these values, as the dataset loader builds one. */
const codeColumnOf = (values: readonly string[]) => {
  const builder = CodeColumn.builder(values.length)
  values.forEach((value, row) => builder.set(row, value))
  return builder.done()
}

test('a code column: every value back, each distinct value once, codes in order of first appearance', async (t) => {
  const values = ['EUR', 'NAM', 'EUR', 'OCE', 'NAM', 'EUR', 'é✈']
  const column = codeColumnOf(values)
  t.equal(column.length, values.length)
  for (let i = 0; i < values.length; i++) t.equal(column.at(i), values[i], `row ${i}`)
  t.same(all(column), values)
  t.same(column.table, ['EUR', 'NAM', 'OCE', 'é✈'])
  t.same([...column.codes], [0, 1, 0, 2, 1, 0, 3])
  t.same(all(codeColumnOf([])), [])
  const copy = new CodeColumn([...column.table], new Uint16Array(column.codes))
  t.same(all(copy), values, 'rebuilt from its table and codes (as a snapshot reads it)')
  t.throws(() => new CodeColumn(['A'], new Uint16Array([0, 1])), /row 1 has no value/)
  const many = Array.from({ length: 65_536 }, (_, i) => `v${i}`)
  t.same(codeColumnOf(many).at(65_535), 'v65535', '65,536 distinct values fit')
  t.throws(() => codeColumnOf([...many, 'one more']), /over 65,536/)
})
