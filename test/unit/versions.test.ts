// Dataset versions on real files: what a replacement changes, the file it keeps, the guard, dry
// runs, rollbacks, pruning, a file replaced meanwhile, and index snapshots after a rollback.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import t from 'tap'
import { CHANGE_EXAMPLES } from '../../src/sites/changes.ts'
import { datasetPath, openDatasetWriter, writeDataset, type SiteRow } from '../../src/sites/dataset-file.ts'
import { loadDataset } from '../../src/sites/dataset.ts'
import { generateSites } from '../../src/sites/generator.ts'
import { readSnapshot, snapshotPath, writeSnapshot } from '../../src/sites/snapshot.ts'
import {
  keptVersions, listVersions, replaceDataset, rollbackDataset, versionsFolder, type ReplacePolicy
} from '../../src/sites/versions.ts'
import { site, tmpDataDir } from '../helper.ts'

/** `sites` in place of the dataset file at `path`, as an import replaces it. */
function replace (path: string, sites: SiteRow[], source: string, policy: Partial<ReplacePolicy> = {}) {
  const writer = openDatasetWriter(path, undefined, { scratch: policy.dryRun })
  for (const s of sites) writer.add(s)
  return replaceDataset(writer, path, { source, precision: 3 }, { keep: 3, ...policy })
}

const sourceOf = (path: string) => loadDataset(path, 'production').meta.source
const keptSources = (path: string) => keptVersions(path).map((v) => sourceOf(v.path))
/** Every file of DATA_DIR and its versions folder but the lock, with its bytes. */
const files = (dir: string) => {
  const list = (folder: string, prefix: string) => readdirSync(folder, { withFileTypes: true })
    .filter((e) => e.isFile() && !e.name.endsWith('.lock'))
    .map((e) => [prefix + e.name, readFileSync(join(folder, e.name)).toString('base64')])
  let versions: string[][] = []
  try { versions = list(versionsFolder(dir), 'versions/') } catch {}
  return [...list(dir, ''), ...versions].sort()
}

const TEN = Array.from({ length: 10 }, (_, i) => site(`s${i}`, 4, 50 + i / 10, 1, ['~fuel']))

t.test('the changes: ids added and removed, and kept ids whose served fields or tags differ', async (t) => {
  const path = datasetPath(tmpDataDir(t), 'production')
  const base = site('base', 4, 51.5, -0.1, ['~fuel', '~night'])
  const edits: [string, Partial<SiteRow>][] = [
    ['category', { category: 7 }], ['name', { name: 'Other' }], ['region', { region: 'NAM' }],
    ['country', { country: 'FR' }], ['latitude', { latitude: 51.501 }], ['longitude', { longitude: -0.101 }],
    ['tag-added', { tags: ['~fuel', '~night', '~ppr'] }], ['tag-removed', { tags: ['~fuel'] }],
    ['tag-swapped', { tags: ['~fuel', '~ppr'] }], ['tags-gone', { tags: [] }]
  ]
  const old = [...edits.map(([id]) => ({ ...base, id })), { ...base, id: 'same' }, { ...base, id: 'gone' }]
  writeDataset(path, old, { source: 'old', precision: 3 })
  const next = [...edits.map(([id, edit]) => ({ ...base, id, ...edit })), { ...base, id: 'same' },
    { ...base, id: 'new' }, { ...base, id: 'new-untagged', tags: [] }]
  const r = replace(path, next, 'new', { dryRun: true })
  t.same(r, {
    ok: true,
    dryRun: true,
    siteCount: 13,
    changes: {
      before: 12,
      after: 13,
      added: { count: 2, first: ['new', 'new-untagged'] },
      removed: { count: 1, first: ['gone'] },
      changed: { count: 10, first: edits.map(([id]) => id).sort() }
    },
    unreadable: undefined,
    pruned: [],
    warnings: []
  })

  // the counts are exact; the ids named are the first in id order
  const many = Array.from({ length: 25 }, (_, i) => site(`m${String(i).padStart(2, '0')}`, 4, 1, 1))
  const c = replace(path, many, 'many', { dryRun: true, keep: 3 })
  t.ok(c.ok)
  if (!c.ok) return
  t.same(c.changes.added, { count: 25, first: many.slice(0, CHANGE_EXAMPLES).map((s) => s.id) })
  t.same(c.changes.removed.count, 12)
})

