// The datasets in memory: each file read into its own indexes at start-up. The registry holds
// one reference per dataset, so a reload builds new indexes and swaps the reference at once.
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { DATASETS, datasetPath, type DatasetName } from '../src/sites/dataset-file.ts'
import { loadDataset, type Dataset } from '../src/sites/dataset.ts'

declare module 'fastify' {
  interface FastifyInstance {
    datasets: DatasetRegistry
  }
}

export class DatasetRegistry {
  private current: Record<DatasetName, Dataset>

  constructor (readonly dataDir: string) {
    this.current = this.loadAll()
  }

  get (name: DatasetName): Dataset {
    return this.current[name]
  }

  /** Loads both files anew; on any error the old datasets stay and the error is thrown. */
  reload (): Record<DatasetName, Dataset> {
    this.current = this.loadAll()
    return this.current
  }

  private loadAll (): Record<DatasetName, Dataset> {
    const loaded = {} as Record<DatasetName, Dataset>
    for (const name of DATASETS) loaded[name] = loadDataset(datasetPath(this.dataDir, name), name)
    return loaded
  }
}

async function datasets (app: FastifyInstance, options: { dataDir: string }) {
  const registry = new DatasetRegistry(options.dataDir)
  for (const name of DATASETS) {
    const ds = registry.get(name)
    app.log.info({ dataset: name, sites: ds.count, builtAt: ds.builtAt }, 'dataset loaded')
  }
  app.decorate('datasets', registry)
}

export default fp(datasets, { name: 'datasets' })
