// Dataset versions through the operator CLI on a real DATA_DIR: what an import changes and keeps,
// --dry-run, the refusal of an import that removes more than half the sites, datasets versions,
// datasets rollback (and its undoing), DATASET_KEEP; main() in this process, and real processes
// for the refusal and the rollback.
import { readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { cannotRefuseWrites, tmpDataDir, writesRefused } from './helper.ts'
import { admin, adminInProcess } from './run.ts'

const dir = tmpDataDir(t)
const env = { DATA_DIR: dir }
const run = (...args: string[]) => adminInProcess(args, env)
const production = join(dir, 'production.db')
const HEADER = 'id,category,name,region,country,latitude,longitude,tags\n'
const row = (id: string, name: string, tags = '~fuel') => `${id},4,${name},EUR,GB,51.5,-0.1,${tags}\n`
const csv = (name: string, rows: string[]) => {
  const file = join(dir, name)
  writeFileSync(file, HEADER + rows.join(''))
  return file
}
const ten = Array.from({ length: 10 }, (_, i) => row(`a${i}`, `Pad ${i}`))
const A = csv('a.csv', ten)
// a0 renamed, a1 with another tag, a9 gone, b0 and b1 new
const B = csv('b.csv', [row('a0', 'Pad zero'), row('a1', 'Pad 1', '~fuel|~night'), ...ten.slice(2, 9),
  row('b0', 'New 0'), row('b1', 'New 1')])
// four of b's eleven sites
const C = csv('c.csv', ten.slice(0, 4))

/** The import's time, which varies, as `S`. */
const steady = (text: string) => text.replace(/ in \d+(\.\d+)? s /, ' in S s ')
/** Every file under DATA_DIR with its bytes. */
const snapshot = () => {
  const list = (folder: string): string[][] => readdirSync(folder, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? list(join(folder, e.name))
      : [[join(folder, e.name), readFileSync(join(folder, e.name)).toString('base64')]])
  return list(dir).sort()
}
const versions = async () => JSON.parse((await run('datasets', 'versions', '--dataset', 'production', '--json')).stdout)
const kB = (path: string) => `${(statSync(path).size / 1e3).toFixed(1)} kB`
const RELOAD_HINT = "run 'datasets reload' to serve them"

t.test('import: the sites it changes, and the file it replaces kept', async (t) => {
  const first = await run('datasets', 'import', '--dataset', 'production', '--file', A)
  t.equal(first.status, 0, first.stderr)
  t.equal(steady(first.stdout), `imported 10 sites into ${production} in S s (coordinates rounded to 3 decimals)\n` +
    `sites: 10 added, 0 removed, 0 changed, 0 unchanged\n${RELOAD_HINT}\n`, 'no file there: nothing kept')

  const before = snapshot()
  const dry = await run('datasets', 'import', '--dataset', 'production', '--file', B, '--dry-run')
  t.same([dry.status, dry.stderr], [0, ''])
  t.equal(dry.stdout, `dry run: the 11 sites of ${B} are valid (coordinates rounded to 3 decimals)\n` +
    'sites: 2 added, 1 removed, 2 changed, 7 unchanged\n' +
    '  added: b0, b1\n  removed: a9\n  changed: a0, a1\n' +
    'nothing written (dry run)\n')
  const dryJson = await run('datasets', 'import', '--dataset', 'production', '--file', B, '--dry-run', '--json')
  t.equal(dryJson.status, 0)
  t.type(JSON.parse(dryJson.stdout).seconds, 'number')
  t.same({ ...JSON.parse(dryJson.stdout), seconds: 'S' }, {
    ok: true,
    dataset: 'production',
    file: B,
    format: 'csv',
    precision: 3,
    site_count: 11,
    seconds: 'S',
    dry_run: true,
    changes: {
      before: 10,
      after: 11,
      added: { count: 2, first: ['b0', 'b1'] },
      removed: { count: 1, first: ['a9'] },
      changed: { count: 2, first: ['a0', 'a1'] }
    }
  })
  t.same(snapshot(), before, 'a dry run writes nothing')

  const second = await run('datasets', 'import', '--dataset', 'production', '--file', B, '--json')
  t.equal(second.status, 0, second.stderr)
  const report = JSON.parse(second.stdout)
  const [current, kept] = await versions()
  t.same([report.dry_run, report.site_count, report.built_at, report.changes.changed.count, report.kept_version,
    report.pruned_versions], [false, 11, current.built_at, 2, kept.version, []])
  t.same([kept.source, kept.site_count], ['import a.csv (csv)', 10], 'the file replaced, kept')
})

t.test('an import that removes more than half the sites: refused, naming --force', async (t) => {
  const before = snapshot()
  const reason = 'error: import refused: it would remove 7 of the 11 sites of production (more than half); ' +
    `${production} is unchanged (give --force to import it anyway)\n`
  const refused = admin(['datasets', 'import', '--dataset', 'production', '--file', C], env)
  t.same([refused.status, refused.stdout, refused.stderr], [1, '', reason], 'a real process: exit 1, one line')
  const json = await run('datasets', 'import', '--dataset', 'production', '--file', C, '--json')
  t.same([json.status, json.stderr], [1, reason])
  const removed = { count: 7, first: ['a4', 'a5', 'a6', 'a7', 'a8', 'b0', 'b1'] }
  const none = { count: 0, first: [] }
  t.same(JSON.parse(json.stdout), {
    ok: false,
    dataset: 'production',
    refusal: 'removes-too-many',
    changes: { before: 11, after: 4, added: none, removed, changed: { count: 2, first: ['a0', 'a1'] } },
    file: C
  })
  const dry = await run('datasets', 'import', '--dataset', 'production', '--file', C, '--dry-run')
  t.same([dry.status, dry.stdout], [1, ''], 'a dry run of it fails as the import would')
  t.equal(dry.stderr, 'sites: 0 added, 7 removed, 2 changed, 2 unchanged\n' +
    '  removed: a4, a5, a6, a7, a8, b0, b1\n  changed: a0, a1\n' + reason)
  t.same(snapshot(), before, 'nothing written')

  const forced = await run('datasets', 'import', '--dataset', 'production', '--file', C, '--force')
  t.equal(forced.status, 0, forced.stderr)
  const kept = (await versions())[1]
  t.equal(steady(forced.stdout), `imported 4 sites into ${production} in S s (coordinates rounded to 3 decimals)\n` +
    'sites: 0 added, 7 removed, 2 changed, 2 unchanged\n' +
    `kept the file it replaced as version ${kept.version}: 'datasets rollback --dataset production' puts it ` +
    `back\n${RELOAD_HINT}\n`)
})

t.test('datasets versions: the current file, then the kept ones, newest first', async (t) => {
  const list = await versions()
  t.same(list.map((v: { version: string }) => v.version).slice(1),
    readdirSync(join(dir, 'versions')).filter((f) => f.endsWith('.db')).map((f) => f.slice(11, -3)).reverse())
  const [current, b, a] = list
  for (const v of list) t.match(v.built_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/, `${v.version}: built_at`)
  t.same(current, {
    dataset: 'production',
    version: 'current',
    current: true,
    path: production,
    site_count: 4,
    built_at: current.built_at,
    source: 'import c.csv (csv)',
    size_bytes: statSync(production).size,
    replaced_at: null
  })
  const bPath = join(dir, 'versions', `production.${b.version}.db`)
  t.same(b, {
    dataset: 'production',
    version: b.version,
    current: false,
    path: bPath,
    site_count: 11,
    built_at: b.built_at,
    source: 'import b.csv (csv)',
    size_bytes: statSync(bPath).size,
    replaced_at: b.version.replace(/T(\d\d)-(\d\d)-(\d\d)/, 'T$1:$2:$3')
  })
  t.ok(b.replaced_at > a.replaced_at, 'newest first')

  const text = await run('datasets', 'versions')
  t.equal(text.status, 0)
  const line = (dataset: string, v: typeof current) => `${dataset.padEnd(11)} ${v.version.padEnd(24)} ` +
    `${String(v.site_count).padStart(9)}  ${v.built_at}  ${kB(v.path).padStart(8)}  ` +
    `${(v.replaced_at ?? '-').padEnd(24)}  ${v.source}`
  t.equal(text.stdout, [
    'DATASET     VERSION                      SITES  BUILT_AT                      SIZE  ' +
      'REPLACED_AT               SOURCE',
    'sandbox     current                  missing',
    ...list.map((v: typeof current) => line('production', v))
  ].join('\n') + '\n')
  t.same(await run('datasets', 'versions', '--dataset', 'sandbox', '--json'), {
    status: 0,
    stdout: JSON.stringify([{
      dataset: 'sandbox', version: 'current', current: true, path: join(dir, 'sandbox.db'), replaced_at: null,
      error: 'missing'
    }], null, 2) + '\n',
    stderr: ''
  })

  const info = JSON.parse((await run('datasets', 'info', '--json')).stdout)
  t.same([info[1].size_bytes, info[1].kept_versions], [statSync(production).size, 2], 'info --json: two fields more')
})

t.test('rollback: the file replaced last put back, and a second rollback undoes it', async (t) => {
  const [c, b, a] = await versions()
  const back = admin(['datasets', 'rollback', '--dataset', 'production'], env)
  t.equal(back.status, 0, back.stderr)
  const [now, keptC] = await versions()
  t.same([now.source, now.built_at, keptC.source, keptC.built_at], [b.source, b.built_at, c.source, c.built_at])
  t.equal(back.stdout,
    `production: put back version ${b.version} (11 sites, built_at ${b.built_at}, source import b.csv (csv))\n` +
    `kept the file it replaced as version ${keptC.version} (4 sites, built_at ${c.built_at}, ` +
    "source import c.csv (csv)): a second 'datasets rollback --dataset production' puts it back\n" +
    "run 'datasets reload' to serve it\n")
  t.equal(back.stderr, '')

  const undo = await run('datasets', 'rollback', '--dataset', 'production', '--json')
  t.equal(undo.status, 0, undo.stderr)
  const [again, keptB, oldest] = await versions()
  t.same([again.built_at, keptB.built_at, oldest.built_at], [c.built_at, b.built_at, a.built_at], 'undone')
  const file = (v: typeof c) => ({
    path: v.path,
    site_count: v.site_count,
    built_at: v.built_at,
    source: v.source,
    size_bytes: v.size_bytes,
    replaced_at: v.replaced_at
  })
  t.same(JSON.parse(undo.stdout), {
    ok: true,
    dataset: 'production',
    path: production,
    restored: { version: keptC.version, ...file(keptC), path: production },
    kept: { version: keptB.version, ...file(keptB) },
    pruned_versions: []
  })

  const to = await run('datasets', 'rollback', '--dataset', 'production', '--to', a.version)
  t.equal(to.status, 0, to.stderr)
  t.match(to.stdout, `production: put back version ${a.version} (10 sites,`)
  t.same((await versions()).map((v: typeof c) => v.source),
    ['import a.csv (csv)', 'import c.csv (csv)', 'import b.csv (csv)'], '--to: an older one')

  const unknown = await run('datasets', 'rollback', '--dataset', 'production', '--to', 'yesterday')
  const ids = (await versions()).slice(1).map((v: typeof c) => v.version)
  t.same([unknown.status, unknown.stdout, unknown.stderr],
    [1, '', `error: ${production} has no kept version yesterday; its versions: ${ids.join(', ')}\n`])
  const none = await run('datasets', 'rollback', '--dataset', 'sandbox')
  t.same([none.status, none.stderr], [1, `error: ${join(dir, 'sandbox.db')} has no kept version to roll back ` +
    'to (a version is kept at each import or generate)\n'])
})

t.test('rollback --reload: rolled back, then the reload asked for as datasets reload asks', async (t) => {
  const [, previous] = await versions()
  const r = await run('datasets', 'rollback', '--dataset', 'production', '--reload')
  t.equal(r.status, 1, 'no running service: the reload fails')
  t.match(r.stderr, new RegExp(`^production: put back version ${previous.version} [^\n]*\nkept [^\n]*\n` +
    'error: no running service: no instance has reported in control.db within the last 10 s\n$'))
  t.equal((await versions())[0].built_at, previous.built_at, 'the rollback is made')
})

t.test('DATASET_KEEP: the oldest kept versions past it are removed', async (t) => {
  const ids = (await versions()).slice(1).map((v: { version: string }) => v.version)
  t.equal(ids.length, 2)
  const r = await adminInProcess(['datasets', 'import', '--dataset', 'production', '--file', B, '--force'],
    { ...env, DATASET_KEEP: '1' })
  t.equal(r.status, 0, r.stderr)
  const kept = (await versions()).slice(1).map((v: { version: string }) => v.version)
  t.equal(kept.length, 1)
  t.match(r.stdout, `\nkept the file it replaced as version ${kept[0]}: 'datasets rollback --dataset production' ` +
    `puts it back\nremoved the oldest kept versions ${ids.join(', ')} (DATASET_KEEP=1)\n${RELOAD_HINT}\n`)
})

t.test('generate: --dry-run, and the file it replaces kept (it is not refused for the sites it removes)', async (t) => {
  const first = await run('datasets', 'generate', '--dataset', 'sandbox', '--count', '30', '--seed', 'v')
  t.equal(first.stdout, `wrote 30 sites to ${join(dir, 'sandbox.db')} (seed v)\n` +
    `sites: 30 added, 0 removed, 0 changed, 0 unchanged\n${RELOAD_HINT}\n`)
  const before = snapshot()
  const dry = await run('datasets', 'generate', '--dataset', 'sandbox', '--count', '12', '--seed', 'v', '--dry-run')
  t.equal(dry.stdout, `dry run: would write 12 sites to ${join(dir, 'sandbox.db')} (seed v)\n` +
    'sites: 0 added, 18 removed, 0 changed, 12 unchanged\n' +
    '  removed: sbx-0000013, sbx-0000014, sbx-0000015, sbx-0000016, sbx-0000017, sbx-0000018, sbx-0000019, ' +
    'sbx-0000020, sbx-0000021, sbx-0000022, ... (8 more)\nnothing written (dry run)\n')
  t.same(snapshot(), before)
  const fewer = await run('datasets', 'generate', '--dataset', 'sandbox', '--count', '12', '--seed', 'v', '--json')
  t.equal(fewer.status, 0, fewer.stderr)
  const kept = JSON.parse((await run('datasets', 'versions', '--dataset', 'sandbox', '--json')).stdout)[1]
  t.same([JSON.parse(fewer.stdout).kept_version, kept.site_count], [kept.version, 30])
})

t.test('help, usage errors, and kept versions never written over by an export', async (t) => {
  const help = await run('datasets', 'rollback', '--help')
  t.equal(help.status, 0)
  t.match(help.stdout, /^usage: npm run admin -- datasets rollback --dataset sandbox\|production \[options\]\n\n/)
  t.match(help.stdout, /\n {2}--to <VERSION> +the kept version to put back/)
  t.match((await run('datasets', 'versions', '--help')).stdout,
    /^usage: npm run admin -- datasets versions \[options\]/)
  const importHelp = (await run('datasets', 'import', '--help')).stdout
  t.match(importHelp, /\n {2}--dry-run +check everything and show what would change/)
  t.match(importHelp, /\n {2}--force +import a file that removes more than half/)
  t.match((await run('datasets', 'generate', '--help')).stdout, /\n {2}--dry-run /)
  const usage: [string[], string][] = [
    [['datasets', 'rollback'], 'error: --dataset is required\n'],
    [['datasets', 'rollback', '--dataset', 'staging'], 'error: --dataset must be one of sandbox, production\n'],
    [['datasets', 'versions', '--dataset', 'staging'], 'error: --dataset must be one of sandbox, production\n']
  ]
  for (const [args, stderr] of usage) t.same(await run(...args), { status: 2, stdout: '', stderr }, args.join(' '))

  const kept = (await versions())[1]
  const before = readFileSync(kept.path)
  const over = await run('datasets', 'export', '--dataset', 'sandbox', '--file', kept.path, '--format', 'csv')
  t.same([over.status, over.stderr],
    [1, `error: ${kept.path} is in ${join(dir, 'versions')}, the kept versions of the datasets: ` +
      'export to another file\n'])
  t.same(readFileSync(kept.path), before)
})

t.test('versions and a dry run answer from a DATA_DIR the operator may not write',
  { skip: cannotRefuseWrites(t) }, async (t) => {
    const expected = await run('datasets', 'versions', '--json')
    const before = snapshot()
    writesRefused(t, [dir, join(dir, 'versions')])
    const listed = admin(['datasets', 'versions', '--json'], env)
    t.same(listed, expected)
    const dry = admin(['datasets', 'import', '--dataset', 'production', '--file', A, '--dry-run', '--force'], env)
    t.same([dry.status, dry.stderr], [0, ''])
    t.match(dry.stdout, /^dry run: the 10 sites of /)
    t.same(snapshot(), before, 'no file made')
  })