t.test('a replacement keeps the file it replaces; ids grow; the oldest past DATASET_KEEP are pruned', async (t) => {
  const dir = tmpDataDir(t)
  const path = datasetPath(dir, 'production')
  const first = replace(path, TEN, 'v1')
  t.same(first.ok && [first.kept, first.pruned], [undefined, []], 'no file there: nothing kept')
  t.same(readdirSync(versionsFolder(dir)), ['production.lock'], 'only the lock')
  const ids: string[] = []
  for (const v of ['v2', 'v3', 'v4', 'v5']) {
    const r = replace(path, TEN, v)
    t.ok(r.ok, v)
    if (!r.ok) return
    ids.push(r.kept!)
    t.same(r.pruned, v === 'v5' ? [ids[0]] : [], `${v}: pruned`)
  }
  t.equal(sourceOf(path), 'v5')
  t.same(keptSources(path), ['v4', 'v3', 'v2'], 'the last three replaced, newest first')
  t.same(keptVersions(path).map((v) => v.id), ids.slice(1).reverse())
  t.same([...ids].sort(), ids, 'each id later than the one before')
  for (const v of keptVersions(path)) {
    t.match(v.id, /^\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}Z$/)
    t.equal(v.replacedAt, v.id.replace(/T(\d\d)-(\d\d)-(\d\d)/, 'T$1:$2:$3'))
    t.equal(v.path, join(dir, 'versions', `production.${v.id}.db`))
  }

  // a clock that steps back an hour does not make the newest look older
  const now = Date.now
  t.teardown(() => { Date.now = now })
  Date.now = () => now() - 3_600_000
  const late = replace(path, TEN, 'v6', { keep: 10 })
  Date.now = now
  t.ok(late.ok)
  if (!late.ok) return
  t.equal(keptVersions(path)[0].id, late.kept, 'still the newest')
  t.equal(Date.parse(keptVersions(path)[0].replacedAt) - Date.parse(keptVersions(path)[1].replacedAt), 1)
  t.same(keptSources(path), ['v5', 'v4', 'v3', 'v2'])
  // a lower DATASET_KEEP prunes at the next replacement
  const lower = replace(path, TEN, 'v7', { keep: 1 })
  t.same(lower.ok && lower.pruned.length, 4)
  t.same(keptSources(path), ['v6'])
})

t.test('a dry run writes nothing, and says what the replacement would change', async (t) => {
  const dir = tmpDataDir(t)
  const path = datasetPath(dir, 'production')
  replace(path, TEN, 'v1')
  replace(path, TEN.slice(0, 8), 'v2')
  const before = files(dir)
  const r = replace(path, [...TEN.slice(2), site('z', 4, 1, 1)], 'v3', { dryRun: true })
  t.same(r.ok && [r.dryRun, r.siteCount, r.builtAt, r.kept, r.changes.added.first, r.changes.removed.first],
    [true, 9, undefined, undefined, ['s8', 's9', 'z'], ['s0', 's1']])
  t.same(files(dir), before, 'every file as it was, and no other')
})

t.test('removing more than half of a non-empty dataset is refused, unless forced', async (t) => {
  const dir = tmpDataDir(t)
  const path = datasetPath(dir, 'production')
  t.ok(replace(path, [], 'empty').ok)
  t.ok(replace(path, TEN, 'ten', { guard: true }).ok, 'an empty dataset: nothing to remove')
  const half = replace(path, TEN.slice(5), 'half', { guard: true })
  t.same(half.ok && half.changes.removed.count, 5, 'half: taken')
  replace(path, TEN, 'ten again')
  const before = files(dir)
  for (const dryRun of [false, true]) {
    const refused = replace(path, TEN.slice(6), 'four', { guard: true, dryRun })
    t.same(refused.ok ? 'taken' : [refused.refusal, refused.changes.before, refused.changes.removed.count],
      ['removes-too-many', 10, 6], `six of ten${dryRun ? ', dry run' : ''}: refused`)
  }
  t.same(files(dir), before, 'nothing written')
  t.ok(replace(path, TEN.slice(6), 'four', { guard: false }).ok, 'not guarded (generate)')
  replace(path, TEN, 'ten once more')
  const forced = replace(path, [], 'none', { guard: true, force: true })
  t.same(forced.ok && [forced.siteCount, forced.changes.removed.count], [0, 10], 'forced: every site removed')
  t.equal(sourceOf(path), 'none')
  t.equal(sourceOf(keptVersions(path)[0].path), 'ten once more', 'and the file it replaced kept')
})

