// datasets import: every row validated, coordinates obscured by rounding, all or nothing: the new file is written
// beside the old one and takes its place only when every row is valid.
import { statSync } from 'node:fs'
import { basename } from 'node:path'
import { CATEGORY_MAX, SITE_ID_PATTERN, TAG_PATTERN, NAME_RULE, isName } from '../schemas/common.ts'
import { COUNTRY_CODE, REGION_CODE, obscure, openDatasetWriter, type SiteRow } from './dataset-file.ts'
import { readRecordBatches } from './import-formats.ts'
import type { ImportFormat } from './export.ts'
import { replaceDataset, type ReplacePolicy, type Replaced } from './versions.ts'

const MAX_REPORTED_ERRORS = 20

const siteId = new RegExp(SITE_ID_PATTERN)
const tagPattern = new RegExp(TAG_PATTERN)
const DECIMAL = /^\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*$/

function number (value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined
  if (typeof value === 'string' && DECIMAL.test(value)) return Number(value)
  return undefined
}

/** A UTF-16 surrogate not paired with its other half (in a Unicode pattern, a pair is one code point). */
const LONE_SURROGATE = /\p{Cs}/u

/** A valid site from a raw record, or the reasons it is not one. */
function validateRecord (
  fields: Record<string, unknown>,
  precision: number,
  tagsAsText: boolean
): { site: SiteRow } | { reasons: string[] } {
  const reasons: string[] = []
  const id = fields.id
  if (typeof id !== 'string' || !siteId.test(id)) reasons.push('id must be 1 to 64 characters of A-Z a-z 0-9 _ -')

  const categoryValue = fields.category
  const category = typeof categoryValue === 'string' && /^\s*\d+\s*$/.test(categoryValue)
    ? Number(categoryValue)
    : categoryValue
  if (typeof category !== 'number' || !Number.isSafeInteger(category) || category < 1 || category > CATEGORY_MAX) {
    reasons.push(`category must be a whole number from 1 to ${CATEGORY_MAX}`)
  }

  const name = fields.name
  // a JSON escape such as \ud800 alone: UTF-8 cannot store it, and it would be served as U+FFFD
  const lone = typeof name === 'string' ? LONE_SURROGATE.exec(name) : null
  if (lone !== null) {
    const at = lone[0].charCodeAt(0).toString(16)
    reasons.push(`name holds a lone surrogate (\\u${at}), which is not text: the file must hold the character whole`)
  } else if (!isName(name)) {
    reasons.push(`name must be ${NAME_RULE}`)
  }
  const region = fields.region
  if (typeof region !== 'string' || !REGION_CODE.test(region)) reasons.push('region must be three upper-case letters')
  const country = fields.country
  if (typeof country !== 'string' || !COUNTRY_CODE.test(country)) reasons.push('country must be two upper-case letters')

  const latitude = number(fields.latitude)
  if (latitude === undefined || latitude < -90 || latitude > 90) {
    reasons.push('latitude must be a number from -90 to 90')
  }
  const longitude = number(fields.longitude)
  if (longitude === undefined || longitude < -180 || longitude > 180) {
    reasons.push('longitude must be a number from -180 to 180')
  }

  let tags: string[] = []
  const tagsValue = fields.tags
  if (tagsAsText) {
    if (typeof tagsValue === 'string' && tagsValue !== '') tags = tagsValue.split('|')
  } else if (Array.isArray(tagsValue)) {
    tags = tagsValue as string[]
  } else if (tagsValue !== undefined && tagsValue !== null) {
    reasons.push('tags must be an array of tags')
  }
  const badTag = tags.find((tag) => typeof tag !== 'string' || tag.length > 64 || !tagPattern.test(tag))
  if (badTag !== undefined) {
    reasons.push(`tag ${JSON.stringify(badTag)} must be ~ then lowercase letters, digits and hyphens ` +
      '(at most 64 characters)')
  }

  if (reasons.length > 0) return { reasons }
  return {
    site: {
      id: id as string,
      category: category as number,
      name: (name as string).trim(),
      region: region as string,
      country: country as string,
      latitude: obscure(latitude!, precision),
      longitude: obscure(longitude!, precision),
      tags: [...new Set(tags)].sort()
    }
  }
}

