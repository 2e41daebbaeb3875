// The operator CLI's dataset versions (wired into scripts/admin.ts): what an import or generate
// changes and keeps, `datasets versions` and `datasets rollback`, as text and JSON. The work is
// src/sites/versions.ts's.
import type { SiteChanges } from '../src/sites/changes.ts'
import type { Replaced, RolledBack, VersionInfo } from '../src/sites/versions.ts'

type Done = Extract<Replaced, { ok: true }>
type Refused = Extract<Replaced, { ok: false }>

export function changesJson (changes: SiteChanges, unreadable?: string) {
  return { ...changes, ...unreadable === undefined ? {} : { unreadable } }
}

/** `sites: 3 added, 1 removed, 2 changed, 994 unchanged` */
export function changesLine (c: SiteChanges, unreadable?: string): string {
  if (unreadable !== undefined) return `sites: ${c.added.count} added (the file replaced cannot be read: ${unreadable})`
  const unchanged = c.before - c.removed.count - c.changed.count
  return `sites: ${c.added.count} added, ${c.removed.count} removed, ${c.changed.count} changed, ${unchanged} unchanged`
}

/** The first ids of each kind of change, for a dry run. */
export function exampleLines (c: SiteChanges): string[] {
  return (['added', 'removed', 'changed'] as const).filter((kind) => c[kind].count > 0).map((kind) => {
    const { count, first } = c[kind]
    const more = count > first.length ? `, ... (${count - first.length} more)` : ''
    return `  ${kind}: ${first.join(', ')}${more}`
  })
}

/** What an import or generate that was made kept and pruned, as lines and JSON fields. */
export function keptReport (dataset: string, keep: number, done: Done) {
  const lines = []
  if (done.kept !== undefined) {
    lines.push(`kept the file it replaced as version ${done.kept}: ` +
      `'datasets rollback --dataset ${dataset}' puts it back`)
  }
  if (done.pruned.length > 0) {
    lines.push(`removed the oldest kept version${done.pruned.length === 1 ? '' : 's'} ${done.pruned.join(', ')} ` +
      `(DATASET_KEEP=${keep})`)
  }
  return { lines, json: { kept_version: done.kept ?? null, pruned_versions: done.pruned } }
}

/** The one-line reason of an import or generate refused once its file was valid. */
export function refusalLine (command: 'import' | 'generate', dataset: string, target: string, refused: Refused) {
  const { before, removed } = refused.changes
  if (refused.refusal === 'removes-too-many') {
    return `error: ${command} refused: it would remove ${removed.count} of the ${before} sites of ${dataset} ` +
      `(more than half); ${target} is unchanged (give --force to ${command} it anyway)`
  }
  return `error: ${command} refused: ${target} was replaced by another command while this ${command} ran; ` +
    'nothing written (run it again to compare with the file now there)'
}

const formatSize = (bytes: number) =>
  bytes >= 1e9
    ? `${(bytes / 1e9).toFixed(1)} GB`
    : bytes >= 1e6 ? `${(bytes / 1e6).toFixed(1)} MB` : bytes >= 1e3 ? `${(bytes / 1e3).toFixed(1)} kB` : `${bytes} B`

/** A file of `datasets versions --json`; the files of a rollback's JSON are the same without `dataset`, `current`. */
export function versionJson (dataset: string, v: VersionInfo) {
  return { dataset, version: v.version, current: v.current, ...fileJson(v) }
}

function fileJson (v: VersionInfo) {
  const base = { path: v.path }
  const replaced = { replaced_at: v.replacedAt ?? null }
  const size = v.sizeBytes === undefined ? {} : { size_bytes: v.sizeBytes }
  if (v.error !== undefined || !v.meta) return { ...base, ...size, ...replaced, error: v.error }
  return {
    ...base,
    site_count: Number(v.meta.site_count),
    built_at: v.meta.built_at,
    source: v.meta.source,
    ...size,
    ...replaced
  }
}

const COLUMNS = { dataset: 11, version: 24, sites: 9, builtAt: 24, size: 8 }

/** `datasets versions` as a table: a line per file, the current one first. */
export function versionsTable (rows: { dataset: string, info: VersionInfo }[]): string {
  const c = COLUMNS
  const header = `${'DATASET'.padEnd(c.dataset)} ${'VERSION'.padEnd(c.version)} ${'SITES'.padStart(c.sites)}  ` +
    `${'BUILT_AT'.padEnd(c.builtAt)}  ${'SIZE'.padStart(c.size)}  ${'REPLACED_AT'.padEnd(c.version)}  SOURCE`
  const lines = rows.map(({ dataset, info }) => {
    const head = `${dataset.padEnd(c.dataset)} ${info.version.padEnd(c.version)}`
    if (info.error !== undefined || !info.meta) return `${head} ${info.error}`
    return `${head} ${info.meta.site_count.padStart(c.sites)}  ${info.meta.built_at.padEnd(c.builtAt)}  ` +
      `${formatSize(info.sizeBytes ?? 0).padStart(c.size)}  ${(info.replacedAt ?? '-').padEnd(c.version)}  ` +
      info.meta.source
  })
  return [header, ...lines].join('\n')
}

/** `1000 sites, built_at ..., source ...` or why the file cannot be read. */
const summary = (v: VersionInfo) => v.meta
  ? `${v.meta.site_count} sites, built_at ${v.meta.built_at}, source ${v.meta.source}`
  : v.error

/** What a rollback did, as text and JSON. */
export function rollbackReport (dataset: string, path: string, keep: number, done: RolledBack) {
  const lines = [`${dataset}: put back version ${done.restored.version} (${summary(done.restored)})`]
  lines.push(done.kept
    ? `kept the file it replaced as version ${done.kept.version} (${summary(done.kept)}): ` +
      `a second 'datasets rollback --dataset ${dataset}' puts it back`
    : 'no file was in its place: nothing kept')
  if (done.pruned.length > 0) {
    lines.push(`removed the oldest kept version${done.pruned.length === 1 ? '' : 's'} ${done.pruned.join(', ')} ` +
      `(DATASET_KEEP=${keep})`)
  }
  const json = {
    ok: true,
    dataset,
    path,
    restored: { version: done.restored.version, ...fileJson({ ...done.restored, path }) },
    kept: done.kept ? { version: done.kept.version, ...fileJson(done.kept) } : null,
    pruned_versions: done.pruned
  }
  return { lines, json }
}
