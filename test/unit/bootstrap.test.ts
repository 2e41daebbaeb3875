// prepareDataDir: the first boot of a DATA_DIR creates what is missing; a later boot refuses to
// start when a dataset file has gone, naming it, instead of serving an empty dataset.
import { existsSync, readFileSync, rmSync, statSync } from 'node:fs'
import t from 'tap'
import Database from 'better-sqlite3'
import { prepareDataDir } from '../../src/setup/data-dir.ts'
import { PartnerStore, controlPath } from '../../src/partners/store.ts'
import { datasetPath, writeDataset } from '../../src/sites/dataset-file.ts'
import { site, testConfig, tmpDataDir } from '../helper.ts'

/** The first boot recorded in control.db (undefined when none is). */
const firstBootAt = (dir: string) => {
  const db = new Database(controlPath(dir), { readonly: true })
  try {
    return db.prepare("SELECT value FROM data_dir WHERE key = 'first_boot_at'").pluck().get() as string | undefined
  } catch {
    return undefined
  } finally {
    db.close()
  }
}

t.test('the first boot creates every file; a later one creates nothing', async (t) => {
  const dir = tmpDataDir(t)
  const config = testConfig(dir, { SANDBOX_SITE_COUNT: '50' })
  const first = prepareDataDir(config)
  t.same(first.created, [controlPath(dir), datasetPath(dir, 'sandbox'), datasetPath(dir, 'production')])
  t.match(firstBootAt(dir), /^\d{4}-\d\d-\d\dT/)
  const again = prepareDataDir(config)
  t.same(again, { created: [] })
})

t.test('a later boot with a dataset file gone refuses to start and names the file', async (t) => {
  const dir = tmpDataDir(t)
  const config = testConfig(dir, { SANDBOX_SITE_COUNT: '50' })
  prepareDataDir(config)
  const since = firstBootAt(dir)
  const production = datasetPath(dir, 'production')
  const sandbox = datasetPath(dir, 'sandbox')
  const sandboxBytes = readFileSync(sandbox)
  const notFirstBoot = `is missing, and this is not the first boot of this DATA_DIR (that was at ${since}), ` +
    'so no empty or generated dataset replaces it: '

  rmSync(production)
  t.throws(() => prepareDataDir(config), {
    name: 'DataDirError',
    message: `${production} ${notFirstBoot}` +
      'import it (`npm run admin -- datasets import --dataset production --file FILE`) ' +
      'or restore it from a backup, then start again'
  })
  t.notOk(existsSync(production), 'no empty production.db made')
  t.same(readFileSync(sandbox), sandboxBytes)

  writeDataset(production, [site('p-1', 4, 1, 1)], { source: 'import', precision: 3 })
  rmSync(sandbox)
  t.throws(() => prepareDataDir(config), {
    name: 'DataDirError',
    message: `${sandbox} ${notFirstBoot}generate it (\`npm run admin -- datasets generate --dataset sandbox\`), ` +
      'import it (`npm run admin -- datasets import --dataset sandbox --file FILE`) ' +
      'or restore it from a backup, then start again'
  })
  t.notOk(existsSync(sandbox), 'no sandbox generated')

  writeDataset(sandbox, [site('s-1', 4, 1, 1)], { source: 'import', precision: 3 })
  t.same(prepareDataDir(config), { created: [] }, 'starts again once the file is back')
  t.equal(firstBootAt(dir), since, 'the first boot stays recorded as it was')
})

t.test('partners created or a dataset imported with the CLI before the first boot: still the first boot', async (t) => {
  const dir = tmpDataDir(t)
  const store = new PartnerStore(controlPath(dir))
  store.create({ name: 'Early', slug: 'early' })
  store.close()
  const production = datasetPath(dir, 'production')
  writeDataset(production, [site('p-1', 4, 1, 1)], { source: 'import', precision: 3 })
  const modified = statSync(production).mtimeMs
  const prepared = prepareDataDir(testConfig(dir, { SANDBOX_SITE_COUNT: '50' }))
  t.same(prepared, { created: [datasetPath(dir, 'sandbox')] }, 'the missing sandbox is generated')
  t.equal(statSync(production).mtimeMs, modified, 'the imported production.db is kept')
  t.match(firstBootAt(dir), /^\d{4}-/)
})
