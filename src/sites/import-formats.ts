// Streaming readers of the three import formats (docs/data-files.md). Each yields raw records
// with the label an operator finds them by (`line N`, or `feature N` for GeoJSON), in batches of
// one read's worth (64 kB), holding only those in memory, so a file of any size reads in bounded
// memory.
import { createReadStream } from 'node:fs'

export type ImportFormat = 'csv' | 'geojson' | 'ndjson'
export const IMPORT_FORMATS: readonly ImportFormat[] = ['csv', 'geojson', 'ndjson']
export const CSV_HEADER = ['id', 'category', 'name', 'region', 'country', 'latitude', 'longitude', 'tags'] as const

export interface RawRecord {
  label: string
  /** The record's fields, or the reason it could not be read at all. */
  fields?: Record<string, unknown>
  error?: string
}

export function formatFromPath (path: string): ImportFormat | undefined {
  const lower = path.toLowerCase()
  if (lower.endsWith('.csv')) return 'csv'
  if (lower.endsWith('.geojson') || lower.endsWith('.json')) return 'geojson'
  if (lower.endsWith('.ndjson') || lower.endsWith('.jsonl')) return 'ndjson'
  return undefined
}

/**
 * Size of reads: 64 kB, not more, because records are handed on a read's worth at a time (1 MB
 * reads raised the import's peak RSS by about 80 MB at the same speed). Tests make it tiny so
 * that every token is split somewhere.
 */
export const readOptions = { chunkBytes: 1 << 16 }

/** Text chunks of a file, with the count of bytes read so far. */
async function * chunks (path: string, onBytes?: (bytes: number) => void): AsyncGenerator<string> {
  const stream = createReadStream(path, { highWaterMark: readOptions.chunkBytes })
  const decoder = new TextDecoder('utf-8', { fatal: false })
  let bytes = 0
  let first = true
  for await (const buffer of stream as AsyncIterable<Buffer>) {
    bytes += buffer.length
    let text = decoder.decode(buffer, { stream: true })
    if (first) {
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1)
      first = false
    }
    onBytes?.(bytes)
    yield text
  }
  const rest = decoder.decode()
  if (rest) yield rest
}

interface LineBatch {
  lines: string[]
  /** the batch holds the file's last line, which no line break ends: the file may be cut short */
  unterminated: boolean
}

/**
 * Physical lines without their line ending, a chunk's worth at a time (a line is numbered by its
 * place: the first line yielded is line 1). Rows are handed on in batches because a step of an
 * async generator per row cost more than reading the row.
 */
async function * lineBatches (path: string, onBytes?: (bytes: number) => void): AsyncGenerator<LineBatch> {
  let carry = ''
  for await (const chunk of chunks(path, onBytes)) {
    const text = carry + chunk
    const lines: string[] = []
    let start = 0
    let nl: number
    while ((nl = text.indexOf('\n', start)) >= 0) {
      const end = nl > start && text.charCodeAt(nl - 1) === 13 ? nl - 1 : nl
      lines.push(text.slice(start, end))
      start = nl + 1
    }
    carry = text.slice(start)
    if (lines.length > 0) yield { lines, unterminated: false }
  }
  if (carry !== '') yield { lines: [carry.endsWith('\r') ? carry.slice(0, -1) : carry], unterminated: true }
}

/**
 * A CSV record that no line break ends. A file cut inside its last field still reads as a valid
 * record (`~heli` for `~helipad`), and an import replaces the whole dataset: so it is refused.
 */
const CSV_CUT_SHORT = 'the file ends inside this record (no line break after the last record): cut short? Every record, the last one too, must end with a line break'

/** One CSV record (RFC 4180: quoted fields, "" for a quote); null when the quoting is malformed. */
export function splitCsvRecord (record: string): string[] | null {
  if (!record.includes('"')) return record.split(',')
  const fields: string[] = []
  let i = 0
  for (;;) {
    if (record[i] === '"') {
      let value = ''
      i++
      for (;;) {
        const q = record.indexOf('"', i)
        if (q < 0) return null
        value += record.slice(i, q)
        if (record[q + 1] === '"') {
          value += '"'
          i = q + 2
        } else {
          i = q + 1
          break
        }
      }
      fields.push(value)
      if (i === record.length) return fields
      if (record[i] !== ',') return null
      i++
    } else {
      const comma = record.indexOf(',', i)
      const value = comma < 0 ? record.slice(i) : record.slice(i, comma)
      if (value.includes('"')) return null
      fields.push(value)
      if (comma < 0) return fields
      i = comma + 1
    }
  }
}

