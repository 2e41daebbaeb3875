// Rows from an export file (or Redis) are checked by one schema, with the CLI's bounds; each
// refusal names the partner and the field in the operator's words.
import { test } from 'tap'
import { checkedRow, newPartnerRow, type PartnerRow } from '../../src/partners/store.ts'
import { MAX_RESULTS_CEILING } from '../../src/partners/tiers.ts'
import { SLUG_PATTERN } from '../../src/schemas/common.ts'
import { PartnerRowSchema } from '../../src/partners/row-schema.ts'

const { row } = newPartnerRow({ name: 'Acme', slug: 'acme', tier: 'growth', environment: 'production' })
const LIMIT_COLUMN = 'null (the tier\'s limit), "unlimited", or a whole number from 1 to 1000000000 written as text'
const SLUG_RULE = '1 to 64 lowercase letters, digits and inner hyphens'
const message = (value: unknown, index?: number) => {
  try {
    checkedRow(value, index)
    return 'accepted'
  } catch (err) {
    return (err as Error).message
  }
}

test('a well-formed row passes', async (t) => {
  t.equal(message(row), 'accepted')
  t.equal(message({
    ...row, categories: '', limit_minute: 'unlimited', limit_hour: '5', limit_day: null, other_categories: 1
  }), 'accepted')
})

test('max_results: 1 to the ceiling, whole numbers only', async (t) => {
  for (const ok of [1, 100, MAX_RESULTS_CEILING]) t.equal(message({ ...row, max_results: ok }), 'accepted', String(ok))
  for (const bad of [0, -1, 1.5, MAX_RESULTS_CEILING + 1, 1e9, '100', null]) {
    t.equal(message({ ...row, max_results: bad }),
      `partner "acme": max_results must be a whole number from 1 to ${MAX_RESULTS_CEILING}`, String(bad))
  }
})

test('every field: the exact message names the partner and the field', async (t) => {
  const cases: [Partial<Record<keyof PartnerRow, unknown>>, string][] = [
    [{ id: 'ptn_xyz' }, 'id must be ptn_ and 12 hex digits'],
    [{ name: '' }, 'name must be 1 to 200 characters'],
    [{ name: 'x'.repeat(201) }, 'name must be 1 to 200 characters'],
    [{ status: 'paused' }, 'status must be one of pending, active, suspended'],
    [{ tier: 'gold' }, 'tier must be one of demo, growth, scale'],
    [{ environment: 'staging' }, 'environment must be one of sandbox, production'],
    [{ categories: '4, 7' }, 'categories must be category ids up to 2147483647 separated by commas, e.g. 4,7'],
    [{ categories: [4, 7] }, 'categories must be category ids up to 2147483647 separated by commas, e.g. 4,7'],
    [{ other_categories: true }, 'other_categories must be 0 or 1'],
    [{ site_by_id: 2 }, 'site_by_id must be 0 or 1'],
    [{ radius_cap_km: 0 }, 'radius_cap_km must be a number of km greater than 0'],
    [{ limit_minute: '0' }, `limit_minute must be ${LIMIT_COLUMN}`],
    [{ limit_hour: '1000000001' }, `limit_hour must be ${LIMIT_COLUMN}`],
    [{ categories: '4,2147483648' }, 'categories must be category ids up to 2147483647 separated by commas, e.g. 4,7'],
    [{ limit_day: 50 }, `limit_day must be ${LIMIT_COLUMN}`],
    [{ token_sha256: 'nope' }, 'token_sha256 must be 64 hex digits (the SHA-256 of the token)'],
    [{ created_at: 'yesterday' }, 'created_at must be a UTC time such as 2026-01-31T12:00:00.000Z'],
    [{ updated_at: 12 }, 'updated_at must be a UTC time such as 2026-01-31T12:00:00.000Z']
  ]
  for (const [change, expected] of cases) {
    t.equal(message({ ...row, ...change }), `partner "acme": ${expected}`, JSON.stringify(change))
  }
})

test('the slug: the one pattern the CLI checks --slug with', async (t) => {
  t.equal(PartnerRowSchema.properties.slug.pattern, SLUG_PATTERN)
  for (const slug of ['a', 'a-1', 'x'.repeat(64)]) t.equal(message({ ...row, slug }), 'accepted', slug)
  for (const slug of ['Acme', '-a', 'a-', 'x'.repeat(65), 'a_b']) {
    t.equal(message({ ...row, slug }), `partner ${JSON.stringify(slug)}: slug must be ${SLUG_RULE}`)
  }
})

test('a partner without a text slug is named by its place in the file', async (t) => {
  t.equal(message({ ...row, slug: 7 }, 2), `partner #3: slug must be ${SLUG_RULE}`)
  t.equal(message('acme', 0), 'partner #1: not an object')
  t.equal(message(null, 4), 'partner #5: not an object')
  t.equal(message([row], 0), 'partner #1: not an object')
  const { slug, ...noSlug } = row
  t.equal(message(noSlug, 1), 'partner #2: slug is missing')
  t.equal(message(noSlug), 'a partner without a slug: slug is missing')
})

test('a missing field is named; an unknown one is refused, not dropped', async (t) => {
  const { max_results: _, ...without } = row
  t.equal(message(without), 'partner "acme": max_results is missing')
  t.equal(message({ ...row, max_result: 50 }), 'partner "acme": unknown field max_result; the fields are ' +
    'id, slug, name, status, tier, environment, categories, other_categories, site_by_id, radius_cap_km, ' +
    'max_results, limit_minute, limit_hour, limit_day, token_sha256, created_at, updated_at')
})