t.test('rollback: the last replaced file back, the current one kept, so a second rollback undoes it', async (t) => {
  const dir = tmpDataDir(t)
  const path = datasetPath(dir, 'production')
  t.throws(() => rollbackDataset(path, { keep: 3 }),
    { message: `${path} has no kept version to roll back to (a version is kept at each import or generate)` })
  for (const v of ['v1', 'v2', 'v3']) replace(path, TEN, v)
  const [v2, v1] = keptVersions(path)
  const back = rollbackDataset(path, { keep: 3 })
  t.equal(sourceOf(path), 'v2')
  t.same([back.restored.version, back.restored.meta?.source, back.kept?.meta?.source, back.pruned],
    [v2.id, 'v2', 'v3', []])
  t.same(keptSources(path), ['v3', 'v1'])
  t.equal(keptVersions(path)[0].id, back.kept?.version)
  t.equal(back.kept?.path, keptVersions(path)[0].path)
  rollbackDataset(path, { keep: 3 })
  t.equal(sourceOf(path), 'v3', 'the rollback undone')
  t.same(keptSources(path), ['v2', 'v1'])

  const older = rollbackDataset(path, { keep: 3, to: v1.id })
  t.same([sourceOf(path), older.restored.version], ['v1', v1.id], '--to: any kept version')
  t.same(keptSources(path), ['v3', 'v2'])
  const ids = keptVersions(path).map((v) => v.id)
  t.throws(() => rollbackDataset(path, { keep: 3, to: 'yesterday' }),
    { message: `${path} has no kept version yesterday; its versions: ${ids.join(', ')}` })

  // a kept file the service would refuse is not put back
  const before = files(dir)
  const damaged = keptVersions(path)[0]
  const bytes = readFileSync(damaged.path)
  writeFileSync(damaged.path, bytes.subarray(0, 4096))
  t.throws(() => rollbackDataset(path, { keep: 3 }), {
    message: `version ${damaged.id} cannot be put back, the service would refuse it: database disk image is malformed`
  })
  writeFileSync(damaged.path, bytes)
  t.same(files(dir), before, 'nothing moved')

  // no current file (deleted by hand): the version comes back, nothing to keep
  const lost = readFileSync(path)
  writeFileSync(join(dir, 'lost.db'), lost)
  rmSync(path)
  const restored = rollbackDataset(path, { keep: 3 })
  t.same([sourceOf(path), restored.kept], ['v3', undefined])
  t.same(keptSources(path), ['v2'])
})

t.test('a file replaced by another command after the comparison: refused, nothing lost', async (t) => {
  const dir = tmpDataDir(t)
  const path = datasetPath(dir, 'production')
  replace(path, TEN, 'v1')
  const writer = openDatasetWriter(path)
  for (const s of TEN) writer.add(s)
  const compare = writer.compare
  // another import commits while this one compares
  writer.compare = (other) => {
    const changes = compare(other)
    replace(path, TEN, 'other')
    return changes
  }
  const r = replaceDataset(writer, path, { source: 'mine', precision: 3 }, { keep: 3 })
  t.same(r.ok ? 'taken' : r.refusal, 'replaced-meanwhile')
  t.equal(sourceOf(path), 'other', 'the other import stands')
  t.same(keptSources(path), ['v1'])
  t.same(readdirSync(dir).filter((f) => f.startsWith('.')), [], 'no temporary file left')
})

