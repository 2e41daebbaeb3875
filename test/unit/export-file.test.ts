// The partners export file: version 2 entries are `partners show --json` plus the token digest;
// version 1 files (an earlier build's, kept in test/fixtures) still read; every entry is checked
// with a message naming the partner and the field.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'tap'
import { exportDocument, readExportDocument } from '../../src/partners/export-file.ts'
import {
  changedColumns, fromRow, newPartnerRow, partnerView, type PartnerChanges, type PartnerRow
} from '../../src/partners/store.ts'
import { REPO_ROOT } from '../helper.ts'

const V1_FILE = join(REPO_ROOT, 'test/fixtures/partners-v1.json')
const v1Text = readFileSync(V1_FILE, 'utf8')
const v1Rows = JSON.parse(v1Text).partners as PartnerRow[]
const NOT_EXPORT = 'ExportFileError: partners.json is not a partners export (format lsp-partners)'
const CATEGORY_IDS = 'a list of category ids (whole numbers up to 2147483647), e.g. [4, 7]'
const OVERRIDE = 'a whole number from 1 to 1000000000, "unlimited", or null (the tier\'s limit)'
const CATEGORY_COLUMN = 'categories must be category ids up to 2147483647 separated by commas, e.g. 4,7'

/** A row after a change, as a store writes it. */
const changedRow = (row: PartnerRow, changes: PartnerChanges): PartnerRow => ({ ...row, ...changedColumns(changes) })

/** Partners with every kind of value: overrides of each kind, switches on, categories 8+. */
function rows (): PartnerRow[] {
  const a = changedRow(newPartnerRow({ name: 'Acme', slug: 'acme', tier: 'growth' }).row, {
    categories: [4, 7, 9], otherCategories: true, siteById: true, radiusCapKm: 12.5, maxResults: 500,
    limitOverrides: { minute: 'unlimited', hour: 5000 }
  })
  const b = newPartnerRow({ name: 'Bravo', slug: 'bravo', status: 'pending' }).row
  const charlie = newPartnerRow({ name: 'Charlie', slug: 'charlie', tier: 'scale', environment: 'production' }).row
  const c = changedRow(charlie, { categories: [], status: 'suspended' })
  return [a, b, c]
}

const failure = (text: string) => {
  try {
    readExportDocument(text, 'partners.json')
    return 'accepted'
  } catch (err) {
    return `${(err as Error).name}: ${(err as Error).message}`
  }
}
const v2With = (change: (entry: Record<string, unknown>) => void) => {
  const document = exportDocument(rows())
  change(document.partners[0] as unknown as Record<string, unknown>)
  return JSON.stringify(document)
}

test('version 2: each entry is the show --json object plus token_sha256, ' +
  'and reads back to the same rows', async (t) => {
  const given = rows()
  const document = exportDocument(given)
  t.equal(document.format, 'lsp-partners')
  t.equal(document.version, 2)
  for (const [i, entry] of document.partners.entries()) {
    const { token_sha256: digest, ...view } = entry
    const shown = partnerView(fromRow(given[i]))
    t.same(Object.keys(view), Object.keys(shown), 'the same fields, in the same order')
    t.same(view, shown)
    t.equal(digest, given[i].token_sha256)
  }
  const read = readExportDocument(JSON.stringify(document, null, 2))
  t.equal(read.version, 2)
  t.same(read.rows, given, 'every column as stored')
})

test('version 1, as an earlier build wrote it, still reads', async (t) => {
  const read = readExportDocument(v1Text)
  t.equal(read.version, 1)
  t.same(read.rows, v1Rows)
  t.same(readExportDocument(JSON.stringify(exportDocument(read.rows))).rows, v1Rows,
    'and survives a version 2 export')
})

test('a file that is no export this build reads', async (t) => {
  t.match(failure('{"format": "lsp-partners",'), /^ExportFileError: partners.json is not valid JSON: [^\n]+$/)
  t.match(failure('{"format": "lsp-partners",\n"version": 2,\n'),
    /^ExportFileError: partners.json is not valid JSON: [^\n\uFEFF]+$/, 'one line')
  t.same(readExportDocument('\uFEFF{"format": "lsp-partners", "version": 2, "partners": []}'), { version: 2, rows: [] },
    'a BOM is skipped')
  t.equal(failure('[]'), NOT_EXPORT)
  t.equal(failure('null'), NOT_EXPORT)
  t.equal(failure('{"format": "other", "version": 2, "partners": []}'), NOT_EXPORT)
  t.equal(failure('{"format": "lsp-partners", "version": 2, "partners": {}}'), NOT_EXPORT)
  t.equal(failure('{"format": "lsp-partners", "version": 3, "partners": []}'),
    'ExportFileError: partners.json is a partners export of version 3, which this build cannot read ' +
    '(it reads versions 1 and 2)')
  t.equal(failure('{"format": "lsp-partners", "partners": []}'),
    'ExportFileError: partners.json is a partners export of version null, which this build cannot read ' +
    '(it reads versions 1 and 2)')
  t.same(readExportDocument('{"format": "lsp-partners", "version": 2, "partners": []}'), { version: 2, rows: [] })
})

