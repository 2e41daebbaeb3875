// Dataset files: the generator, the writer's all-or-nothing rename, and the loader's checks.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t from 'tap'
import { generateDataset } from '../../src/setup/data-dir.ts'
import { DATASET_DDL, WRITE_BATCH, datasetPath, openDatasetWriter, writeDataset } from '../../src/sites/dataset-file.ts'
import { DatasetError, loadDataset } from '../../src/sites/dataset.ts'
import { generateSites } from '../../src/sites/generator.ts'
import { site, tmpDataDir } from '../helper.ts'

t.test('the generator is deterministic and covers every continent and category 2 to 9', async (t) => {
  const a = [...generateSites({ count: 4000, seed: 's1', prefix: 'sbx' })]
  const b = [...generateSites({ count: 4000, seed: 's1', prefix: 'sbx' })]
  const c = [...generateSites({ count: 4000, seed: 's2', prefix: 'sbx' })]
  t.same(a, b, 'same seed, same sites')
  t.not(JSON.stringify(a), JSON.stringify(c), 'another seed, other sites')
  t.same([...new Set(a.map((s) => s.category))].sort(), [2, 3, 4, 5, 6, 7, 8, 9])
  t.same([...new Set(a.map((s) => s.region))].sort(), ['AFR', 'ANT', 'ASI', 'EUR', 'NAM', 'OCE', 'SAM'])
  for (const s of a) {
    if (!/^sbx-\d{7}$/.test(s.id) || !/^[A-Z]{2}$/.test(s.country) ||
      Math.abs(s.latitude) > 90 || Math.abs(s.longitude) > 180 ||
      Math.round(s.latitude * 1000) / 1000 !== s.latitude || Math.round(s.longitude * 1000) / 1000 !== s.longitude ||
      !s.tags.every((tag) => /^~[a-z0-9-]+$/.test(tag))) {
      t.fail('invalid generated site', s)
      return
    }
  }
  const europe = [...generateSites({ count: 4000, seed: 's1', prefix: 'prd', europeShare: 0.8 })]
  const share = europe.filter((s) => s.region === 'EUR').length / europe.length
  t.ok(share > 0.8 && share < 0.9, `europeShare 0.8 puts ${share} of sites in Europe`)
})

t.test('a generated file has the contract tables and meta', async (t) => {
  const dir = tmpDataDir(t)
  const path = datasetPath(dir, 'sandbox')
  generateDataset(path, { count: 300, seed: 'meta', prefix: 'sbx' })
  const db = new Database(path, { readonly: true })
  const metaRows = db.prepare('SELECT key, value FROM meta').all() as { key: string, value: string }[]
  const meta = Object.fromEntries(metaRows.map((r) => [r.key, r.value]))
  const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all()
  const mode = db.pragma('journal_mode', { simple: true })
  db.close()
  t.same(tables, ['meta', 'site_tags', 'sites'])
  t.same(Object.keys(meta).sort(), ['built_at', 'precision', 'schema_version', 'site_count', 'source'])
  t.equal(meta.site_count, '300')
  t.equal(meta.precision, '3')
  t.equal(meta.schema_version, '1')
  t.equal(mode, 'delete', 'a single file, no WAL beside it')
  t.same(readdirSync(dir), ['sandbox.db'], 'no temporary file left')
})

t.test('a failed write leaves the old file untouched', async (t) => {
  const dir = tmpDataDir(t)
  const path = datasetPath(dir, 'sandbox')
  writeDataset(path, [site('old-1', 4, 1, 1)], { source: 'old', precision: 3 })
  const before = readFileSync(path)
  t.throws(() => writeDataset(path, [site('new-1', 4, 1, 1), site('new-1', 4, 2, 2)], { source: 'new', precision: 3 }),
    /UNIQUE/)
  t.same(readFileSync(path), before)
  t.same(readdirSync(dir), ['sandbox.db'])
  const w = openDatasetWriter(path)
  w.add(site('x', 4, 1, 1))
  w.abort()
  t.same(readFileSync(path), before, 'an aborted writer changes nothing')
  t.same(readdirSync(dir), ['sandbox.db'])
})