const countQuotes = (s: string) => {
  let count = 0
  for (let i = s.indexOf('"'); i >= 0; i = s.indexOf('"', i + 1)) count++
  return count
}

/** The header's columns in the order a record's fields are made (one shape for every record). */
const csvRecord = (fields: string[], column: number[]): Record<string, unknown> => ({
  id: fields[column[0]],
  category: fields[column[1]],
  name: fields[column[2]],
  region: fields[column[3]],
  country: fields[column[4]],
  latitude: fields[column[5]],
  longitude: fields[column[6]],
  tags: fields[column[7]]
})

async function * readCsvBatches (path: string, onBytes?: (bytes: number) => void): AsyncGenerator<RawRecord[]> {
  let column: number[] | undefined // where each of CSV_HEADER's names is in a record
  let pending = ''
  let pendingLine = 0
  let quotes = 0
  let n = 0
  for await (const { lines, unterminated } of lineBatches(path, onBytes)) {
    const batch: RawRecord[] = []
    for (const text of lines) {
      n++
      // A quoted field may hold line breaks: a record ends on a line that leaves the quotes balanced.
      if (pending === '' && text === '' && column) continue
      if (pendingLine === 0) pendingLine = n
      pending = pendingLine === n ? text : `${pending}\n${text}`
      quotes += countQuotes(text)
      if (quotes % 2 === 1) continue
      const recordLine = pendingLine
      const record = pending
      pending = ''
      pendingLine = 0
      quotes = 0
      const fields = splitCsvRecord(record)
      if (!column) {
        const names = fields?.map((f) => f.trim())
        if (!names || names.length !== CSV_HEADER.length || !CSV_HEADER.every((h) => names.includes(h))) {
          batch.push({ label: `line ${recordLine}`, error: `the header must be ${CSV_HEADER.join(',')}` })
          yield batch
          return
        }
        column = CSV_HEADER.map((h) => names.indexOf(h))
        continue
      }
      if (unterminated) {
        batch.push({ label: `line ${recordLine}`, error: CSV_CUT_SHORT })
      } else if (!fields) {
        batch.push({ label: `line ${recordLine}`, error: 'malformed quoting' })
      } else if (fields.length !== CSV_HEADER.length) {
        batch.push({ label: `line ${recordLine}`, error: `expected ${CSV_HEADER.length} fields, found ${fields.length}` })
      } else {
        batch.push({ label: `line ${recordLine}`, fields: csvRecord(fields, column) })
      }
    }
    if (batch.length > 0) yield batch
  }
  if (pendingLine !== 0) yield [{ label: `line ${pendingLine}`, error: 'unterminated quoted field: the file ends inside it (cut short?)' }]
  else if (!column) yield [{ label: 'line 1', error: `the header must be ${CSV_HEADER.join(',')}` }]
}

const NOT_JSON = Symbol('not JSON')
const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return NOT_JSON
  }
}

async function * readNdjsonBatches (path: string, onBytes?: (bytes: number) => void): AsyncGenerator<RawRecord[]> {
  let n = 0
  for await (const { lines, unterminated } of lineBatches(path, onBytes)) {
    const batch: RawRecord[] = []
    for (const text of lines) {
      n++
      if (text.trim() === '') continue
      // a last line without its line break is taken when it is a whole object: a cut one never parses
      const value = parseJson(text)
      if (value === NOT_JSON) batch.push({ label: `line ${n}`, error: unterminated ? 'not valid JSON, and the file ends inside it (no line break after the last line): cut short?' : 'not valid JSON' })
      else if (value === null || typeof value !== 'object' || Array.isArray(value)) batch.push({ label: `line ${n}`, error: 'not a JSON object' })
      else batch.push({ label: `line ${n}`, fields: value as Record<string, unknown> })
    }
    if (batch.length > 0) yield batch
  }
}

/**
 * GeoJSON FeatureCollection, streamed: a small scanner follows strings and nesting, finds the
 * top-level "features" array and hands each element to JSON.parse on its own.
 */
