// --file names a path from where the operator ran the command, as `npm --prefix` and the package's
// bin run it (npm starts a script in the package's folder and names the first one in INIT_CWD).
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { REPO_ROOT, tmpDataDir } from './helper.ts'
import { bare, baseEnv, node } from './run.ts'

const dir = tmpDataDir(t)
const work = join(dir, 'work')
mkdirSync(work)
const env: Record<string, string> = baseEnv({ DATA_DIR: join(dir, 'data') })
delete env.INIT_CWD // as in an operator's shell

const npmAdmin = (...args: string[]) =>
  spawnSync(...bare('npm', ['--prefix', REPO_ROOT, 'run', '-s', 'admin', '--', ...args]),
    { cwd: work, env, encoding: 'utf8' })
// the package's bin, as an operator's shell runs it
const binAdmin = (...args: string[]) =>
  spawnSync(...node([join(REPO_ROOT, 'scripts/lsp-admin.js'), ...args]), { cwd: work, env, encoding: 'utf8' })

t.test('npm --prefix: a relative --file is read and written where the command was run', async (t) => {
  const created = npmAdmin('partners', 'create', '--name', 'Paths')
  t.equal(created.status, 0, created.stderr)
  const exported = npmAdmin('partners', 'export', '--file', 'partners.json')
  t.equal(exported.status, 0, exported.stderr)
  t.equal(exported.stdout, `exported 1 partners to ${join(work, 'partners.json')}\n`)
  t.ok(existsSync(join(work, 'partners.json')), 'in the folder the command was run from')
  t.notOk(existsSync(join(REPO_ROOT, 'partners.json')), 'not in the package\'s folder')
  t.equal(JSON.parse(readFileSync(join(work, 'partners.json'), 'utf8')).partners.length, 1)
  writeFileSync(join(work, 'sites.csv'), 'id,category,name,region,country,latitude,longitude,tags\n' +
    'p-1,4,Helipad One,EUR,GB,51.5,-0.12,~a\n')
  const imported = npmAdmin('datasets', 'import', '--dataset', 'sandbox', '--file', 'sites.csv')
  t.equal(imported.status, 0, imported.stderr)
  t.match(imported.stdout, `imported 1 sites into ${join(dir, 'data', 'sandbox.db')}`)
})

t.test('the package\'s bin: a relative --file from its working directory', async (t) => {
  const exported = binAdmin('partners', 'export', '--file', 'again.json')
  t.equal(exported.status, 0, exported.stderr)
  t.ok(existsSync(join(work, 'again.json')))
})
