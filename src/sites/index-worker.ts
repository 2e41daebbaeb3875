// Worker thread: verifies a dataset file and makes sure its index snapshot is current, so that
// the main thread only reads the snapshot and never stalls on a million SQLite rows.
import { parentPort, workerData } from 'node:worker_threads'
import { quickCheck, readDatasetParts, withDatasetFile } from './dataset.ts'
import { snapshotCurrent, writeSnapshot } from './snapshot.ts'

export interface IndexJob { path: string, verify: boolean }
export type IndexResult = { ok: true, built: boolean, snapshotError?: string } | { ok: false, error: string }

function run ({ path, verify }: IndexJob): IndexResult {
  try {
    if (verify) withDatasetFile(path, (db) => quickCheck(db, path))
    if (snapshotCurrent(path)) return { ok: true, built: false }
    const { digest, parts } = readDatasetParts(path, !verify)
    try {
      writeSnapshot({ path, digest, ...parts })
    } catch (err) {
      return { ok: true, built: false, snapshotError: (err as Error).message }
    }
    return { ok: true, built: true }
  } catch (err) {
    const message = (err as Error).message
    return { ok: false, error: message.startsWith(path) ? message : `${path}: ${message}` }
  }
}

parentPort?.postMessage(run(workerData as IndexJob))