t.test("a command waits while another holds the dataset's lock, then goes on", async (t) => {
  const dir = tmpDataDir(t)
  const path = datasetPath(dir, 'production')
  replace(path, TEN, 'v1')
  // another process holds the lock, as a command does while it keeps and renames files
  const sqlite = createRequire(import.meta.url).resolve('better-sqlite3')
  const holder = spawn('env', ['-u', 'NODE_OPTIONS', process.execPath, '-e',
    `const Database = require(${JSON.stringify(sqlite)})
    const db = new Database(${JSON.stringify(join(versionsFolder(dir), 'production.lock'))})
    db.exec('BEGIN EXCLUSIVE')
    console.log('held')
    setTimeout(() => { db.exec('COMMIT'); db.close() }, 1500)`])
  const exited = once(holder, 'exit')
  await once(holder.stdout, 'data')
  const started = performance.now()
  const r = replace(path, TEN, 'v2')
  const waited = performance.now() - started
  t.ok(r.ok)
  t.ok(waited > 1000, `waited for the lock (${Math.round(waited)} ms)`)
  t.same(keptSources(path), ['v1'])
  await exited
})

t.test('a current file that cannot be read is replaced, and kept', async (t) => {
  const dir = tmpDataDir(t)
  const path = datasetPath(dir, 'production')
  writeFileSync(path, 'not a database, but somebody may want it back')
  const r = replace(path, TEN, 'mended', { guard: true })
  t.same(r.ok && [r.unreadable, r.changes.before, r.changes.added.count], ['file is not a database', 0, 10])
  t.equal(readFileSync(keptVersions(path)[0].path, 'utf8'), 'not a database, but somebody may want it back')
  const listed = listVersions(path)
  t.same(listed.map((v) => [v.version, v.current, v.error, v.meta?.source]), [
    ['current', true, undefined, 'mended'],
    [keptVersions(path)[0].id, false, 'unreadable: file is not a database', undefined]
  ])
  t.same(listed.map((v) => v.sizeBytes), [statSync(path).size, 45])
  t.same(listVersions(datasetPath(dir, 'sandbox')), [
    { version: 'current', current: true, path: datasetPath(dir, 'sandbox'), error: 'missing' }
  ])
})

t.test('an index snapshot is never taken for the file a rollback puts back, nor the other way', async (t) => {
  const dir = tmpDataDir(t)
  const path = datasetPath(dir, 'production')
  const sites = [...generateSites({ count: 3000, seed: 'a', prefix: 'p' })]
  // both files of the same size and time: only their meta tells them apart
  const time = 1_800_000_000
  replace(path, sites, 'a')
  utimesSync(path, time, time)
  const a = loadDataset(path, 'production')
  writeSnapshot(a)
  // a name changed for one of the same length, the source's length kept: the same size
  replace(path, [{ ...sites[0], name: sites[0].name.toUpperCase() }, ...sites.slice(1)], 'b')
  utimesSync(path, time, time)
  t.same([statSync(path).size, statSync(path).mtimeMs], [statSync(keptVersions(path)[0].path).size, time * 1000])
  const b = loadDataset(path, 'production')
  t.not(b.digest, a.digest)
  const reasons: string[] = []
  const unusable = (reason: string) => reasons.push(reason)
  t.equal(readSnapshot(path, 'production', unusable), undefined, "a's snapshot is not taken for b")
  writeSnapshot(b)
  t.equal(readSnapshot(path, 'production')?.digest, b.digest)

  rollbackDataset(path, { keep: 3 })
  t.equal(readSnapshot(path, 'production', unusable), undefined, "b's snapshot is not taken for a, back in place")
  t.equal(loadDataset(path, 'production').digest, a.digest)
  writeSnapshot(loadDataset(path, 'production'))
  t.equal(readSnapshot(path, 'production')?.digest, a.digest)
  rollbackDataset(path, { keep: 3 })
  t.equal(readSnapshot(path, 'production', unusable), undefined, 'nor the other way')
  t.equal(loadDataset(path, 'production').digest, b.digest)
  t.same(reasons, Array(3).fill('made from another version of the dataset file (its meta differs)'))
  t.ok(snapshotPath(path).endsWith('production.db.index'))
})