async function * readGeojsonBatches (path: string, onBytes?: (bytes: number) => void): AsyncGenerator<RawRecord[]> {
  let depth = 0
  let inString = false
  let escaped = false
  let keyParts: string[] | undefined // a string at depth 1 being read (split across chunks too)
  let keyStart = 0
  let lastKey: string | undefined // last string at depth 1: a key if a ':' follows
  let valueOf: string | undefined // key whose value comes next at depth 1
  let typeValue: unknown
  let sawFeatures = false
  let inFeatures = false
  let element: string[] = [] // parts of the element being captured
  let elementStart = -1
  let n = 0
  let topLevel = true
  let parsed: RawRecord[] = []

  const finishElement = (text: string) => {
    n++
    const value = parseJson(text)
    parsed.push(value === NOT_JSON ? { label: `feature ${n}`, error: 'not valid JSON' } : featureRecord(value, n))
  }

  for await (const chunk of chunks(path, onBytes)) {
    if (elementStart >= 0) elementStart = 0
    if (keyParts) keyStart = 0
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk.charCodeAt(i)
      if (inString) {
        if (escaped) escaped = false
        else if (c === 92) escaped = true // backslash
        else if (c === 34) { // closing quote
          inString = false
          if (keyParts) {
            const text = keyParts.join('') + chunk.slice(keyStart, i)
            keyParts = undefined
            if (valueOf === 'type') { typeValue = text; valueOf = undefined } else lastKey = text
          }
        }
        continue
      }
      if (c === 32 || c === 10 || c === 13 || c === 9) continue
      if (topLevel) {
        if (c !== 123) {
          parsed.push({ label: 'feature 0', error: 'the file is not a GeoJSON FeatureCollection (no top-level object)' })
          yield parsed
          return
        }
        topLevel = false
      }
      if (inFeatures && depth === 2 && elementStart < 0 && c !== 44 && c !== 93) {
        elementStart = i
        element = []
      }
      switch (c) {
        case 34: // opening quote
          inString = true
          if (depth === 1) { keyParts = []; keyStart = i + 1 }
          break
        case 58: // ':'
          if (depth === 1) { valueOf = lastKey; lastKey = undefined }
          break
        case 123: case 91: // { [
          if (depth === 1 && valueOf === 'features' && c === 91) { inFeatures = true; sawFeatures = true }
          if (depth === 1) valueOf = undefined
          depth++
          break
        case 125: case 93: // } ]
          depth--
          if (inFeatures && depth === 2 && elementStart >= 0 && c === 125) {
            element.push(chunk.slice(elementStart, i + 1))
            finishElement(element.join(''))
            elementStart = -1
          } else if (inFeatures && depth === 1) {
            if (elementStart >= 0) { element.push(chunk.slice(elementStart, i)); finishElement(element.join('').trim()); elementStart = -1 }
            inFeatures = false
          }
          break
        case 44: // ','
          if (inFeatures && depth === 2 && elementStart >= 0) {
            element.push(chunk.slice(elementStart, i))
            finishElement(element.join('').trim())
            elementStart = -1
          }
          if (depth === 1) valueOf = undefined
          break
      }
    }
    if (elementStart >= 0) element.push(chunk.slice(elementStart))
    if (keyParts) keyParts.push(chunk.slice(keyStart))
    if (parsed.length > 0) yield parsed
    parsed = []
  }
  if (!sawFeatures || depth !== 0 || inString) {
    const current = inFeatures && elementStart >= 0 ? n + 1 : n // the feature being read when the file ended
    yield [{ label: `feature ${current}`, error: 'the file is not a complete GeoJSON FeatureCollection (no "features" array, or cut short)' }]
  } else if (typeValue !== 'FeatureCollection') {
    yield [{ label: 'feature 0', error: 'the top-level "type" must be "FeatureCollection"' }]
  }
}

function featureRecord (value: unknown, n: number): RawRecord {
  const label = `feature ${n}`
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return { label, error: 'not a JSON object' }
  const feature = value as { type?: unknown, geometry?: { type?: unknown, coordinates?: unknown }, properties?: unknown }
  if (feature.type !== 'Feature') return { label, error: 'type must be "Feature"' }
  const g = feature.geometry
  if (!g || g.type !== 'Point' || !Array.isArray(g.coordinates) || g.coordinates.length < 2) {
    return { label, error: 'geometry must be a Point with [longitude, latitude]' }
  }
  const p = feature.properties
  if (p === null || typeof p !== 'object' || Array.isArray(p)) return { label, error: 'properties must be an object' }
  return { label, fields: { ...(p as Record<string, unknown>), longitude: g.coordinates[0], latitude: g.coordinates[1] } }
}

/** Records in file order, a chunk of the file's worth at a time. */
export function readRecordBatches (format: ImportFormat, path: string, onBytes?: (bytes: number) => void): AsyncGenerator<RawRecord[]> {
  switch (format) {
    case 'csv': return readCsvBatches(path, onBytes)
    case 'ndjson': return readNdjsonBatches(path, onBytes)
    case 'geojson': return readGeojsonBatches(path, onBytes)
  }
}
