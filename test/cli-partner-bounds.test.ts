// Partner fields are bounded where partners are made or imported: a name without control
// characters, a radius cap of at most half the Earth's circumference, at most 256 distinct
// categories; and `partners list` and `show` print a name an older build stored as escapes.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t from 'tap'
import { tmpDataDir } from './helper.ts'
import { adminInProcess as admin } from './run.ts'

const dir = tmpDataDir(t)
const env = { DATA_DIR: dir }
const run = (...args: string[]) => admin(args, env)
const NAME_RULE = '1 to 200 characters without control characters'

t.test('the CLI refuses what it would not store faithfully, naming the option', async (t) => {
  const forged = 'Evil\u001b[31m\nfake   active'
  t.same(await run('partners', 'create', '--name', forged), {
    status: 2, stdout: '', stderr: `error: --name must be ${NAME_RULE}\n`
  })
  t.equal((await run('partners', 'create', '--name', 'Bounded', '--slug', 'bounded')).status, 0)
  t.same(await run('partners', 'update', 'bounded', '--name', 'a\u0085b'), {
    status: 2, stdout: '', stderr: `error: --name must be ${NAME_RULE}\n`
  }, 'a C1 control character too')
  t.same(await run('partners', 'update', 'bounded', '--radius-cap', '20038'), {
    status: 2, stdout: '', stderr: 'error: --radius-cap must be a number of km greater than 0 and at most 20037\n'
  })
  t.equal((await run('partners', 'update', 'bounded', '--radius-cap', '20037')).status, 0, 'the limit itself')
  const many = Array.from({ length: 257 }, (_, i) => i + 2).join(',')
  t.same(await run('partners', 'update', 'bounded', '--categories', many), {
    status: 2, stdout: '', stderr: 'error: --categories: at most 256 categories\n'
  })
  const enough = Array.from({ length: 256 }, (_, i) => i + 2).join(',')
  t.equal((await run('partners', 'update', 'bounded', '--categories', `${enough},2`)).status, 0,
    '256 distinct, one given twice')
})

t.test('partners import refuses the same, naming the partner and the field; nothing is written', async (t) => {
  const exported = JSON.parse((await run('partners', 'export')).stdout)
  const entry = exported.partners[0]
  const file = join(dir, 'hostile.json')
  const refused = async (change: object, expected: string) => {
    writeFileSync(file, JSON.stringify({ ...exported, partners: [{ ...entry, slug: 'hostile', ...change }] }))
    const r = await run('partners', 'import', '--file', file)
    t.same([r.status, r.stderr], [2, `error: partner "hostile": ${expected}\n`], JSON.stringify(change))
  }
  await refused({ name: 'Evil\u001b[31m' }, `name must be ${NAME_RULE}`)
  await refused({ radius_cap_km: 1e308 }, 'radius_cap_km must be a number of km greater than 0 and at most 20037')
  await refused({ categories: [4, 7, 4] }, 'categories must be at most 256 distinct category ids up to 2147483647')
  await refused({ categories: Array.from({ length: 257 }, (_, i) => i + 2) },
    'categories must be at most 256 distinct category ids up to 2147483647')
  t.equal(JSON.parse((await run('partners', 'list', '--json')).stdout).length, 1, 'no partner written')
})

t.test('a name stored with control characters (an older build) is printed escaped', async (t) => {
  const db = new Database(join(dir, 'control.db'))
  db.prepare('UPDATE partners SET name = ? WHERE slug = ?').run('Evil\u001b[31m\nfake   active', 'bounded')
  db.close()
  const list = await run('partners', 'list')
  t.equal(list.status, 0, list.stderr)
  t.equal(list.stdout.split('\n').filter((line) => line !== '').length, 2, 'the header and one row')
  t.match(list.stdout, 'Evil\\u001b[31m\\u000afake   active')
  t.notMatch(list.stdout, '\u001b')
  const show = await run('partners', 'show', 'bounded')
  t.match(show.stdout, /^name +Evil\\u001b\[31m\\u000afake {3}active$/m)
  t.equal(JSON.parse((await run('partners', 'show', 'bounded', '--json')).stdout).name,
    'Evil\u001b[31m\nfake   active', '--json keeps the value (JSON escapes it)')
})
