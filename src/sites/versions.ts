// Dataset versions (docs/data-files.md): every import, generate and rollback keeps the file it replaces in
// DATA_DIR/versions/, the newest DATASET_KEEP of them. Files only move by link and rename, under a lock per
// dataset, so no command overwrites or loses one; only pruning removes the oldest kept versions.
import { existsSync, linkSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import Database from 'better-sqlite3'
import { readDatasetMeta, type CommitMeta, type DatasetMeta, type DatasetWriter } from './dataset-file.ts'
import { checkDatasetHead, quickCheck, withDatasetFile } from './dataset.ts'
import type { SiteChanges } from './changes.ts'
import { fileIdentity, fsyncPath } from '../setup/replace-file.ts'

/** How long a command waits for another's lock on the same dataset (held for a few file moves). */
const LOCK_WAIT_MS = 10_000

export const versionsFolder = (dataDir: string) => join(dataDir, 'versions')
const versionsDir = (datasetFile: string) => versionsFolder(dirname(datasetFile))
const datasetName = (datasetFile: string) => basename(datasetFile, '.db')

/** A kept version's id: when it was replaced, as a file name may hold it (2026-03-01T10-15-00.123Z). */
const VERSION_ID = /^\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}Z$/
const idOf = (ms: number) => new Date(ms).toISOString().replaceAll(':', '-')

/** A kept version; replacedAt (ISO 8601): when an import, generate or rollback replaced it. */
interface KeptVersion { id: string, path: string, replacedAt: string }

const keptVersion = (datasetFile: string, id: string): KeptVersion => ({
  id,
  path: join(versionsDir(datasetFile), `${datasetName(datasetFile)}.${id}.db`),
  replacedAt: id.replace(/T(\d\d)-(\d\d)-(\d\d)/, 'T$1:$2:$3')
})

const isMissing = (err: unknown) => (err as NodeJS.ErrnoException).code === 'ENOENT'

/** The kept versions of a dataset file, newest first (none without versions/; a folder it cannot read throws). */
export function keptVersions (datasetFile: string): KeptVersion[] {
  let names: string[]
  try {
    names = readdirSync(versionsDir(datasetFile))
  } catch (err) {
    if (isMissing(err)) return []
    throw err
  }
  const prefix = `${datasetName(datasetFile)}.`
  return names
    .filter((name) => name.startsWith(prefix) && name.endsWith('.db'))
    .map((name) => name.slice(prefix.length, -'.db'.length))
    .filter((id) => VERSION_ID.test(id))
    .sort().reverse()
    .map((id) => keptVersion(datasetFile, id))
}

/** A dataset file as `datasets versions` lists it. */
export interface VersionInfo {
  /** 'current', or the kept version's id */
  version: string
  current: boolean
  path: string
  replacedAt?: string
  sizeBytes?: number
  meta?: DatasetMeta
  /** why there is no meta: 'missing', or 'unreadable: <reason>' */
  error?: string
}

/** A dataset file's size and meta, or why they cannot be read ('missing', or 'unreadable: <reason>'). */
export function describeDatasetFile (path: string): Pick<VersionInfo, 'sizeBytes' | 'meta' | 'error'> {
  let sizeBytes: number
  try {
    sizeBytes = statSync(path).size
  } catch (err) {
    return { error: isMissing(err) ? 'missing' : `unreadable: ${(err as Error).message}` }
  }
  try {
    return { sizeBytes, meta: withDatasetFile(path, readDatasetMeta) }
  } catch (err) {
    return { sizeBytes, error: `unreadable: ${(err as Error).message}` }
  }
}

/** A kept version's entry, with its file's size and meta from `file` (by default read from the file). */
const keptInfo = (v: KeptVersion, file = describeDatasetFile(v.path)): VersionInfo =>
  ({ version: v.id, current: false, path: v.path, replacedAt: v.replacedAt, ...file })

/** The current file, then its kept versions, newest first (one pruned meanwhile is left out). */
export function listVersions (datasetFile: string): VersionInfo[] {
  const kept = keptVersions(datasetFile).map((v) => keptInfo(v)).filter((v) => v.error !== 'missing')
  return [{ version: 'current', current: true, path: datasetFile, ...describeDatasetFile(datasetFile) }, ...kept]
}

/** Runs `fn` holding SQLite's exclusive lock on versions/<dataset>.lock: an OS lock dies with its process. */
function withLock<T> (datasetFile: string, fn: () => T): T {
  mkdirSync(versionsDir(datasetFile), { recursive: true })
  const path = join(versionsDir(datasetFile), `${datasetName(datasetFile)}.lock`)
  const db = new Database(path, { timeout: LOCK_WAIT_MS })
  try {
    try {
      db.exec('BEGIN EXCLUSIVE') // held until the connection closes
    } catch (err) {
      if ((err as { code?: string }).code !== 'SQLITE_BUSY') throw err
      throw new Error(`another command has been replacing ${datasetFile} for over ${LOCK_WAIT_MS / 1000} s ` +
        `(it holds ${path}); nothing changed: try again`)
    }
    return fn()
  } finally {
    db.close()
  }
}

interface Pruned { pruned: string[], warnings: string[] }

/**
 * Under the lock: the current file, if any, kept as the newest version (a second name for it), `file`
 * renamed in its place, and the kept versions past `keep` removed (a failure is a warning: the change is made).
 */
