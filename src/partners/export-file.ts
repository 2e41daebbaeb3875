// The partners export file (`partners export`, `partners import`): every partner with its token
// digest, never a token. Version 2 writes each partner as `partners show --json` prints it, plus
// `token_sha256`; version 1 (earlier builds) held control.db's rows, and is still read. Every entry
// is checked, and the file as a whole, before a row is written anywhere.
import type { Static } from '@sinclair/typebox'
import { clashInFile, fromRow, overrideToColumn, partnerView, type PartnerRow } from './store.ts'
import { PartnerEntrySchema, firstProblem, partnerLabel, rowProblem } from './row-schema.ts'

const FORMAT = 'lsp-partners'

/** A file that is not a partners export this build can import; the message says why. */
class ExportFileError extends Error {
  override name = 'ExportFileError'
}

/** The document `partners export` writes, partners in the order given (by slug, as both stores list them). */
export function exportDocument (rows: PartnerRow[]) {
  return {
    format: FORMAT,
    version: 2,
    partners: rows.map((row) => ({ ...partnerView(fromRow(row)), token_sha256: row.token_sha256 }))
  }
}

/**
 * The stored row of a checked version 2 entry. Its `limits` are what tier and limit_overrides gave
 * when it was exported (a later build may change a tier's limits): the import sets those two.
 */
function rowFromEntry (entry: Static<typeof PartnerEntrySchema>): PartnerRow {
  const { limits, limit_overrides: overrides, categories, other_categories: others, site_by_id: byId, ...rest } = entry
  return {
    ...rest,
    categories: categories.join(','),
    other_categories: others ? 1 : 0,
    site_by_id: byId ? 1 : 0,
    limit_minute: overrideToColumn(overrides.minute),
    limit_hour: overrideToColumn(overrides.hour),
    limit_day: overrideToColumn(overrides.day)
  }
}

/** The rows of an export file's text, every one checked; `source` names the file in messages. */
export function readExportDocument (text: string, source = 'the file'): { version: 1 | 2, rows: PartnerRow[] } {
  let parsed: { format?: unknown, version?: unknown, partners?: unknown }
  try {
    // a BOM (an editor's) is not JSON; the first line of V8's message says where the JSON breaks
    parsed = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text)
  } catch (err) {
    throw new ExportFileError(`${source} is not valid JSON: ${(err as Error).message.split('\n')[0]}`)
  }
  if (parsed?.format !== FORMAT || !Array.isArray(parsed.partners)) {
    throw new ExportFileError(`${source} is not a partners export (format ${FORMAT})`)
  }
  const version = parsed.version
  if (version !== 1 && version !== 2) {
    throw new ExportFileError(`${source} is a partners export of version ${JSON.stringify(version ?? null)}, ` +
      'which this build cannot read (it reads versions 1 and 2)')
  }
  const rows = parsed.partners.map((value: unknown, index: number) => {
    const problem = version === 1 ? rowProblem(value) : firstProblem(PartnerEntrySchema, value)
    if (problem !== undefined) throw new ExportFileError(`${partnerLabel(value, index)}: ${problem}`)
    return version === 1 ? value as PartnerRow : rowFromEntry(value as Static<typeof PartnerEntrySchema>)
  })
  // a slug, id or token digest twice: the stores would keep one of them
  const clash = clashInFile(rows)
  if (clash !== undefined) throw new ExportFileError(clash)
  return { version, rows }
}
