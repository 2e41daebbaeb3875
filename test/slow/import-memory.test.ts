// One record is bounded in size and nesting (issue 50): the CLI imports a file whose one line or
// feature is 10 MB of nested arrays, or a CSV line of 10 million commas, in the memory of a small
// import, and refuses it at that line or feature; the old dataset file stays as it was. The CLI is
// a real process; its peak memory is what getrusage counts.
import { spawnSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { datasetPath, writeDataset } from '../../src/sites/dataset-file.ts'
import { REPO_ROOT, site, tmpDataDir } from '../helper.ts'
import { baseEnv } from '../run.ts'
import { node } from '../child.ts'

const dir = tmpDataDir(t)
const dataDir = tmpDataDir(t)
const target = datasetPath(dataDir, 'production')

/** `datasets import` of `file` as a process: its exit status, stderr and peak memory in MiB. */
function importFile (file: string) {
  const rssFile = join(dir, 'max-rss')
  const r = spawnSync(...node([
    '--import', 'tsx', '--import', join(REPO_ROOT, 'test/fixtures/max-rss.mjs'), join(REPO_ROOT, 'scripts/admin.ts'),
    'datasets', 'import', '--dataset', 'production', '--file', file
  ]), { cwd: REPO_ROOT, env: baseEnv({ DATA_DIR: dataDir, MAX_RSS_FILE: rssFile }), encoding: 'utf8' })
  return { status: r.status, stderr: r.stderr, mib: Number(readFileSync(rssFile, 'utf8')) / 1024 }
}

const MB = 10_000_000
const nested = (bytes: number) => '['.repeat(bytes / 2) + ']'.repeat(bytes / 2)
const files = {
  'nested.ndjson': [nested(MB) + '\n',
    'line 1: the line is longer than 64 KiB (65,536 bytes), the most one record may take'],
  'nested.geojson': [`{"type":"FeatureCollection","features":[${nested(MB)}]}\n`,
    'feature 1: the feature is longer than 64 KiB (65,536 bytes), the most one record may take'],
  'commas.csv': [`id,category,name,region,country,latitude,longitude,tags\nx${','.repeat(MB)}\n`,
    'line 2: the record is longer than 64 KiB (65,536 bytes), the most one record may take']
}

t.test('a 10 MB record is refused in the memory of a one-line import', async (t) => {
  const small = join(dir, 'small.ndjson')
  writeFileSync(small, JSON.stringify(
    { id: 's', category: 4, name: 'S', region: 'EUR', country: 'GB', latitude: 1, longitude: 1 }) + '\n')
  const baseline = importFile(small)
  t.equal(baseline.status, 0, baseline.stderr)
  writeDataset(target, [site('old', 4, 1, 1)], { source: 'old', precision: 3 })
  const old = readFileSync(target)
  for (const [name, [text, refusal]] of Object.entries(files)) {
    const file = join(dir, name)
    writeFileSync(file, text)
    const r = importFile(file)
    t.comment(`${name}: ${r.mib.toFixed(0)} MiB at most (a one-line import: ${baseline.mib.toFixed(0)} MiB)`)
    t.equal(r.status, 1)
    t.equal(r.stderr, `${refusal}\nerror: import refused: 1 invalid row; ${target} is unchanged\n`)
    t.ok(r.mib < baseline.mib + 64, `${name}: within 64 MiB of a one-line import`)
    t.same(readFileSync(target), old, 'the old file is untouched')
  }
})
