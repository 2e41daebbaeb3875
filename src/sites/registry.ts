// The datasets in memory: each file read into its own indexes (from its index snapshot when that
// is current). A reload builds new indexes and swaps the one reference at once.
import { rmSync, statSync } from 'node:fs'
import { Worker } from 'node:worker_threads'
import { DATASETS, datasetPath, type DatasetName } from './dataset-file.ts'
import { removeStaleTempFiles } from '../setup/replace-file.ts'
import { loadDataset, type Dataset } from './dataset.ts'
import type { IndexJob, IndexResult } from './index-worker.ts'
import { readSnapshot, snapshotPath } from './snapshot.ts'
import type { ReloadOutcome, ServedDataset } from '../instances/instances.ts'
import type { DatasetsState } from '../schemas/health.ts'
import type { Log } from '../log.ts'

type Datasets = Record<DatasetName, Dataset>
/** workerMinBytes: a file this large or larger is verified and indexed in a worker thread, which writes its snapshot */
interface LoadOptions { dataDir: string, log: Pick<Log, 'info' | 'warn'>, workerMinBytes: number }

export class DatasetRegistry {
  private readonly swapListeners: (() => void)[] = []
  private pending: Promise<unknown> = Promise.resolve()
  /** aborted by close(): a reload under way stops (its worker terminated), and none starts */
  private readonly closing = new AbortController()

  private constructor (private current: Datasets, private readonly options: LoadOptions) {}

  /** Loads both datasets: from their index snapshots when current, else from their files. */
  static async open (options: LoadOptions): Promise<DatasetRegistry> {
    return new DatasetRegistry(await loadAll(options, false), options)
  }

  get (name: DatasetName): Dataset {
    return this.current[name]
  }

  /** Site count and built_at of each dataset, by name (for /readyz and the API index). */
  state (): DatasetsState {
    return { sandbox: this.stateOf('sandbox'), production: this.stateOf('production') }
  }

  /** The same, as a list (reload outcomes, metrics). */
  served (): ServedDataset[] {
    return DATASETS.map((name) => ({ dataset: name, ...this.stateOf(name) }))
  }

  private stateOf (name: DatasetName) {
    return { site_count: this.current[name].count, built_at: this.current[name].builtAt }
  }

  /** Called after every swap (the response cache empties itself here). */
  onSwap (listener: () => void) {
    this.swapListeners.push(listener)
  }

  /**
   * Verifies both files anew and brings their index snapshots up to date, then swaps them in with one
   * assignment (requests under way finish on the old ones); on any defect the old datasets keep serving.
   * Reloads run one at a time.
   */
  reload (): Promise<ReloadOutcome> {
    const run = this.pending.then(async (): Promise<ReloadOutcome> => {
      let next: Datasets
      try {
        next = await loadAll(this.options, true, this.closing.signal)
      } catch (err) {
        return { ok: false, error: (err as Error).message, datasets: this.served() }
      }
      if (this.closing.signal.aborted) return { ok: false, error: RELOAD_STOPPED, datasets: this.served() }
      this.current = next
      for (const listener of this.swapListeners) listener()
      return { ok: true, datasets: this.served() }
    })
    this.pending = run.catch(() => undefined)
    return run
  }

  /** Stops a reload under way (refused, the datasets unchanged) and waits for it; later ones are refused. */
  async close (): Promise<void> {
    this.closing.abort()
    await this.pending
  }
}

/** The error of a reload stopped by close(). */
export const RELOAD_STOPPED = 'the service closed before the reload ended'

const fileSize = (path: string) => {
  try {
    return statSync(path).size
  } catch {
    return 0 // missing: loadDataset says so
  }
}

const fromSource = import.meta.url.endsWith('.ts')
const workerUrl = new URL(`./index-worker${fromSource ? '.ts' : '.js'}`, import.meta.url)

/** A worker on the index module; run from TypeScript sources, it loads them through tsx. */
function startWorker (job: IndexJob): Worker {
  if (!fromSource) return new Worker(workerUrl, { workerData: job })
  const tsx = import.meta.resolve('tsx/esm/api')
  const code = `import(${JSON.stringify(tsx)})` +
    `.then((api) => { api.register(); return import(${JSON.stringify(workerUrl.href)}) })`
  return new Worker(code, { eval: true, workerData: job })
}

/** Runs the index worker for one dataset file; terminated if `signal` aborts first. */
async function indexInWorker (job: IndexJob, signal?: AbortSignal): Promise<IndexResult> {
  const worker = startWorker(job)
  let stop = () => {}
  const result = await new Promise<IndexResult | undefined>((resolve) => {
    stop = () => resolve(undefined)
    signal?.addEventListener('abort', stop, { once: true })
    worker.once('message', resolve)
    worker.once('error', (err) => resolve({ ok: false, error: `${job.path}: ${err.message}` }))
    worker.once('exit', (code) => resolve({ ok: false, error: `${job.path}: index worker exited with ${code}` }))
  })
  signal?.removeEventListener('abort', stop)
  if (result) return result
  // the worker may be writing the snapshot: its temporary file goes once the thread has stopped
  await worker.terminate().catch(() => {})
  removeStaleTempFiles(snapshotPath(job.path), { mine: true })
  return { ok: false, error: RELOAD_STOPPED }
}

async function loadAll (
  { dataDir, log, workerMinBytes }: LoadOptions, verify: boolean, signal?: AbortSignal
): Promise<Datasets> {
  const loaded = {} as Datasets
  for (const name of DATASETS) {
    if (signal?.aborted) throw new Error(RELOAD_STOPPED)
    const path = datasetPath(dataDir, name)
    // removed, so that the index worker writes it anew (it checks a snapshot's header only)
    const unusable = (reason: string) => {
      log.warn({ dataset: name, reason }, 'index snapshot not used; the dataset file is read and checked instead')
      rmSync(snapshotPath(path), { force: true })
    }
    let ds = verify ? undefined : readSnapshot(path, name, unusable)
    if (!ds && fileSize(path) < workerMinBytes) {
      ds = loadDataset(path, name) // small: read and checked right here, no snapshot needed
    } else if (!ds) {
      const started = performance.now()
      const result = await indexInWorker({ path, verify }, signal)
      if (!result.ok) throw new Error(result.error) // the worker's reason names the file
      if (result.snapshotError) {
        log.warn({ dataset: name, error: result.snapshotError },
          'index snapshot could not be written; the file is read directly')
      }
      if (result.built) {
        log.info({ dataset: name, ms: Math.round(performance.now() - started) },
          'dataset verified and indexed; snapshot written')
      }
      ds = readSnapshot(path, name, unusable) ?? loadDataset(path, name, { quickCheck: false })
    }
    loaded[name] = ds
  }
  return loaded
}