t.test('the writer writes sites and tags in batches: every row back, duplicates found in full batches ' +
  'and in the tail', async (t) => {
  const dir = tmpDataDir(t)
  const path = datasetPath(dir, 'sandbox')
  const unique = [...generateSites({ count: 3 * WRITE_BATCH.sites + 17, seed: 'batches', prefix: 'b' })]
  t.ok(unique.filter((s) => s.tags.length > 0).length > WRITE_BATCH.tags, 'more tag rows than a tag batch')
  // duplicates: in the first full batch, twice in the second (one of them of a site of the same
  // batch), and in the last, partial batch
  const rows = [...unique]
  const dup = (at: number, of: number) => rows.splice(at, 0, { ...unique[of], name: `again ${of}`, tags: ['~dup'] })
  dup(10, 3)
  dup(WRITE_BATCH.sites + 5, 0)
  dup(WRITE_BATCH.sites + 40, WRITE_BATCH.sites + 20)
  const tail = rows.length - 2
  dup(tail, 7)
  const reported: [number | undefined, string][] = []
  const w = openDatasetWriter<number>(path, (ref, s) => { reported.push([ref, s.id]) })
  rows.forEach((s, i) => w.add(s, i))
  w.flush()
  t.same(reported, [
    [10, unique[3].id],
    [WRITE_BATCH.sites + 5, unique[0].id],
    [WRITE_BATCH.sites + 40, unique[WRITE_BATCH.sites + 20].id],
    [tail, unique[7].id]
  ])
  t.same(w.commit({ source: 't', precision: 3 }).siteCount, unique.length)
  const db = new Database(path, { readonly: true })
  const written = db.prepare('SELECT id, category, name, region, country, latitude, longitude FROM sites ' +
    'ORDER BY rowid').all()
  const tags = db.prepare('SELECT site_id, tag FROM site_tags ORDER BY site_id, tag').all()
  db.close()
  t.same(written, unique.map(({ tags, ...s }) => s), 'every site once, in the order added, none of the duplicates')
  const expected = unique.flatMap((s) => s.tags.map((tag) => ({ site_id: s.id, tag })))
    .sort((a, b) => a.site_id < b.site_id ? -1 : a.site_id > b.site_id ? 1 : a.tag < b.tag ? -1 : 1)
  t.same(tags, expected, 'every tag row of the sites written, none of the duplicates\' tags')

  const thrower = openDatasetWriter(join(dir, 'other.db'))
  for (const s of unique.slice(0, 5)) thrower.add(s)
  thrower.add(unique[0])
  t.throws(() => thrower.flush(), { code: 'SQLITE_CONSTRAINT_PRIMARYKEY' }, 'without onDuplicate, a duplicate throws')
  thrower.abort()
  const batchThrower = openDatasetWriter(join(dir, 'other.db'))
  for (const s of unique.slice(0, WRITE_BATCH.sites - 1)) batchThrower.add(s)
  t.throws(() => batchThrower.add(unique[0]), { code: 'SQLITE_CONSTRAINT_PRIMARYKEY' },
    'and in a full batch, when the batch is written')
  batchThrower.abort()
})

