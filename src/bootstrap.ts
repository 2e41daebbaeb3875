// First boot: create what is missing under DATA_DIR (contract section 1).
import { existsSync, mkdirSync } from 'node:fs'
import type { Config } from './config.ts'
import { datasetPath, openDatasetWriter, writeDataset } from './sites/dataset-file.ts'
import { generateSites, type GenerateOptions } from './sites/generator.ts'
import { PartnerStore, controlPath } from './partners/store.ts'

export const DEMO_SLUG = 'demo'

export interface Prepared {
  created: string[]
  /** The token of the demo partner, when it was just created; shown once. */
  demoToken?: string
}

export function generateDataset (path: string, options: GenerateOptions) {
  const writer = openDatasetWriter(path)
  try {
    for (const site of generateSites(options)) writer.add(site)
    return writer.commit({ source: `generated count=${options.count} seed=${options.seed}`, precision: options.precision ?? 3 })
  } catch (err) {
    writer.abort()
    throw err
  }
}

export function prepareDataDir (config: Config): Prepared {
  const created: string[] = []
  mkdirSync(config.dataDir, { recursive: true })
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
  const control = controlPath(config.dataDir)
  if (!existsSync(control)) created.push(control)
  const store = new PartnerStore(control)
  try {
    // with STATE_URL the partners live in Redis, made with the CLI: no demo partner in control.db
    if (config.nodeEnv !== 'production' && !config.stateUrl && store.count() === 0) {
      const { token } = store.create({ name: 'Demo', slug: DEMO_SLUG })
      return { created, demoToken: token }
    }
    return { created }
  } finally {
    store.close()
  }
}
