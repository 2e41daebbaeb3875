// Index snapshots: the same dataset as the SQLite file gives, and never a stale or broken one.
import { spawnSync } from 'node:child_process'
import { readFileSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { datasetPath, writeDataset } from '../../src/sites/dataset-file.ts'
import { contentDigest, findNearby, loadDataset } from '../../src/sites/dataset.ts'
import { seededRandom } from '../../src/sites/generator.ts'
import { SNAPSHOT_MATH, readSnapshot, snapshotCurrent, snapshotPath, writeSnapshot } from '../../src/sites/snapshot.ts'
import { NearbySearch, type SubIndex } from '../../src/sites/spatial.ts'
import { buildApp } from '../../src/app.ts'
import { REPO_ROOT, buildTestApp, logCapture, randomSites, site, testConfig, tmpDataDir } from '../helper.ts'
import { node } from '../child.ts'

const search = new NearbySearch()

const bytesOf = (a: ArrayBufferView) => Buffer.from(a.buffer, a.byteOffset, a.byteLength)
/** An index as bytes: its tree, and its per-slot tables bit for bit (cosines compared as bytes, not numbers). */
const plainIndex = (i: SubIndex) => ({
  data: Buffer.from(i.kd.data as ArrayBuffer),
  positions: [...i.positions],
  cos: bytesOf(i.slotCosLats),
  slots: bytesOf(i.slotPositions)
})
const plain = (ds: ReturnType<typeof loadDataset>) => ({
  ...ds,
  all: ds.all && plainIndex(ds.all),
  byCategory: [...ds.byCategory].map(([c, i]) => [c, plainIndex(i)]),
  tagSites: [...ds.tagSites].map(([tag, list]) => [tag, [...list]]),
  tagIndexes: [...ds.tagIndexes].map(([tag, i]) => [tag, plainIndex(i)]),
  // the filters' tables are keyed by tree object: the searches below compare what they let in
  filters: undefined,
  tagViews: undefined
})

t.test('a snapshot reads back the dataset exactly', async (t) => {
  const dir = tmpDataDir(t)
  const path = datasetPath(dir, 'production')
  const odd = site('odd', 7, 1, 1, [], { name: 'Quote " ✈ \u2028', region: 'OCE', country: 'NZ' })
  const sites = [...randomSites('snap', 4000, 'q'), odd]
  // one tag on 1,100 sites, so a tag index is written too
  for (let i = 0; i < 1100; i++) sites[i].tags = [...sites[i].tags, '~common']
  writeDataset(path, sites, { source: 'test', precision: 3 })
  t.equal(readSnapshot(path, 'production'), undefined, 'none yet')
  t.equal(snapshotCurrent(path), false)
  const fromFile = loadDataset(path, 'production')
  t.ok(fromFile.tagIndexes.has('~common'))
  writeSnapshot(fromFile)
  t.equal(snapshotCurrent(path), true)
  const fromSnapshot = readSnapshot(path, 'production')!
  t.ok(fromSnapshot)
  t.same(plain(fromSnapshot), plain(fromFile))
  t.equal(contentDigest(fromSnapshot), fromFile.digest, 'its digest is of what it serves')
  const random = seededRandom('snap-queries')
  for (let i = 0; i < 300; i++) {
    const q = {
      lat: random() * 180 - 90,
      lng: random() * 360 - 180,
      radiusKm: 5000 * random(),
      limit: 1 + Math.floor(random() * 50),
      categories: [2, 4, 5, 6, 7, 8, 9, 10],
      tag: random() < 0.3 ? '~common' : undefined
    }
    const hits = (ds: typeof fromFile) => JSON.stringify(findNearby(ds, q, search).hits)
    if (hits(fromSnapshot) !== hits(fromFile)) {
      t.fail('search differs', q)
      return
    }
  }
})

/** The snapshot's file as if another V8 had made it (its header's length unchanged). */
function madeByAnotherV8 (path: string) {
  const bytes = readFileSync(snapshotPath(path))
  const at = bytes.indexOf(`"math":"${SNAPSHOT_MATH}"`)
  if (at < 0) throw new Error('no math in the header')
  bytes.write('X', at + '"math":"'.length, 'latin1')
  writeFileSync(snapshotPath(path), bytes)
}

t.test('per-slot tables are read back only where Math.cos gives the same bits', async (t) => {
  const dir = tmpDataDir(t)
  const path = datasetPath(dir, 'production')
  writeDataset(path, randomSites('cos', 3000, 'c'), { source: 'test', precision: 3 })
  const fromFile = loadDataset(path, 'production')
  writeSnapshot(fromFile)
  const bytes = readFileSync(snapshotPath(path))
  // the all-sites index's first cosine changed in the file (by one bit), found there by its bytes
  // and the next seven cosines' (in one place only)
  const cosines = bytesOf(fromFile.all!.slotCosLats).subarray(0, 64)
  const at = bytes.indexOf(cosines)
  t.ok(at > 0 && bytes.indexOf(cosines, at + 1) === -1, 'the cosines are in the file, once')
  bytes[at] ^= 1
  writeFileSync(snapshotPath(path), bytes)
  t.not(bytesOf(readSnapshot(path, 'production')!.all!.slotCosLats).compare(bytesOf(fromFile.all!.slotCosLats)), 0,
    'made by this V8: read from the file')
  // the same file as if another V8 had made it: the tables are made again
  madeByAnotherV8(path)
  t.same(plain(readSnapshot(path, 'production')!), plain(fromFile), 'made by another: made again, as from the file')
  t.equal(snapshotCurrent(path), false, 'and not current: the index worker writes it again')
})

t.test('after a Node.js upgrade the service boots from the snapshot and a reload writes it again', async (t) => {
  const sites = randomSites('upgrade', 3000, 'u')
  const first = await buildTestApp(t, { production: sites }, { INDEX_WORKER_MIN_MB: '0' })
  await first.app.close()
  const path = datasetPath(first.dataDir, 'production')
  t.equal(snapshotCurrent(path), true)
  madeByAnotherV8(path)
  t.equal(snapshotCurrent(path), false)
  const app = await buildApp(testConfig(first.dataDir, { INDEX_WORKER_MIN_MB: '0' }))
  t.teardown(() => app.close())
  t.equal(app.datasets.get('production').count, 3000, 'booted')
  t.equal(snapshotCurrent(path), false, 'from the snapshot as it was: the boot did not index the file again')
  const outcome = await app.reloadDatasets('test')
  t.equal(outcome.ok, true)
  t.equal(snapshotCurrent(path), true, 'the reload wrote it again')
  const q = { lat: 48, lng: 2, radiusKm: 20000, limit: 50, categories: [2, 3, 4, 5, 6, 7, 8, 9, 10] }
  const served = app.datasets.get('production')
  t.same(findNearby(served, q, search).hits, findNearby(loadDataset(path, 'production'), q, search).hits)
})

t.test('a snapshot of another version of the file, or a broken one, is ignored', async (t) => {
  const dir = tmpDataDir(t)
  const path = datasetPath(dir, 'sandbox')
  writeDataset(path, [site('a', 4, 1, 1)], { source: 'one', precision: 3 })
  writeSnapshot(loadDataset(path, 'sandbox'))
  const good = readFileSync(snapshotPath(path))
  writeDataset(path, [site('b', 4, 1, 1)], { source: 'two', precision: 3 })
  const reasons: string[] = []
  const why = (reason: string) => { reasons.push(reason) }
  t.equal(readSnapshot(path, 'sandbox', why), undefined, 'the file was replaced')
  t.equal(snapshotCurrent(path), false)
  writeSnapshot(loadDataset(path, 'sandbox'))
  t.equal(readSnapshot(path, 'sandbox')!.ids.at(0), 'b')
  utimesSync(path, new Date(), new Date(Date.now() + 5000))
  t.equal(readSnapshot(path, 'sandbox', why), undefined, 'the file was touched')
  writeSnapshot(loadDataset(path, 'sandbox'))
  const bytes = readFileSync(snapshotPath(path))
  writeFileSync(snapshotPath(path), bytes.subarray(0, bytes.length - 9))
  t.equal(readSnapshot(path, 'sandbox', why), undefined, 'cut short')
  writeFileSync(snapshotPath(path), Buffer.concat([Buffer.from('garbage!'), bytes.subarray(8)]))
  t.equal(readSnapshot(path, 'sandbox', why), undefined, 'not a snapshot')
  // a damaged header naming a section of a terabyte: refused before anything that size is allocated
  const headerLength = bytes.readUInt32LE(8)
  const header = JSON.parse(bytes.toString('utf8', 16, 16 + headerLength))
  const first = Object.keys(header.sections)[0]
  header.sections[first][1] = 2 ** 40
  const damaged = Buffer.from(JSON.stringify(header))
  const lead = Buffer.from(bytes.subarray(0, 16))
  lead.writeUInt32LE(damaged.length, 8)
  writeFileSync(snapshotPath(path), Buffer.concat([lead, damaged, bytes.subarray(16 + headerLength)]))
  t.equal(readSnapshot(path, 'sandbox', why), undefined, 'a section past the end')
  // a damaged lead naming a header of 4 GiB: refused before it is allocated
  lead.writeUInt32LE(0xfffffff0, 8)
  writeFileSync(snapshotPath(path), Buffer.concat([lead, damaged, bytes.subarray(16 + headerLength)]))
  t.equal(readSnapshot(path, 'sandbox', why), undefined, 'a header past the end')
  writeFileSync(snapshotPath(path), good)
  t.equal(readSnapshot(path, 'sandbox', why), undefined, 'an old snapshot put back')
  t.same(reasons, [
    'made from another version of the dataset file (its size or modification time differ)',
    'made from another version of the dataset file (its size or modification time differ)',
    'snapshot is cut short',
    'not an index snapshot of this format (LSPIDX06): another version of the service wrote it, or it is damaged',
    'snapshot is cut short',
    'snapshot header runs past the end of the file',
    'made from another version of the dataset file (its size or modification time differ)'
  ], 'each refusal says why')
})

t.test('a writer killed before its rename leaves its temporary file; ' +
  'the next snapshot written removes it', async (t) => {
  const dir = tmpDataDir(t)
  const path = datasetPath(dir, 'production')
  writeDataset(path, randomSites('kill', 3000, 'k'), { source: 'test', precision: 3 })
  // a process that writes the snapshot whole and is killed where it would rename it into place
  const source = (file: string) => JSON.stringify(new URL(`../../src/sites/${file}`, import.meta.url).href)
  const script = `import fs from 'node:fs'
    import { syncBuiltinESMExports } from 'node:module'
    const { loadDataset } = await import(${source('dataset.ts')})
    const { writeSnapshot } = await import(${source('snapshot.ts')})
    fs.renameSync = () => process.kill(process.pid, 'SIGKILL')
    syncBuiltinESMExports()
    writeSnapshot(loadDataset(process.argv[1], 'production'))`
  const killed = spawnSync(...node(['--import', 'tsx', '--input-type=module', '-e', script, path]),
    { cwd: REPO_ROOT, encoding: 'utf8' })
  t.equal(killed.signal, 'SIGKILL', killed.stderr)
  const left = readdirSync(dir).filter((name) => name !== 'production.db')
  t.equal(left.length, 1, 'its temporary file is left')
  t.ok(statSync(join(dir, left[0])).size > 100_000, 'written whole: as large as the snapshot')
  writeSnapshot(loadDataset(path, 'production'))
  t.same(readdirSync(dir).sort(), ['production.db', 'production.db.index'], 'the next writer removed it')
  t.equal(snapshotCurrent(path), true)
})

t.test('the service logs why a snapshot was not used, at warn; a missing one is not logged', async (t) => {
  const { lines, stream } = logCapture()
  const sites = randomSites('why', 300, 'y')
  const first = await buildTestApp(t, { production: sites }, { INDEX_WORKER_MIN_MB: '0' })
  await first.app.close()
  const path = datasetPath(first.dataDir, 'production')
  const snapshot = readFileSync(snapshotPath(path))
  writeFileSync(snapshotPath(path), snapshot.subarray(0, snapshot.length - 9))
  const app = await buildApp(testConfig(first.dataDir, { INDEX_WORKER_MIN_MB: '0' }),
    { logger: { level: 'info', stream } })
  t.teardown(() => app.close())
  const warned = lines.map((l) => JSON.parse(l)).filter((l) => l.level === 40)
  t.same(warned.map((l) => [l.dataset, l.reason, l.msg]), [
    ['production', 'snapshot is cut short', 'index snapshot not used; the dataset file is read and checked instead']
  ], 'the sandbox had no snapshot: nothing said of it')
  t.equal(snapshotCurrent(path), true)
  t.ok(readSnapshot(path, 'production'), 'written anew by the index worker')
  t.match(lines.join(''), /"msg":"dataset verified and indexed; snapshot written"/)
})

t.test('the service indexes large files in a worker, boots from the snapshot, verifies on reload', async (t) => {
  const sites = randomSites('worker', 3000, 'w')
  const { app, dataDir } = await buildTestApp(t, { production: sites }, { INDEX_WORKER_MIN_MB: '0' })
  const path = datasetPath(dataDir, 'production')
  t.equal(snapshotCurrent(path), true, 'the worker wrote the snapshot at boot')
  t.equal(app.datasets.get('production').count, 3000)
  writeDataset(path, sites.slice(0, 100), { source: 'smaller', precision: 3 })
  const outcome = await app.reloadDatasets('test')
  t.equal(outcome.ok, true)
  t.equal(app.datasets.get('production').count, 100)
  t.equal(snapshotCurrent(path), true, 'and wrote it again for the new file')
  writeFileSync(path, 'corrupt')
  const refused = await app.reloadDatasets('test')
  t.equal(refused.ok, false)
  t.match(refused.ok === false && refused.error, /production\.db: /)
  t.equal(app.datasets.get('production').count, 100, 'the old data keeps serving')
})
