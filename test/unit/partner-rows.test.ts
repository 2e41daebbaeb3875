// Rows from an export file are checked with the same bounds the CLI applies.
import { test } from 'tap'
import { checkedRow, newPartnerRow } from '../../src/partners/store.ts'
import { MAX_RESULTS_CEILING } from '../../src/partners/tiers.ts'

test('max_results: 1 to the ceiling, whole numbers only', async (t) => {
  const { row } = newPartnerRow({ name: 'Hotels', slug: 'hotels', tier: 'growth', environment: 'production' })
  for (const ok of [1, 100, MAX_RESULTS_CEILING]) t.equal(checkedRow({ ...row, max_results: ok }).max_results, ok)
  for (const bad of [0, -1, 1.5, MAX_RESULTS_CEILING + 1, 1e9, '100']) {
    t.throws(() => checkedRow({ ...row, max_results: bad }), /max_results must be a whole number from 1 to 10000/, String(bad))
  }
})
