// The operator CLI on a real control.db: its main() in this process for most cases (the same
// parsing, output and exit codes), and as the real processes an operator starts at the end.
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import Database from 'better-sqlite3'
import t from 'tap'
import { REPO_ROOT, tmpDataDir } from './helper.ts'
import { main } from '../scripts/admin.ts'
import { admin, adminInProcess, bare, childEnv, node } from './run.ts'

const dir = tmpDataDir(t)
const env = { DATA_DIR: dir }
const run = (...args: string[]) => adminInProcess(args, env)
const oneLine = (s: string) => s.trim().split('\n').length === 1
/** One pattern from pieces, so that a long one can be written over lines. */
const re = (...parts: RegExp[]) => new RegExp(parts.map((p) => p.source).join(''))

t.test('partners create prints the token once; only its SHA-256 is stored', async (t) => {
  const r = await run('partners', 'create', '--name', 'Acme Air Ambulance', '--tier', 'growth', '--json')
  t.equal(r.status, 0, r.stderr)
  const created = JSON.parse(r.stdout)
  t.match(created.token, /^lsp_[A-Za-z0-9_-]{43}$/)
  t.match(created.id, /^ptn_[0-9a-f]{12}$/)
  t.same({ ...created, id: undefined, token: undefined, created_at: undefined, updated_at: undefined }, {
    slug: 'acme-air-ambulance', name: 'Acme Air Ambulance', status: 'active', tier: 'growth', environment: 'sandbox',
    categories: [4, 7], other_categories: false, site_by_id: false, radius_cap_km: 75, max_results: 100,
    limits: { minute: 90, hour: 1200, day: 12000 }, limit_overrides: { minute: null, hour: null, day: null }
  })
  const db = new Database(join(dir, 'control.db'), { readonly: true })
  const stored = db.prepare('SELECT * FROM partners WHERE slug = ?')
    .get('acme-air-ambulance') as Record<string, unknown>
  db.close()
  t.equal(stored.token_sha256, createHash('sha256').update(created.token).digest('hex'))
  t.notOk(JSON.stringify(stored).includes(created.token), 'the token itself is stored nowhere')
})

t.test('defaults of a new partner; text output', async (t) => {
  const r = await run('partners', 'create', '--name', 'Heli Tours', '--slug', 'heli', '--status', 'pending')
  t.equal(r.status, 0, r.stderr)
  t.match(r.stdout,
    re(/^created partner heli \(ptn_[0-9a-f]{12}\)\n/,
      /token \(shown once, keep it secret\): lsp_[A-Za-z0-9_-]{43}\n$/))
  const shown = JSON.parse((await run('partners', 'show', 'heli', '--json')).stdout)
  t.equal(shown.status, 'pending')
  t.equal(shown.tier, 'demo')
  t.same(shown.limits, { minute: 30, hour: 200, day: 1000 })
})

t.test('list and show never print a token or its hash', async (t) => {
  const list = await run('partners', 'list', '--json')
  t.equal(list.status, 0)
  const partners = JSON.parse(list.stdout)
  t.same(partners.map((p: { slug: string }) => p.slug), ['acme-air-ambulance', 'heli'])
  t.notOk(/lsp_|token|sha256/.test(list.stdout))
  const text = await run('partners', 'list')
  t.match(text.stdout, re(/^SLUG +STATUS +TIER +ENVIRONMENT CATEGORIES +NAME\n/,
    /acme-air-ambulance +active +growth +sandbox +4,7 +Acme Air Ambulance\nheli +pending/))
  const show = await run('partners', 'show', 'heli')
  t.equal(show.status, 0)
  t.match(show.stdout, /^id +ptn_[0-9a-f]{12}\nslug +heli\nname +Heli Tours\nstatus +pending\n/)
  t.notOk(/lsp_|sha256/.test(show.stdout))
})