test('version 2 entries: exact messages naming the partner and the field', async (t) => {
  const cases: [(e: Record<string, unknown>) => void, string][] = [
    [(e) => { e.max_results = 0 }, 'max_results must be a whole number from 1 to 10000'],
    [(e) => { e.categories = '4,7' }, `categories must be ${CATEGORY_IDS}`],
    [(e) => { e.categories = [4, 'x'] }, `categories must be ${CATEGORY_IDS}`],
    [(e) => { e.other_categories = 1 }, 'other_categories must be true or false'],
    [(e) => { e.limit_overrides = { minute: 0, hour: null, day: null } }, `limit_overrides.minute must be ${OVERRIDE}`],
    [(e) => { e.limit_overrides = { minute: 1e21, hour: null, day: null } },
      `limit_overrides.minute must be ${OVERRIDE}`],
    [(e) => { e.limit_overrides = { minute: null, hour: null } }, 'limit_overrides.day is missing'],
    [(e) => { e.limit_overrides = { minute: null, hour: null, day: null, week: 5 } },
      'unknown field limit_overrides.week; the fields are minute, hour, day'],
    [(e) => { e.limit_overrides = 'tier' }, 'limit_overrides must be an object of minute, hour and day'],
    [(e) => { e.limits = { minute: 'tier', hour: 1, day: 1 } },
      'limits.minute must be a whole number from 1 to 1000000000 or "unlimited"'],
    [(e) => { delete e.token_sha256 }, 'token_sha256 is missing'],
    [(e) => { e.token = 'lsp_x' }, 'unknown field token; the fields are id, slug, name, status, tier, environment, ' +
      'categories, other_categories, site_by_id, radius_cap_km, max_results, limits, limit_overrides, created_at, ' +
      'updated_at, token_sha256']
  ]
  for (const [change, expected] of cases) {
    t.equal(failure(v2With(change)), `ExportFileError: partner "acme": ${expected}`, expected)
  }
  t.equal(failure(v2With((e) => { delete e.slug })), 'ExportFileError: partner #1: slug is missing')
})

test('limits are what tier and limit_overrides gave: not what an import sets', async (t) => {
  const text = v2With((e) => { e.limits = { minute: 1, hour: 1, day: 1 } })
  const [row] = readExportDocument(text).rows
  t.same(partnerView(fromRow(row)).limits, { minute: 'unlimited', hour: 5000, day: 12000 })
})

test('version 1 rows are checked as before, and a field a row does not have is refused', async (t) => {
  const v1 = (partners: unknown[]) => JSON.stringify({ format: 'lsp-partners', version: 1, partners })
  const with1 = (change: Record<string, unknown>) => v1([v1Rows[0], { ...v1Rows[1], ...change }])
  t.equal(failure(with1({ max_results: 10001 })),
    'ExportFileError: partner "demo": max_results must be a whole number from 1 to 10000')
  t.equal(failure(with1({ categories: [4, 7] })), `ExportFileError: partner "demo": ${CATEGORY_COLUMN}`)
  t.match(failure(with1({ limits: {} })),
    /^ExportFileError: partner "demo": unknown field limits; the fields are id, slug, /)
  t.equal(failure(v1([v1Rows[0], 'demo'])), 'ExportFileError: partner #2: not an object')
})

test('a slug, id or token digest twice in one file is refused before anything is written', async (t) => {
  const [a, b] = rows()
  const twice = (second: PartnerRow) => JSON.stringify(exportDocument([a, second]))
  t.equal(failure(twice({ ...b, slug: 'acme' })), 'ExportFileError: partner "acme" is in the file twice')
  t.equal(failure(twice({ ...b, id: a.id })), 'ExportFileError: partner "bravo": its id is also partner "acme"\'s')
  t.equal(failure(twice({ ...b, token_sha256: a.token_sha256 })),
    'ExportFileError: partner "bravo": its token_sha256 is also partner "acme"\'s')
})

test('what a version 1 file or Redis holds at the bounds exports and imports again; ' +
  'beyond them it is refused', async (t) => {
  const [row] = rows()
  const at = {
    ...row, categories: '4,2147483647', limit_minute: '1000000000', limit_hour: 'unlimited', limit_day: null
  }
  const v1 = (r: PartnerRow) => JSON.stringify({ format: 'lsp-partners', version: 1, partners: [r] })
  const read = readExportDocument(v1(at)).rows
  t.same(read, [at])
  t.same(readExportDocument(JSON.stringify(exportDocument(read))).rows, [at],
    'its version 2 export reads back the same')
  const acme = 'ExportFileError: partner "acme":'
  const limitRule = 'must be null (the tier\'s limit), "unlimited", or a whole number from 1 to 1000000000 ' +
    'written as text'
  t.equal(failure(v1({ ...at, limit_minute: '1000000001' })), `${acme} limit_minute ${limitRule}`)
  t.equal(failure(v1({ ...at, limit_day: '1' + '0'.repeat(21) })), `${acme} limit_day ${limitRule}`)
  t.equal(failure(v1({ ...at, categories: '4,2147483648' })), `${acme} ${CATEGORY_COLUMN}`)
  t.equal(failure(v1({ ...at, categories: '4,' + '9'.repeat(400) })), `${acme} ${CATEGORY_COLUMN}`)
  t.throws(() => changedRow(row, { limitOverrides: { day: 1_000_000_001 } }),
    { message: 'the day limit must be a whole number from 1 to 1000000000 or unlimited' })
})