t.test('the loader refuses broken files with the reason', async (t) => {
  const dir = tmpDataDir(t)
  const make = (name: string, sql: string) => {
    const path = join(dir, name)
    const db = new Database(path)
    db.pragma('foreign_keys = OFF') // files from other tools need not have enforced them
    db.exec(DATASET_DDL)
    db.exec("INSERT INTO meta VALUES ('schema_version','1'),('built_at','2026-01-01T00:00:00.000Z'),('source','t')," +
      "('precision','3')")
    db.exec(sql)
    db.close()
    return path
  }
  // a file of one site (its values as SQL), with `more` after it; a file of none after a change of meta
  const oneSite = (values: string, more = '') =>
    `INSERT INTO meta VALUES ('site_count','1'); INSERT INTO sites VALUES (${values})${more}`
  const noSites = (change: string) => `${change}; INSERT INTO meta VALUES ('site_count','0')`
  const site1 = "'a',4,'A','EUR','GB',1,1"
  const cases: [string, string, RegExp][] = [
    ['count.db', `INSERT INTO meta VALUES ('site_count','2'); INSERT INTO sites VALUES (${site1})`,
      /meta.site_count is 2 but sites holds 1 rows/],
    ['lat.db', oneSite("'a',4,'A','EUR','GB',91,1"), /site a: bad latitude/],
    ['cat.db', oneSite("'a','x','A','EUR','GB',1,1"), /site a: bad category/],
    ['id.db', oneSite("'a b',4,'A','EUR','GB',1,1"), /bad id/],
    ['tag.db', oneSite(site1, "; INSERT INTO site_tags VALUES ('a','fuel')"), /bad tag/],
    ['orphan.db', oneSite(site1, "; INSERT INTO site_tags VALUES ('b','~fuel')"), /unknown site "b"/],
    ['nometa.db', noSites("DELETE FROM meta WHERE key = 'precision'"), /meta has no precision/],
    // every value by the import's rules, and the meta's values too (what a hand edit can leave)
    ['blank.db', oneSite("'a',4,'','EUR','GB',1,1"), /site a: bad name ""$/],
    ['spaces.db', oneSite("'a',4,'   ','EUR','GB',1,1"), /site a: bad name " {3}"/],
    ['control.db', oneSite("'a',4,'A' || char(10) || 'B','EUR','GB',1,1"), /site a: bad name "A\\nB"/],
    ['long.db', oneSite(`'a',4,'${'n'.repeat(201)}','EUR','GB',1,1`), /site a: bad name/],
    ['bigcat.db', oneSite("'a',2147483648,'A','EUR','GB',1,1"), /site a: bad category 2147483648/],
    ['schema.db', noSites("UPDATE meta SET value = '2' WHERE key = 'schema_version'"),
      /meta.schema_version is "2"; this service reads 1/],
    ['precision.db', noSites("UPDATE meta SET value = '-1' WHERE key = 'precision'"),
      /meta.precision must be a whole number from 0 to 10/],
    ['precision11.db', noSites("UPDATE meta SET value = '11' WHERE key = 'precision'"),
      /meta.precision must be a whole number from 0 to 10/],
    ['built.db', noSites("UPDATE meta SET value = 'yesterday' WHERE key = 'built_at'"),
      /meta.built_at must be an ISO 8601 time/]
  ]
  for (const [name, sql, reason] of cases) {
    t.throws(() => loadDataset(make(name, sql), 'sandbox'), { message: reason }, name)
  }
  t.equal(loadDataset(make('fine.db', oneSite("'a',2147483647,'  Padded name ','EUR','GB',1,1")), 'sandbox').count, 1,
    'the limits themselves load')
  t.throws(() => loadDataset(join(dir, 'absent.db'), 'sandbox'), DatasetError)
  const garbage = join(dir, 'garbage.db')
  writeFileSync(garbage, 'this is not a database')
  t.throws(() => loadDataset(garbage, 'sandbox'), DatasetError)
  const good = join(dir, 'good.db')
  writeDataset(good, [site('a', 4, 1, 1, ['~fuel'])], { source: 't', precision: 3 })
  const truncated = join(dir, 'truncated.db')
  writeFileSync(truncated, readFileSync(good).subarray(0, 5000))
  t.throws(() => loadDataset(truncated, 'sandbox'), DatasetError, 'a truncated file')
})

t.test('the version follows the content: any change a partner could see moves it, ' +
  'the same file keeps it', async (t) => {
  const dir = tmpDataDir(t)
  const path = datasetPath(dir, 'sandbox')
  writeDataset(path, [site('v-1', 4, 51.5, -0.12, ['~fuel']), site('v-2', 5, 51.6, -0.13)],
    { source: 'test', precision: 3, categoryNames: { 8: 'Heliport' } })
  const first = loadDataset(path, 'sandbox')
  t.match(first.version, /^sandbox\|[A-Za-z0-9_-]{22}$/)
  t.equal(loadDataset(path, 'sandbox').version, first.version, 'the same file, the same version')
  t.not(loadDataset(path, 'production').version, first.version, 'another dataset name, another version')
  // each edit made in place, as by hand, with the meta (built_at and all) left as it was
  const edits = [
    "UPDATE sites SET name = 'Site v-1 ' WHERE id = 'v-1'",
    "UPDATE sites SET latitude = 51.501 WHERE id = 'v-1'",
    "UPDATE sites SET longitude = -0.121 WHERE id = 'v-2'",
    "UPDATE sites SET category = 6 WHERE id = 'v-2'",
    "UPDATE sites SET region = 'AFR' WHERE id = 'v-2'",
    "UPDATE sites SET country = 'FR' WHERE id = 'v-2'",
    "UPDATE site_tags SET tag = '~grass' WHERE site_id = 'v-1'",
    "INSERT INTO site_tags (site_id, tag) VALUES ('v-2', '~fuel')",
    "UPDATE meta SET value = '{\"8\":\"Heliports\"}' WHERE key = 'category_names'"
  ]
  const seen = new Set([first.version])
  for (const edit of edits) {
    const db = new Database(path)
    db.exec(edit)
    db.close()
    const version = loadDataset(path, 'sandbox').version
    t.notOk(seen.has(version), edit)
    seen.add(version)
  }
})