function putInPlace (target: string, file: string, keep: number): { kept?: KeptVersion } & Pruned {
  let kept: KeptVersion | undefined
  if (existsSync(target)) {
    const newest = keptVersions(target)[0]
    // ids only grow, even when the clock steps back: the newest id is always the last file replaced
    kept = keptVersion(target, idOf(Math.max(Date.now(), newest ? Date.parse(newest.replacedAt) + 1 : 0)))
    linkSync(target, kept.path)
    fsyncPath(versionsDir(target))
  }
  renameSync(file, target)
  fsyncPath(dirname(target))
  fsyncPath(versionsDir(target)) // a rollback moved its version out of it
  const result: { kept?: KeptVersion } & Pruned = { kept, pruned: [], warnings: [] }
  for (const v of keptVersions(target).slice(keep)) {
    try {
      rmSync(v.path)
      result.pruned.push(v.id)
    } catch (err) {
      result.warnings.push(`the oldest kept version ${v.path} could not be removed: ${(err as Error).message}`)
    }
  }
  return result
}

export interface ReplacePolicy {
  /** DATASET_KEEP: how many replaced files are kept */
  keep: number
  /** compare and check only (the writer is a scratch one): nothing is written */
  dryRun?: boolean
  /** refuse a file that removes more than half of a non-empty dataset's sites (import), unless `force` */
  guard?: boolean
  force?: boolean
}

export type Replaced = {
  ok: true
  dryRun: boolean
  siteCount: number
  builtAt?: string // undefined on a dry run
  changes: SiteChanges
  /** why the file replaced could not be compared (its sites then count as none) */
  unreadable?: string
  /** the id the replaced file is kept under (none when there was no file) */
  kept?: string
} & Pruned | {
  ok: false
  refusal: 'removes-too-many' | 'replaced-meanwhile'
  changes: SiteChanges
}

/**
 * Puts the writer's file in place of `target`, the current one kept, unless the policy refuses or another command
 * replaced it since it was compared. The writer is done with on return.
 */
export function replaceDataset (writer: DatasetWriter, target: string, meta: CommitMeta, policy: ReplacePolicy):
Replaced {
  try {
    const compared = fileIdentity(target)
    let changes: SiteChanges
    let unreadable: string | undefined
    try {
      changes = writer.compare(compared === undefined ? undefined : target)
    } catch (err) {
      // a damaged file is what an import mends: it is replaced (and kept), its sites unknown
      unreadable = (err as Error).message
      changes = writer.compare(undefined)
    }
    const removesTooMany = changes.before > 0 && changes.removed.count * 2 > changes.before
    if (policy.guard && !policy.force && removesTooMany) return { ok: false, refusal: 'removes-too-many', changes }
    if (policy.dryRun) {
      return { ok: true, dryRun: true, siteCount: changes.after, changes, unreadable, pruned: [], warnings: [] }
    }
    const { siteCount, builtAt, file } = writer.finish(meta)
    return withLock(target, (): Replaced => {
      if (fileIdentity(target) !== compared) return { ok: false, refusal: 'replaced-meanwhile', changes }
      const { kept, ...pruned } = putInPlace(target, file, policy.keep)
      return { ok: true, dryRun: false, siteCount, builtAt, changes, unreadable, kept: kept?.id, ...pruned }
    })
  } finally {
    writer.abort() // the temporary file, unless it was renamed into place
  }
}

export interface RolledBack extends Pruned {
  /** the version put back, as it was listed before */
  restored: VersionInfo
  /** the file it replaced, kept as the newest version (none when there was no file) */
  kept?: VersionInfo
}

/** The meta of a kept version, checked for what the service would refuse to serve (as at boot). */
function checkVersion (v: KeptVersion): DatasetMeta {
  try {
    return withDatasetFile(v.path, (db) => {
      quickCheck(db, v.path)
      return checkDatasetHead(db, v.path).meta
    })
  } catch (err) {
    throw new Error(`version ${v.id} cannot be put back, the service would refuse it: ${(err as Error).message}`)
  }
}

/** Puts a kept version (by default the newest) back, keeping the file it replaces: a second rollback undoes it. */
export function rollbackDataset (datasetFile: string, { keep, to }: { keep: number, to?: string }): RolledBack {
  const kept = keptVersions(datasetFile)
  if (kept.length === 0) {
    throw new Error(`${datasetFile} has no kept version to roll back to (a version is kept at each import or ` +
      'generate)')
  }
  const pick = to === undefined ? kept[0] : kept.find((v) => v.id === to)
  if (!pick) {
    throw new Error(`${datasetFile} has no kept version ${to}; its versions: ${kept.map((v) => v.id).join(', ')}`)
  }
  const current = fileIdentity(datasetFile)
  const picked = fileIdentity(pick.path)
  const restored = keptInfo(pick, { sizeBytes: statSync(pick.path).size, meta: checkVersion(pick) })
  const replaced = current === undefined ? undefined : describeDatasetFile(datasetFile)
  return withLock(datasetFile, () => {
    if (fileIdentity(datasetFile) !== current || fileIdentity(pick.path) !== picked) {
      throw new Error(`${datasetFile} or version ${pick.id} changed while the rollback ran (another import, ` +
        'generate or rollback): nothing changed; look at datasets versions and run it again')
    }
    const { kept, ...pruned } = putInPlace(datasetFile, pick.path, keep)
    return { restored, kept: kept && keptInfo(kept, replaced), ...pruned }
  })
}