t.test('update and rotate', async (t) => {
  const r = await run('partners', 'update', 'heli', '--status', 'active', '--categories', '9,4,4',
    '--other-categories', 'on', '--limit-minute', 'unlimited', '--limit-day', '5000', '--radius-cap', '100',
    '--max-results', '250', '--json')
  t.equal(r.status, 0, r.stderr)
  const p = JSON.parse(r.stdout)
  t.same([p.status, p.categories, p.other_categories, p.radius_cap_km, p.max_results],
    ['active', [4, 9], true, 100, 250])
  t.same(p.limits, { minute: 'unlimited', hour: 200, day: 5000 })
  const back = JSON.parse((await run('partners', 'update', 'heli', '--limit-minute', 'tier', '--json')).stdout)
  t.same(back.limits, { minute: 30, hour: 200, day: 5000 })
  const rotated = await run('partners', 'rotate', 'heli', '--json')
  t.equal(rotated.status, 0)
  t.match(JSON.parse(rotated.stdout).token, /^lsp_/)
})

t.test('bad input: exit code and a one-line reason on stderr', async (t) => {
  const cases: [string[], number, RegExp][] = [
    [['partners', 'show', 'nobody'], 1, /^error: no partner with slug 'nobody'$/],
    [['partners', 'update', 'nobody', '--tier', 'scale'], 1, /^error: no partner with slug 'nobody'$/],
    [['partners', 'rotate', 'nobody'], 1, /^error: no partner with slug 'nobody'$/],
    [['partners', 'create', '--name', 'Heli', '--slug', 'heli'], 1,
      /^error: a partner with slug 'heli' exists already$/],
    [['partners', 'create'], 2, /^error: --name is required$/],
    [['partners', 'create', '--name', '  '], 2,
      /^error: --name must be 1 to 200 characters without control characters$/],
    [['partners', 'create', '--name', 'X', '--tier', 'gold'], 2, /^error: --tier must be one of demo, growth, scale$/],
    [['partners', 'create', '--name', 'X', '--status', 'suspended'], 2,
      /^error: --status must be one of active, pending$/],
    [['partners', 'create', '--name', 'X', '--slug', 'Bad Slug'], 2, /^error: --slug must be/],
    [['partners', 'create', '--name', '!!!'], 2, /^error: cannot derive a slug from the name; give --slug$/],
    [['partners', 'create', '--name', 'X', '--colour', 'red'], 2, /^error: unknown option '--colour'$/],
    [['partners', 'create', '--name', 'X', '--tierr', 'gold'], 2,
      /^error: unknown option '--tierr' \(Did you mean --tier\?\)$/],
    [['partners', 'create', '--name'], 2, /^error: option '--name <NAME>' argument missing$/],
    [['partners', 'list', 'everyone'], 2, /^error: unexpected argument 'everyone'$/],
    [['partners', 'show', 'heli', 'acme'], 2, /^error: usage: partners show SLUG$/],
    [['partners', 'update'], 2, /^error: usage: partners update SLUG \[options\]$/],
    [['partners', '--tier', 'gold'], 2, /^error: unknown option '--tier'$/],
    [['fly'], 2, /^error: unknown command 'fly' \(known: partners, datasets\); see --help$/],
    [['partners', 'show'], 2, /^error: usage: partners show SLUG$/],
    [['partners', 'update', 'heli'], 2, /^error: nothing to change/],
    [['partners', 'update', 'heli', '--categories', '1,4'], 2, /^error: --categories: category 1 is reserved/],
    [['partners', 'update', 'heli', '--categories', '4;7'], 2, /^error: --categories must be a comma-separated list/],
    [['partners', 'update', 'heli', '--categories', '0,4'], 2,
      /^error: --categories: category ids are whole numbers from 2 to 2147483647$/],
    [['partners', 'update', 'heli', '--categories', '4,2147483648'], 2,
      /^error: --categories: category ids are whole numbers from 2 to 2147483647$/],
    [['partners', 'update', 'heli', '--limit-day', '1000000001'], 2,
      /^error: --limit-day must be a whole number from 1 to 1000000000, 'unlimited', or 'tier'/],
    [['partners', 'update', 'heli', '--limit-hour=-5'], 2, /^error: --limit-hour must be a whole number from 1/],
    [['partners', 'update', 'heli', '--limit-minute', '0'], 2,
      re(/^error: --limit-minute must be a whole number from 1 to 1000000000, 'unlimited', or 'tier' /,
        /\(the tier's limit\); to stop a partner, use --status suspended$/)],
    [['partners', 'update', 'heli', '--radius-cap', '0'], 2,
      /^error: --radius-cap must be a number of km greater than 0/],
    [['partners', 'update', 'heli', '--max-results', 'lots'], 2,
      /^error: --max-results must be a whole number from 1 to 10000$/],
    [['partners', 'update', 'heli', '--site-by-id', 'yes'], 2, /^error: --site-by-id must be one of on, off$/],
    [['partners', 'fly'], 2, re(/^error: unknown command 'partners fly' /,
      /\(known: create, list, show, update, rotate, usage, report, export, import\); see --help$/)],
    [['datasets', 'import', '--dataset', 'sandbox'], 2, /^error: --file is required$/],
    [['datasets', 'generate'], 2, /^error: --dataset is required$/]
  ]
  for (const [args, status, message] of cases) {
    const r = await run(...args)
    t.equal(r.status, status, args.join(' '))
    t.match(r.stderr.trimEnd(), message, args.join(' '))
    t.ok(oneLine(r.stderr), 'one line')
    t.equal(r.stdout, '')
  }
})

t.test('--help: generated for the program, each group and each command, on stdout, exit 0', async (t) => {
  const r = await run('partners', 'create', '--help')
  t.equal(r.status, 0)
  t.match(r.stdout, re(/^usage: npm run admin -- partners create --name NAME \[options\]\n\n/,
    /create a partner and print its token \(shown once\)\n/))
  t.match(r.stdout, /--tier <TIER> +its tier \(default: demo\) \(choices: "demo", "growth",\s+"scale"\)\n/)
  t.match(r.stdout, /--json +print one JSON document on stdout instead of text\n/)
  t.equal(r.stderr, '')

  for (const args of [['--help'], ['-h'], ['help']]) {
    const top = await run(...args)
    t.equal(top.status, 0, args.join(' '))
    t.match(top.stdout, /^usage: npm run admin -- <group> <command> \[options\]\n/)
    t.match(top.stdout, /\n {2}partners +the partners[\s\S]*\n {2}datasets +the site datasets/, 'the groups')
    t.match(top.stdout, re(/\n {2}partners update SLUG \[options\]\n[\s\S]*/,
      /\n {2}datasets import --dataset sandbox\|production --file PATH \[options\]\n/), 'every command')
  }

  const groups: [string, string[]][] = [
    ['partners', ['create', 'list', 'show', 'update', 'rotate', 'usage', 'report', 'export', 'import']],
    ['datasets', ['generate', 'import', 'export', 'reload', 'info', 'versions', 'rollback']]
  ]
  for (const [group, commands] of groups) {
    const help = await run(group, '--help')
    t.equal(help.status, 0, `${group} --help`)
    t.match(help.stdout, new RegExp(`^usage: npm run admin -- ${group} <command> \\[options\\]\n`))
    const listed = [...help.stdout.matchAll(new RegExp(`^ {2}${group} ([a-z]+)`, 'gm'))].map((m) => m[1])
    t.same(listed, commands, `${group} --help lists its commands`)
    t.same(await run('help', group), help, `help ${group} is ${group} --help`)
    // without a command: the same help, as a usage error
    t.same(await run(group), { ...help, status: 2 }, `${group} alone`)
  }
  const partners = (await run('partners', '--help')).stdout
  t.match(partners, re(/\n {2}partners update SLUG \[options\]\n/,
    / {6}change a partner; the running service applies it within PARTNER_REFRESH_MS\n {6}\(1 s by default\)\n/))
  t.match(partners,
    /\n {2}partners rotate SLUG\n {6}issue a new token; the old one stops working within PARTNER_REFRESH_MS/)

  const update = await run('partners', 'update', '--help')
  t.equal(update.status, 0)
  t.match(update.stdout, re(/^usage: npm run admin -- partners update SLUG \[options\]\n\n/,
    /change a partner; the running service applies it within PARTNER_REFRESH_MS/))
  for (const option of ['--name', '--tier', '--environment', '--status', '--categories', '--other-categories',
    '--site-by-id', '--radius-cap', '--max-results', '--limit-minute', '--limit-hour', '--limit-day', '--json',
    '-h, --help']) {
    t.match(update.stdout, new RegExp(`\n {2}${option}[ <]`), option)
  }
  t.match(update.stdout,
    /--status <STATUS> +pending and suspended stop its token \(403\)\n +\(choices: "pending", "active", "suspended"\)/)
  t.same(await run('partners', 'update', 'heli', '--tier', 'gold', '--help'), update,
    '--help wins over the other options')
  t.match((await run('datasets', 'import', '--help')).stdout,
    /^usage: npm run admin -- datasets import --dataset sandbox\|production --file PATH \[options\]\n/)

  const bare = await run()
  t.equal(bare.status, 2, 'no command: a usage error')
  t.equal(bare.stdout, (await run('--help')).stdout, 'with the help')
})

t.test('datasets generate and info', async (t) => {
  const g = await run('datasets', 'generate', '--dataset', 'sandbox', '--count', '1500', '--seed', 'cli', '--json')
  t.equal(g.status, 0, g.stderr)
  t.equal(JSON.parse(g.stdout).site_count, 1500)
  t.ok(existsSync(join(dir, 'sandbox.db')))
  const info = JSON.parse((await run('datasets', 'info', '--json')).stdout)
  t.equal(info[0].dataset, 'sandbox')
  t.equal(info[0].site_count, 1500)
  t.equal(info[0].source, 'generated count=1500 seed=cli')
  t.equal(info[1].error, 'missing')
  t.equal((await run('datasets', 'info')).status, 0, 'a missing dataset is reported, not a failure')
})

t.test('datasets info fails on a dataset file that cannot be read', async (t) => {
  const broken = tmpDataDir(t)
  writeFileSync(join(broken, 'production.db'), 'not a database')
  const reason = `error: ${join(broken, 'production.db')} cannot be read; the service would refuse it ` +
    '(import or generate the dataset again, or restore it from a backup)\n'
  const text = await adminInProcess(['datasets', 'info'], { DATA_DIR: broken })
  t.equal(text.status, 1)
  t.equal(text.stdout, '')
  t.equal(text.stderr, 'sandbox     missing\nproduction  unreadable: file is not a database\n' + reason)
  const json = await adminInProcess(['datasets', 'info', '--json'], { DATA_DIR: broken })
  t.equal(json.status, 1)
  t.same(JSON.parse(json.stdout), [
    { dataset: 'sandbox', path: join(broken, 'sandbox.db'), error: 'missing' },
    { dataset: 'production', path: join(broken, 'production.db'), error: 'unreadable: file is not a database' }
  ])
  t.equal(json.stderr, reason)
})

const UNNAMED_8_9 = 'warning: categories 8, 9 without a name: partners see \'Category 8\'; ' +
  'name them with --category-name 8=NAME\n'

t.test('datasets export, import and reload as an operator runs them', async (t) => {
  const csv = join(dir, 'out.csv')
  const exported = await run('datasets', 'export', '--dataset', 'sandbox', '--file', csv)
  t.equal(exported.status, 0, exported.stderr)
  t.equal(exported.stdout, `wrote 1500 sites of sandbox to ${csv}\n`)
  const imported = await run('datasets', 'import', '--dataset', 'production', '--file', csv, '--precision', '2',
    '--json')
  t.equal(imported.status, 0, imported.stderr)
  const report = JSON.parse(imported.stdout)
  t.same([report.ok, report.dataset, report.format, report.precision, report.site_count],
    [true, 'production', 'csv', 2, 1500])
  // a CSV holds no category names: the generated sandbox's 8 and 9 come back without them
  t.equal(imported.stderr, UNNAMED_8_9, 'no progress bar when stderr is not a terminal; the unnamed categories')
  const info = JSON.parse((await run('datasets', 'info', '--json')).stdout)
  t.same([info[1].site_count, info[1].precision, info[1].source], [1500, 2, 'import out.csv (csv)'])

  const bad = join(dir, 'bad.ndjson')
  writeFileSync(bad,
    '{"id":"a","category":4,"name":"A","region":"EUR","country":"GB","latitude":1,"longitude":2}\n{"id":"b"}\n')
  const before = readFileSync(join(dir, 'production.db'))
  const refused = await run('datasets', 'import', '--dataset', 'production', '--file', bad)
  t.equal(refused.status, 1)
  t.equal(refused.stderr, 'line 2: category must be a whole number from 1 to 2147483647; ' +
    'name must be 1 to 200 characters without control characters; region must be three upper-case letters; ' +
    'country must be two upper-case letters; latitude must be a number from -90 to 90; ' +
    'longitude must be a number from -180 to 180\n' +
    `error: import refused: 1 invalid row; ${join(dir, 'production.db')} is unchanged\n`)
  t.same(readFileSync(join(dir, 'production.db')), before)
  const refusedJson = await run('datasets', 'import', '--dataset', 'production', '--file', bad, '--json')
  t.equal(refusedJson.status, 1)
  t.same(JSON.parse(refusedJson.stdout),
    { ok: false, dataset: 'production', file: bad, rows: 2, error_count: 1, errors: [refused.stderr.split('\n')[0]] })
  t.equal(refusedJson.stderr, `error: import refused: 1 invalid row; ${join(dir, 'production.db')} is unchanged\n`,
    'with --json, the reason on stderr too')

  const usage: [string[], RegExp][] = [
    [['datasets', 'import', '--dataset', 'production'], /^error: --file is required$/],
    [['datasets', 'import', '--dataset', 'production', '--file', join(dir, 'x.txt')],
      /^error: cannot tell the format from/],
    [['datasets', 'import', '--dataset', 'production', '--file', csv, '--format', 'xml'],
      /^error: --format must be one of csv, geojson, ndjson$/],
    [['datasets', 'import', '--dataset', 'production', '--file', csv, '--precision', '11'],
      /^error: --precision must be a whole number from 0 to 10$/],
    [['datasets', 'import', '--dataset', 'staging', '--file', csv],
      /^error: --dataset must be one of sandbox, production$/]
  ]
  for (const [args, message] of usage) {
    const r = await run(...args)
    t.equal(r.status, 2, args.join(' '))
    t.match(r.stderr.trimEnd(), message)
  }

  const reload = await run('datasets', 'reload')
  t.equal(reload.status, 1)
  t.equal(reload.stderr, 'error: no running service: no instance has reported in control.db within the last 10 s\n')
  const reloadJson = await run('datasets', 'reload', '--json')
  t.equal(reloadJson.status, 1)
  t.same(JSON.parse(reloadJson.stdout), { ok: false, instances: [] })
  t.equal(reloadJson.stderr, reload.stderr, 'with --json, the same one-line reason on stderr')
  const importReload = await run('datasets', 'import', '--dataset', 'production', '--file', csv, '--reload')
  t.equal(importReload.status, 1, 'the import is done, but nothing could reload it')
  t.match(importReload.stderr, /imported 1500 sites[^\n]*\nsites: [^\n]*\nkept [^\n]*\nerror: no running service/)
})

t.test('an export never replaces a file the service reads, and a failed one leaves the old file', async (t) => {
  const files = ['sandbox.db', 'production.db', 'control.db'].map((name) => join(dir, name))
  const before = files.map((file) => readFileSync(file))
  const link = join(tmpDataDir(t), 'looks-like-an-export.csv')
  symlinkSync(join(dir, 'production.db'), link)
  const exportTo = (file: string, ...more: string[]) =>
    ['datasets', 'export', '--dataset', 'sandbox', '--file', file, ...more]
  const refusals: [string[], string][] = [
    [exportTo(join(dir, 'sandbox.db'), '--format', 'csv'), 'sandbox.db'],
    [exportTo(join(dir, 'production.db'), '--format', 'ndjson'), 'production.db'],
    [exportTo(join(dir, 'sandbox.db.index'), '--format', 'csv'), 'sandbox.db.index'],
    [exportTo(link), 'production.db'],
    [['partners', 'export', '--file', join(dir, 'control.db')], 'control.db'],
    [['partners', 'export', '--file', join(dir, 'control.db-wal')], 'control.db-wal']
  ]
  for (const [args, own] of refusals) {
    const r = await run(...args)
    t.equal(r.status, 1, args.join(' '))
    const file = args[args.indexOf('--file') + 1]
    t.equal(r.stderr, `error: ${file} is the service's own ${own}: export to another file\n`)
  }
  t.same(files.map((file) => readFileSync(file)), before, 'every file as it was')

  // a dataset that cannot be read: the file at the target stays, and no temporary file is left
  const broken = tmpDataDir(t)
  writeFileSync(join(broken, 'sandbox.db'), 'not a database')
  const target = join(broken, 'exports', 'sandbox.csv')
  mkdirSync(dirname(target))
  writeFileSync(target, 'the export of yesterday\n')
  const failed = await adminInProcess(exportTo(target), { DATA_DIR: broken })
  t.equal(failed.status, 1)
  t.equal(failed.stderr, `error: ${join(broken, 'sandbox.db')}: file is not a database\n`)
  t.equal(readFileSync(target, 'utf8'), 'the export of yesterday\n')
  t.same(readdirSync(dirname(target)), ['sandbox.csv'])

  // the partners' file is 0600 even where an older file was readable by all
  const partners = join(tmpDataDir(t), 'partners.json')
  writeFileSync(partners, '{}', { mode: 0o644 })
  const exported = await run('partners', 'export', '--file', partners)
  t.equal(exported.status, 0, exported.stderr)
  t.equal(statSync(partners).mode & 0o777, 0o600)
  t.equal(JSON.parse(readFileSync(partners, 'utf8')).format, 'lsp-partners')
})

t.test('datasets import on a terminal: its progress bar on the stderr main() was given', async (t) => {
  let stdout = ''
  let stderr = ''
  const status = await main(['datasets', 'import', '--dataset', 'production', '--file', join(dir, 'out.csv')], {
    env: { DATA_DIR: dir },
    stdout: { write: (text: string) => { stdout += text } },
    stderr: { write: (text: string) => { stderr += text }, isTTY: true }
  })
  t.equal(status, 0, stderr)
  const bar = /^(\rproduction \[[#.]{30}\] +\d+% +[\d,]+ rows)*\rproduction \[#{30}\] 100% {2}1,500 rows\n/
  t.match(stderr, bar)
  t.equal(stderr.replace(bar, ''), UNNAMED_8_9)
  t.match(stdout, /^imported 1500 sites into /)
})

t.test('the real processes an operator starts: npm run admin, the bin, their exit codes', async (t) => {
  const ran = admin(['partners', 'show', 'heli', '--json'], env)
  t.equal(ran.status, 0, ran.stderr)
  t.same(JSON.parse(ran.stdout), JSON.parse((await run('partners', 'show', 'heli', '--json')).stdout),
    'as main() printed it')
  const failed = admin(['partners', 'show', 'nobody'], env)
  t.same([failed.status, failed.stdout, failed.stderr], [1, '', "error: no partner with slug 'nobody'\n"])
  const misused = admin(['partners', 'update', 'heli', '--tier', 'gold'], env)
  t.same([misused.status, misused.stdout, misused.stderr],
    [2, '', 'error: --tier must be one of demo, growth, scale\n'])

  const lspAdmin = join(REPO_ROOT, 'scripts/lsp-admin.js')
  const bin = spawnSync(...node([lspAdmin, 'partners', 'show', 'nobody']),
    { env: childEnv({ DATA_DIR: dir }), encoding: 'utf8' })
  t.same([bin.status, bin.stdout, bin.stderr], [1, '', "error: no partner with slug 'nobody'\n"],
    'the package bin lsp-admin')
  const binHelp = spawnSync(...node([lspAdmin, 'partners', '--help']), { encoding: 'utf8' })
  t.equal(binHelp.status, 0)
  t.match(binHelp.stdout, /^usage: lsp-admin partners <command>/, 'its help names it')

  const npm = spawnSync(...bare('npm', ['run', 'admin', '--', 'datasets', '--help']),
    { cwd: REPO_ROOT, env: childEnv({ DATA_DIR: dir }), encoding: 'utf8' })
  t.equal(npm.status, 0, npm.stderr)
  t.match(npm.stdout, /\nusage: npm run admin -- datasets <command> \[options\]\n[\s\S]*datasets reload/)
})
