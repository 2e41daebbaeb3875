// First boot: create what is missing under DATA_DIR (docs/data-files.md). Later boots create no
// dataset: a dataset file lost since then is an error for the operator to fix, not an empty dataset.
import { existsSync, mkdirSync } from 'node:fs'
import type { Config } from '../config.ts'
import { DATASETS, datasetPath, openDatasetWriter, writeDataset, type DatasetName } from '../sites/dataset-file.ts'
import { replaceDataset, type ReplacePolicy, type Replaced } from '../sites/versions.ts'
import { GENERATED_PRECISION, generateSites, type GenerateOptions } from '../sites/generator.ts'
import { PartnerStore, controlPath } from '../partners/store.ts'

/** A DATA_DIR the service cannot start on; the message says what to do. */
class DataDirError extends Error {
  name = 'DataDirError'
}

type GenerateFileOptions = GenerateOptions & { categoryNames?: Record<number, string> }

const generatedMeta = (options: GenerateFileOptions) => ({
  source: `generated count=${options.count} seed=${options.seed}`,
  precision: GENERATED_PRECISION,
  categoryNames: options.categoryNames
})

/** A dataset file of generated sites (the sandbox at first boot, benchmarks, tests). */
export const generateDataset = (path: string, options: GenerateFileOptions) =>
  writeDataset(path, generateSites(options), generatedMeta(options))

/** `datasets generate`: generated sites in place of a dataset file, the old one kept (versions.ts). */
export function generateReplacing (path: string, options: GenerateFileOptions, policy: ReplacePolicy): Replaced {
  const writer = openDatasetWriter(path, undefined, { scratch: policy.dryRun })
  try {
    for (const site of generateSites(options)) writer.add(site)
    return replaceDataset(writer, path, generatedMeta(options), policy)
  } finally {
    writer.abort() // a no-op once replaceDataset has done with it
  }
}

const howToReplace = (name: DatasetName) => name === 'sandbox'
  ? 'generate it (`npm run admin -- datasets generate --dataset sandbox`), ' +
    'import it (`npm run admin -- datasets import --dataset sandbox --file FILE`)'
  : 'import it (`npm run admin -- datasets import --dataset production --file FILE`)'

/**
 * control.db records the first boot of this DATA_DIR (once both dataset files are there). A later
 * boot is told by that record, not by control.db existing: the CLI makes control.db when partners
 * are created before the first boot.
 */
export function prepareDataDir (config: Config): { created: string[] } {
  const created: string[] = []
  mkdirSync(config.dataDir, { recursive: true })
  const control = controlPath(config.dataDir)
  if (!existsSync(control)) created.push(control)
  const store = new PartnerStore(control)
  try {
    store.db.exec('CREATE TABLE IF NOT EXISTS data_dir (key TEXT PRIMARY KEY, value TEXT NOT NULL)')
    const since = store.db.prepare("SELECT value FROM data_dir WHERE key = 'first_boot_at'").pluck().get()
    const missing = DATASETS.find((name) => !existsSync(datasetPath(config.dataDir, name)))
    if (since !== undefined && missing) {
      throw new DataDirError(`${datasetPath(config.dataDir, missing)} is missing, and this is not the first boot ` +
        `of this DATA_DIR (that was at ${since}), so no empty or generated dataset replaces it: ` +
        `${howToReplace(missing)} or restore it from a backup, then start again`)
    }
    const sandbox = datasetPath(config.dataDir, 'sandbox')
    if (!existsSync(sandbox)) {
      generateDataset(sandbox, { count: config.sandboxSiteCount, seed: config.sandboxSeed, prefix: 'sbx' })
      created.push(sandbox)
    }
    const production = datasetPath(config.dataDir, 'production')
    if (!existsSync(production)) {
      writeDataset(production, [], { source: 'empty', precision: 3 })
      created.push(production)
    }
    if (since === undefined) {
      store.db.prepare("INSERT INTO data_dir (key, value) VALUES ('first_boot_at', ?)").run(new Date().toISOString())
    }
    return { created }
  } finally {
    store.close()
  }
}

/**
 * The demo partner's token, when there was no partner at all. Called once the service listens: a start that fails
 * before (a port taken) creates none, and the next start does. With STATE_URL the partners are made with the CLI.
 */
export function createDemoPartner (store: PartnerStore, config: Config): string | undefined {
  if (config.nodeEnv === 'production' || config.stateUrl) return undefined
  // immediate: a CLI creating a partner at the same moment waits, or goes first and there is no demo
  const create = () => store.count() === 0 ? store.create({ name: 'Demo', slug: 'demo' }).token : undefined
  return store.db.transaction(create).immediate()
}
