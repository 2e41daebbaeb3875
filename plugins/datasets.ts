// The datasets in memory: each file read into its own indexes at start-up. The registry holds
// one reference per dataset, so a reload builds new indexes and swaps the reference at once.
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { DATASETS, datasetPath, type DatasetName } from '../src/sites/dataset-file.ts'
import { loadDataset, type Dataset } from '../src/sites/dataset.ts'
import type { ReloadOutcome, ServedDataset } from '../src/instances.ts'
import { datasetFor } from '../src/partners/permissions.ts'
import { ApiError } from '../src/errors.ts'

declare module 'fastify' {
  interface FastifyInstance {
    datasets: DatasetRegistry
  }
  interface FastifyRequest {
    /** the dataset that answers this request, fixed once so a reload mid-request changes nothing */
    dataset?: Dataset
  }
}

export class DatasetRegistry {
  private current: Record<DatasetName, Dataset>
  private readonly swapListeners: ((datasets: Record<DatasetName, Dataset>) => void)[] = []
  reloads = 0
  failedReloads = 0

  constructor (readonly dataDir: string) {
    this.current = this.loadAll()
  }

  get (name: DatasetName): Dataset {
    return this.current[name]
  }

  served (): ServedDataset[] {
    return DATASETS.map((name) => ({ dataset: name, site_count: this.current[name].count, built_at: this.current[name].builtAt }))
  }

  /** Called after every swap (the response cache empties itself here). */
  onSwap (listener: (datasets: Record<DatasetName, Dataset>) => void) {
    this.swapListeners.push(listener)
  }

  /**
   * Reads both files anew (read-only, quick_check, tables, row count, values), builds new
   * indexes and swaps them in with one assignment. On any defect the old datasets keep serving.
   * Requests already running hold the old Dataset object and finish on it.
   */
  reload (): ReloadOutcome {
    let next: Record<DatasetName, Dataset>
    try {
      next = this.loadAll()
    } catch (err) {
      this.failedReloads++
      return { ok: false, error: (err as Error).message, datasets: this.served() }
    }
    this.current = next
    this.reloads++
    for (const listener of this.swapListeners) listener(next)
    return { ok: true, datasets: this.served() }
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
  app.decorateRequest('dataset', undefined)
  // After validation (demo is known) and before the cache (its key holds the dataset version).
  app.addHook('preHandler', (request, reply, done) => {
    const endpoint = request.routeOptions.config.endpoint
    if (endpoint === undefined || endpoint === 'usage') return done()
    const demo = (request.query as { demo?: boolean }).demo === true
    const dataset = registry.get(datasetFor(request.partner, demo))
    if (dataset === undefined) return done(new ApiError('svc_partner_api_prepare_failed'))
    request.dataset = dataset
    done()
  })
}

export default fp(datasets, { name: 'datasets' })