interface ImportOptions {
  file: string
  format: ImportFormat
  target: string
  precision: number
  /** names of categories 8 and above, kept in the file's meta */
  categoryNames?: Record<number, string>
  /** called with (bytes read, file size, rows read) as the file is read */
  onProgress?: (bytes: number, total: number, rows: number) => void
  /** how the new file replaces the old one (versions.ts: the CLI's); without it, it is renamed into place */
  replace?: ReplacePolicy
}

interface ImportResult {
  ok: boolean
  rows: number
  siteCount: number
  builtAt?: string
  /** at most MAX_REPORTED_ERRORS, each `line N: reason` (or `feature N: reason`) */
  errors: string[]
  errorCount: number
  /** with `replace`, once every row is valid: how the file replaced the old one, or why it did not */
  replaced?: Replaced
}

export async function importSites (options: ImportOptions): Promise<ImportResult> {
  const total = statSync(options.file).size
  // Errors are listed in file order, though a duplicate id is found only when its batch of
  // sites is written: each error keeps its record's place, and only the first ones are kept.
  let listed: { at: number, text: string }[] = []
  let errorCount = 0
  let rows = 0
  let at = 0
  const fail = (place: number, label: string, reason: string) => {
    errorCount++
    listed.push({ at: place, text: `${label}: ${reason}` })
    if (listed.length >= 4 * MAX_REPORTED_ERRORS) listed = firstErrors(listed)
  }
  const writer = openDatasetWriter<{ at: number, label: string }>(options.target, (ref, site) => {
    fail(ref!.at, ref!.label, `duplicate id ${JSON.stringify(site.id)}`)
  }, { scratch: options.replace?.dryRun })
  const tagsAsText = options.format === 'csv'
  try {
    let bytes = 0
    for await (const batch of readRecordBatches(options.format, options.file, (b) => { bytes = b })) {
      for (const record of batch) {
        at++
        if (record.error !== undefined) {
          fail(at, record.label, record.error)
          continue
        }
        rows++
        if (options.onProgress && (rows & 0x3fff) === 0) options.onProgress(bytes, total, rows)
        const result = validateRecord(record.fields!, options.precision, tagsAsText)
        if ('reasons' in result) {
          fail(at, record.label, result.reasons.join('; '))
          continue
        }
        // rows after a refusal are still written, so duplicates among them are reported too
        writer.add(result.site, { at, label: record.label })
      }
    }
    writer.flush()
    options.onProgress?.(total, total, rows)
    if (errorCount === 0 && rows === 0) fail(at + 1, 'file', 'holds no sites')
    if (errorCount > 0) {
      writer.abort()
      return { ok: false, rows, siteCount: 0, errors: firstErrors(listed).map((e) => e.text), errorCount }
    }
    const meta = {
      source: `import ${basename(options.file)} (${options.format})`,
      precision: options.precision,
      categoryNames: options.categoryNames
    }
    if (options.replace) {
      const replaced = replaceDataset(writer, options.target, meta, options.replace)
      const siteCount = replaced.ok ? replaced.siteCount : replaced.changes.after
      const builtAt = replaced.ok ? replaced.builtAt : undefined
      return { ok: replaced.ok, rows, siteCount, builtAt, errors: [], errorCount, replaced }
    }
    const { siteCount, builtAt } = writer.commit(meta)
    return { ok: true, rows, siteCount, builtAt, errors: [], errorCount }
  } catch (err) {
    writer.abort()
    throw err
  }
}

const firstErrors = (list: { at: number, text: string }[]) =>
  list.sort((a, b) => a.at - b.at).slice(0, MAX_REPORTED_ERRORS)
