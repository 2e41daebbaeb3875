// The datasets in memory (src/sites/registry.ts), loaded at boot; reloads swap them.
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { DATASETS } from '../src/sites/dataset-file.ts'
import { DatasetRegistry } from '../src/sites/registry.ts'

declare module 'fastify' {
  interface FastifyInstance {
    datasets: DatasetRegistry
  }
}

async function datasets (app: FastifyInstance, options: { dataDir: string, workerMinMb: number }) {
  const registry = await DatasetRegistry.open({
    dataDir: options.dataDir, log: app.log, workerMinBytes: options.workerMinMb * 1024 * 1024
  })
  for (const name of DATASETS) {
    const ds = registry.get(name)
    app.log.info({ dataset: name, sites: ds.count, builtAt: ds.builtAt }, 'dataset loaded')
  }
  app.decorate('datasets', registry)
  // A reload under way stops, and is waited for, before the hooks that answer its requesters run
  // (preClose hooks run in registration order: reload's come after these).
  app.addHook('preClose', () => registry.close())
}

export default fp(datasets, { name: 'datasets' })
