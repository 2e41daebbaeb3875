// The partners export file (`partners export`, `partners import`): every partner with its token
// digest, never a token. Version 2 writes each partner exactly as `partners show --json` prints it,
// plus `token_sha256`; version 1 (written by earlier builds) held control.db's rows as they are
// stored, and is still read. Every entry is checked, and the file as a whole, before a row is
// written anywhere. A field the version does not have is refused rather than dropped.
import type { Static } from '@sinclair/typebox'
import { clashMessage, fromRow, overrideToColumn, partnerView, sharedKey, type PartnerRow } from './store.ts'
import { PartnerEntrySchema, firstProblem, partnerLabel, rowProblem } from './row-schema.ts'

const EXPORT_FORMAT = 'lsp-partners'
const EXPORT_VERSION = 2
/** The versions this build reads. */
const EXPORT_VERSIONS = [1, 2] as const

type PartnerEntry = Static<typeof PartnerEntrySchema>

/** A file that is not a partners export this build can import; the message says why. */
class ExportFileError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'ExportFileError'
  }
}

/** One partner of a version 2 file: its `show --json` object, and its token digest. */
const exportEntry = (row: PartnerRow): PartnerEntry =>
  ({ ...partnerView(fromRow(row)), token_sha256: row.token_sha256 })

/** The document `partners export` writes, partners in the order given (by slug, as both stores list them). */
export function exportDocument (rows: PartnerRow[]) {
  return { format: EXPORT_FORMAT, version: EXPORT_VERSION, partners: rows.map(exportEntry) }
}

/**
 * The stored row of a checked version 2 entry. Its `limits` are left out: they are what tier and
 * limit_overrides gave when it was exported (and may differ if a later build changes a tier's
 * limits); the import sets those two.
 */
function rowFromEntry (entry: PartnerEntry): PartnerRow {
  return {
    id: entry.id,
    slug: entry.slug,
    name: entry.name,
    status: entry.status as PartnerRow['status'],
    tier: entry.tier as PartnerRow['tier'],
    environment: entry.environment as PartnerRow['environment'],
    categories: entry.categories.join(','),
    other_categories: entry.other_categories ? 1 : 0,
    site_by_id: entry.site_by_id ? 1 : 0,
    radius_cap_km: entry.radius_cap_km,
    max_results: entry.max_results,
    limit_minute: overrideToColumn(entry.limit_overrides.minute),
    limit_hour: overrideToColumn(entry.limit_overrides.hour),
    limit_day: overrideToColumn(entry.limit_overrides.day),
    token_sha256: entry.token_sha256,
    created_at: entry.created_at,
    updated_at: entry.updated_at
  }
}

/**
 * The rows of an export file's text, every one checked; `source` names the file in messages.
 * Throws ExportFileError naming the partner and the field of the first problem.
 */
export function readExportDocument (text: string, source = 'the file'): { version: 1 | 2, rows: PartnerRow[] } {
  let parsed: { format?: unknown, version?: unknown, partners?: unknown }
  try {
    // a BOM (an editor's) is not JSON; the first line of V8's message says where the JSON breaks
    parsed = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text)
  } catch (err) {
    throw new ExportFileError(`${source} is not valid JSON: ${(err as Error).message.split('\n')[0]}`)
  }
  const isExport = typeof parsed === 'object' && parsed !== null && parsed.format === EXPORT_FORMAT
  if (!isExport || !Array.isArray(parsed.partners)) {
    throw new ExportFileError(`${source} is not a partners export (format ${EXPORT_FORMAT})`)
  }
  const version = parsed.version
  if (version !== 1 && version !== 2) {
    throw new ExportFileError(`${source} is a partners export of version ${JSON.stringify(version ?? null)}, ` +
      `which this build cannot read (it reads versions ${EXPORT_VERSIONS.join(' and ')})`)
  }
  const rows = parsed.partners.map((value: unknown, index: number) => {
    const problem = version === 1 ? rowProblem(value) : firstProblem(PartnerEntrySchema, value)
    if (problem !== undefined) throw new ExportFileError(`${partnerLabel(value, index)}: ${problem}`)
    return version === 1 ? value as PartnerRow : rowFromEntry(value as PartnerEntry)
  })
  // a slug, id or token digest twice: the stores would keep one of them
  const shared = sharedKey(rows)
  if (shared) throw new ExportFileError(clashMessage(...shared))
  return { version, rows }
}
