// The operator CLI's smaller promises, through its main() in this process: category names kept in
// the dataset file, a new DATA_DIR made, the default seed following the dataset.
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t from 'tap'
import { tmpDataDir } from './helper.ts'
import { adminInProcess as admin } from './run.ts'

const dir = tmpDataDir(t)
const env = { DATA_DIR: dir }
const run = (...args: string[]) => admin(args, env)

t.test('datasets generate/import --category-name: names of categories 8 and above kept in the file', async (t) => {
  const r = await run('datasets', 'generate', '--dataset', 'sandbox', '--count', '50',
    '--category-name', '8=Heliport', '--category-name', '9=Fuel stop')
  t.equal(r.status, 0, r.stderr)
  const db = new Database(join(dir, 'sandbox.db'), { readonly: true })
  const names = db.prepare("SELECT value FROM meta WHERE key = 'category_names'").pluck().get()
  db.close()
  t.same(JSON.parse(names as string), { 8: 'Heliport', 9: 'Fuel stop' })
  for (const bad of ['7=Hotel', '2147483648=Far', '8=', 'x=Heliport', '8= padded']) {
    const refused = await run('datasets', 'generate', '--dataset', 'sandbox', '--count', '5', '--category-name', bad)
    t.equal(refused.status, 2, bad)
    t.equal(refused.stderr, 'error: --category-name must be ID=NAME with an id from 8 to 2147483647 and a name of ' +
      `1 to 64 characters, e.g. 8=Heliport (got ${JSON.stringify(bad)})\n`)
  }
})

// group help is cli.test.ts's ('--help: generated for the program, each group and each command')
t.test('rough edges: a new DATA_DIR, the default seed follows the dataset', async (t) => {
  const fresh = join(dir, 'not', 'there', 'yet')
  const listed = await admin(['partners', 'list', '--json'], { DATA_DIR: fresh })
  t.equal(listed.status, 0, listed.stderr)
  t.same(JSON.parse(listed.stdout), [])
  t.ok(existsSync(fresh), 'the CLI made DATA_DIR, as the service does')
  const generate = async (dataset: string) => {
    const r = await admin(['datasets', 'generate', '--dataset', dataset, '--count', '20', '--json'],
      { DATA_DIR: fresh })
    return JSON.parse(r.stdout)
  }
  const sandbox = await generate('sandbox')
  const production = await generate('production')
  t.same([sandbox.seed, production.seed], ['sandbox', 'production'])
  const names = (file: string) => {
    const db = new Database(join(fresh, file), { readonly: true })
    try { return db.prepare('SELECT name FROM sites ORDER BY id').pluck().all() } finally { db.close() }
  }
  t.not(JSON.stringify(names('production.db')), JSON.stringify(names('sandbox.db')),
    'production does not get the sandbox\'s sites')
})

t.test('partners update warns of categories it keeps but that are not served', async (t) => {
  const created = await run('partners', 'create', '--name', 'Warned', '--slug', 'warned')
  t.equal(created.status, 0, created.stderr)
  const notServed = 'warning: category 9 not served while other categories are off ' +
    '(--other-categories on serves them)\n'
  const nine = await run('partners', 'update', 'warned', '--categories', '4,7,9')
  t.equal(nine.status, 0, nine.stderr)
  t.equal(nine.stderr, notServed)
  const on = await run('partners', 'update', 'warned', '--other-categories', 'on')
  t.same([on.status, on.stderr], [0, ''], 'served once other categories are on')
  const off = await run('partners', 'update', 'warned', '--other-categories', 'off')
  t.same([off.status, off.stderr], [0, notServed], 'and again when they are turned off')
  const many = await run('partners', 'update', 'warned', '--categories', '4,8,9')
  t.equal(many.stderr,
    'warning: categories 8, 9 not served while other categories are off (--other-categories on serves them)\n')
  const name = await run('partners', 'update', 'warned', '--name', 'Warned again')
  t.same([name.status, name.stderr], [0, ''], 'a change of something else says nothing of the categories')
})

t.test('datasets import warns of categories 8 and above without a name', async (t) => {
  const csv = join(dir, 'named.csv')
  writeFileSync(csv, 'id,category,name,region,country,latitude,longitude,tags\n' +
    'n-1,4,Hotel Helipad,EUR,GB,51.5,-0.12,\nn-2,9,Fuel Stop,EUR,GB,51.6,-0.12,\nn-3,10,Far Pad,EUR,GB,51.7,-0.12,\n')
  // every generated site replaced: --force
  const unnamed = await run('datasets', 'import', '--dataset', 'sandbox', '--file', csv, '--force')
  t.equal(unnamed.status, 0, unnamed.stderr)
  t.equal(unnamed.stderr, 'warning: categories 9, 10 without a name: partners see \'Category 9\'; ' +
    'name them with --category-name 9=NAME\n')
  const one = await run('datasets', 'import', '--dataset', 'sandbox', '--file', csv, '--category-name', '9=Fuel')
  t.equal(one.stderr, 'warning: category 10 without a name: partners see \'Category 10\'; ' +
    'name it with --category-name 10=NAME\n')
  const named = await run('datasets', 'import', '--dataset', 'sandbox', '--file', csv,
    '--category-name', '9=Fuel', '--category-name', '10=Far')
  t.same([named.status, named.stderr], [0, ''], 'every category named')
})
