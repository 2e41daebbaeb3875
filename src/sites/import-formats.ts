// Streaming readers of the three import formats (docs/data-files.md): CSV through csv-parse,
// GeoJSON through stream-json's tokenizer, NDJSON a line at a time. Each yields raw records with the
// label an operator finds them by (`line N`, or `feature N` for GeoJSON), in batches of one read's
// worth, holding only those in memory, so a file of any size reads in bounded memory.
import { isUtf8 } from 'node:buffer'
import { createReadStream } from 'node:fs'
import { Parser as CsvParser, type CsvError, type Options as CsvOptions } from 'csv-parse'
import { jsonParser, type Token } from 'stream-json/core/parser.js'
import { Assembler } from 'stream-json/core/assembler.js'
import { getManyValues, isMany, none } from 'stream-chain/defs.js'
import { CSV_HEADER, type ImportFormat } from './file-formats.ts'

/** Told the bytes read so far, after each read. */
type OnBytes = (bytes: number) => void

export interface RawRecord {
  label: string
  /** The record's fields, or the reason it could not be read at all. */
  fields?: Record<string, unknown>
  error?: string
}

/**
 * Size of reads: small, because records are handed on a read's worth at a time, and larger reads
 * raise the import's peak memory at no gain in speed. Tests make it tiny so that every token is
 * split somewhere.
 */
export const readOptions = { chunkBytes: 1 << 16 }

/** Bytes that are not UTF-8: the import is refused at the first (a decoder would make them U+FFFD). */
class NotUtf8Error extends Error {
  constructor (readonly offset: number, readonly line: number) {
    super(`not UTF-8 at byte ${offset + 1}`)
  }
}

/** Bytes in the UTF-8 sequence a lead byte starts; 0 for a byte no sequence starts with. */
const sequenceLength = (byte: number) =>
  byte < 0x80 ? 1 : byte < 0xc2 ? 0 : byte < 0xe0 ? 2 : byte < 0xf0 ? 3 : byte < 0xf5 ? 4 : 0

/** Where `bytes` (known not to be UTF-8) first is not: the start of the first bad sequence. */
function firstNotUtf8 (bytes: Uint8Array): number {
  for (let i = 0; i < bytes.length;) {
    const n = sequenceLength(bytes[i])
    if (n === 0 || i + n > bytes.length || !isUtf8(bytes.subarray(i, i + n))) return i
    i += n
  }
  return bytes.length
}

/**
 * The file's bytes, read by readOptions.chunkBytes, checked to be UTF-8 (NotUtf8Error at the first
 * that are not); a sequence cut by the end of a read is checked with the next read.
 */
async function * utf8Buffers (path: string, onBytes?: OnBytes): AsyncGenerator<Buffer> {
  const stream = createReadStream(path, { highWaterMark: readOptions.chunkBytes })
  let bytes = 0
  let held: Buffer | undefined // the start of a sequence the last read cut
  let heldAt = 0 // its file offset
  let breaks = 0 // line breaks before it
  try {
    for await (const buffer of stream as AsyncIterable<Buffer>) {
      bytes += buffer.length
      const data = held ? Buffer.concat([held, buffer]) : buffer
      // the last lead byte (at most 3 back): its sequence may go on in the next read
      let cut = data.length
      for (let i = data.length - 1; i >= Math.max(0, data.length - 3); i--) {
        if ((data[i] & 0xc0) === 0x80) continue
        if (i + Math.max(1, sequenceLength(data[i])) > data.length) cut = i
        break
      }
      const whole = data.subarray(0, cut)
      if (!isUtf8(whole)) {
        const at = firstNotUtf8(whole)
        throw new NotUtf8Error(heldAt + at, breaks + lineBreaks(whole, at) + 1)
      }
      breaks += lineBreaks(whole, whole.length)
      heldAt += cut
      held = cut < data.length ? Buffer.from(data.subarray(cut)) : undefined
      onBytes?.(bytes)
      if (whole.length > 0) yield whole
    }
    if (held) throw new NotUtf8Error(heldAt, breaks + 1) // the file ends inside a sequence
  } finally {
    stream.destroy()
  }
}

const lineBreaks = (bytes: Uint8Array, end: number) => {
  let n = 0
  for (let i = bytes.indexOf(10); i >= 0 && i < end; i = bytes.indexOf(10, i + 1)) n++
  return n
}

/** Text chunks of a file (UTF-8, checked), with the count of bytes read so far. */
async function * chunks (path: string, onBytes?: OnBytes): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8')
  let first = true
  for await (const buffer of utf8Buffers(path, onBytes)) {
    let text = decoder.decode(buffer)
    if (first) {
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1)
      first = false
    }
    yield text
  }
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
async function * lineBatches (path: string, onBytes?: OnBytes): AsyncGenerator<LineBatch> {
  // the start of a line no break has ended yet, in pieces: a long line is joined once, and each
  // chunk searched once (joining and searching again per chunk is quadratic in the line's length)
  let carry: string[] = []
  for await (const chunk of chunks(path, onBytes)) {
    let nl = chunk.indexOf('\n')
    if (nl < 0) {
      carry.push(chunk)
      continue
    }
    const text = carry.length > 0 ? carry.join('') + chunk : chunk
    const lines: string[] = []
    let start = 0
    for (nl += text.length - chunk.length; nl >= 0; nl = text.indexOf('\n', start)) {
      const end = nl > start && text.charCodeAt(nl - 1) === 13 ? nl - 1 : nl
      lines.push(text.slice(start, end))
      start = nl + 1
    }
    carry = start < text.length ? [text.slice(start)] : []
    yield { lines, unterminated: false }
  }
  const rest = carry.join('')
  if (rest !== '') yield { lines: [rest.endsWith('\r') ? rest.slice(0, -1) : rest], unterminated: true }
}

/**
 * A CSV record that no line break ends. A file cut inside its last field still reads as a valid
 * record (`~heli` for `~helipad`), and an import replaces the whole dataset: so it is refused.
 */
const CSV_CUT_SHORT = 'the file ends inside this record (no line break after the last record): cut short? ' +
  'Every record, the last one too, must end with a line break'

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

/**
 * Line numbers of byte offsets of a file read in order (offsets asked for never go back). The
 * records' own line counts are not used: csv-parse counts a CRLF inside a quoted field as two lines.
 */
class LineCounter {
  private readonly chunks: Buffer[] = []
  private chunkStart = 0 // file offset of chunks[0]
  private at = 0 // offset counted up to
  private breaks = 0 // line breaks before `at`

  add (chunk: Buffer) {
    this.chunks.push(chunk)
  }

  /** The line (from 1) of the byte at `offset`, and whether that byte is a line break. */
  lineOf (offset: number): { line: number, isBreak: boolean } {
    for (;;) {
      const chunk = this.chunks[0]
      if (!chunk) return { line: this.breaks + 1, isBreak: false } // the end of the file
      const end = Math.min(offset, this.chunkStart + chunk.length)
      let i = chunk.indexOf(10, this.at - this.chunkStart)
      for (; i >= 0 && this.chunkStart + i < end; i = chunk.indexOf(10, i + 1)) this.breaks++
      this.at = end
      if (offset < this.chunkStart + chunk.length) {
        return { line: this.breaks + 1, isBreak: chunk[offset - this.chunkStart] === 10 }
      }
      this.chunkStart += chunk.length
      this.chunks.shift()
    }
  }
}

/**
 * csv-parse's stream, handing each record on as it is parsed, with the file offset where it ends
 * (csv-parse's info.bytes when it pushes the record; its per-record info objects cost more than
 * the parse).
 */
class CsvRecords extends CsvParser {
  constructor (options: CsvOptions, private readonly onRecord: (fields: string[], end: number) => void) {
    super(options)
  }

  override push (record: unknown): boolean {
    if (record === null) return super.push(null)
    this.onRecord(record as string[], this.info.bytes)
    return true
  }
}

/**
 * CSV (RFC 4180) read by csv-parse. A record is labelled with the line it starts on; a record it
 * cannot read (malformed quoting) is reported and reading goes on with the next one.
 */
async function * readCsvBatches (path: string, onBytes?: OnBytes): AsyncGenerator<RawRecord[]> {
  let column: number[] | undefined // where each of CSV_HEADER's names is in a record
  let batch: RawRecord[] = []
  let done = false // the header is wrong: nothing more is read
  let lastSkipped: string | undefined
  const lines = new LineCounter()
  const headerError = () => {
    batch.push({ label: 'line 1', error: `the header must be ${CSV_HEADER.join(',')}` })
    done = true
  }
  const onRecord = (fields: string[], end: number) => {
    if (done) return
    const last = lines.lineOf(end - 1) // a record ends on its line break, or where the file ends
    let line = last.line
    for (const field of fields) {
      for (let i = field.indexOf('\n'); i >= 0; i = field.indexOf('\n', i + 1)) line--
    }
    const label = `line ${line}`
    if (!column) {
      const names = fields.map((f) => f.trim())
      if (names.length !== CSV_HEADER.length || !CSV_HEADER.every((h) => names.includes(h))) return headerError()
      column = CSV_HEADER.map((h) => names.indexOf(h))
    } else if (fields.length === 1 && fields[0] === '') {
      // a blank line
    } else if (!last.isBreak) {
      batch.push({ label, error: CSV_CUT_SHORT })
    } else if (fields.length !== CSV_HEADER.length) {
      batch.push({ label, error: `expected ${CSV_HEADER.length} fields, found ${fields.length}` })
    } else {
      batch.push({ label, fields: csvRecord(fields, column) })
    }
  }
  const onSkip = (err: CsvError | undefined) => {
    if (done || !err) return
    if (!column) return headerError()
    // the offset of the record's start, or of its last field read before the error
    const label = `line ${lines.lineOf(err.bytes as number).line}`
    const error = err.code === 'CSV_QUOTE_NOT_CLOSED'
      ? 'unterminated quoted field: the file ends inside it (cut short?)'
      : 'malformed quoting'
    // after a stray quote csv-parse reads on as if quoted: one error for the record
    if (label === lastSkipped) return
    lastSkipped = label
    batch.push({ label, error })
  }
  const parser = new CsvRecords({
    bom: true,
    record_delimiter: ['\r\n', '\n'], // not a lone CR
    relax_column_count: true, // field counts are checked above, record by record
    skip_records_with_error: true,
    on_skip: (err) => { onSkip(err) }
  }, onRecord)
  let failure: Error | undefined // none expected: every error of a record goes to on_skip
  parser.on('error', (err) => { failure = err })
  const buffers = utf8Buffers(path, onBytes)
  try {
    for await (const buffer of buffers) {
      if (failure) throw failure
      lines.add(buffer)
      parser.write(buffer) // parsed at once: its records reach onRecord before write returns
      if (batch.length > 0) {
        yield batch
        batch = []
      }
      if (done) return
    }
    await new Promise((resolve) => parser.end(resolve))
    if (failure) throw failure
    if (!done && !column) headerError()
    if (batch.length > 0) yield batch
  } finally {
    await buffers.return(undefined)
  }
}

const NOT_JSON = Symbol('not JSON')
const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return NOT_JSON
  }
}

const NDJSON_CUT_SHORT = 'not valid JSON, and the file ends inside it (no line break after the last line): cut short?'

async function * readNdjsonBatches (path: string, onBytes?: OnBytes): AsyncGenerator<RawRecord[]> {
  let n = 0
  for await (const { lines, unterminated } of lineBatches(path, onBytes)) {
    const batch: RawRecord[] = []
    for (const text of lines) {
      n++
      if (text.trim() === '') continue
      // a last line without its line break is taken when it is a whole object: a cut one never parses
      const value = parseJson(text)
      const label = `line ${n}`
      if (value === NOT_JSON) batch.push({ label, error: unterminated ? NDJSON_CUT_SHORT : 'not valid JSON' })
      else if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        batch.push({ label, error: 'not a JSON object' })
      } else batch.push({ label, fields: value as Record<string, unknown> })
    }
    if (batch.length > 0) yield batch
  }
}

const INCOMPLETE_COLLECTION =
  'the file is not a complete GeoJSON FeatureCollection (no "features" array, or cut short)'

/**
 * GeoJSON FeatureCollection, streamed: stream-json's tokenizer reads the file, each element of the
 * top-level "features" array is assembled on its own (the rest of the file is never held).
 */
async function * readGeojsonBatches (path: string, onBytes?: OnBytes): AsyncGenerator<RawRecord[]> {
  const tokenize = jsonParser({ streamValues: false }) // whole keys, strings and numbers: one token each
  const assembler = new Assembler()
  let depth = 0 // 1: in the top-level object, 2: in its "features" array
  let key: string | undefined // the top-level key whose value comes next
  let typeValue: unknown
  let sawFeatures = false
  let inFeatures = false
  let inElement = false // an element of "features" is being assembled
  let started = false
  let n = 0
  let parsed: RawRecord[] = []
  const notCollection = () => {
    parsed.push({ label: 'feature 0', error: 'the file is not a GeoJSON FeatureCollection (no top-level object)' })
    return false
  }
  /** false: reading stops */
  const onToken = (token: Token): boolean => {
    if (inElement) {
      assembler.consume(token)
      if (assembler.done) {
        inElement = false
        parsed.push(featureRecord(assembler.current, ++n))
      }
      return true
    }
    if (!started) {
      started = true
      if (token.name !== 'startObject') return notCollection()
    }
    switch (token.name) {
      case 'startObject': case 'startArray':
        if (inFeatures && depth === 2) {
          inElement = true
          assembler.consume(token)
          return true
        }
        if (depth === 1 && key === 'features' && token.name === 'startArray') inFeatures = sawFeatures = true
        depth++
        key = undefined
        return true
      case 'endObject': case 'endArray':
        depth--
        if (depth === 1) inFeatures = false
        return true
      case 'keyValue':
        if (depth === 1) key = token.value
        return true
      default: // a value of its own: a string, number, true, false or null
        if (inFeatures && depth === 2) parsed.push(featureRecord(tokenValue(token), ++n))
        else if (depth === 1 && key === 'type') typeValue = (token as { value?: unknown }).value
        if (depth === 1) key = undefined
        return true
    }
  }
  /** false: reading stops */
  const feed = (text: string | typeof none): boolean => {
    let tokens: unknown
    try {
      tokens = tokenize(text as string) // none: the end of the file
    } catch {
      const error = text === none ? INCOMPLETE_COLLECTION : 'not valid JSON'
      if (!started) notCollection()
      else parsed.push({ label: `feature ${inElement ? n + 1 : n}`, error })
      return false
    }
    if (isMany(tokens)) {
      for (const token of getManyValues(tokens) as Token[]) if (!onToken(token)) return false
    }
    return true
  }

  for await (const chunk of chunks(path, onBytes)) {
    const more = feed(chunk)
    if (parsed.length > 0) yield parsed
    parsed = []
    if (!more) return
  }
  if (!feed(none)) {
    yield parsed
  } else if (!sawFeatures || depth !== 0) {
    yield [...parsed, { label: `feature ${inElement ? n + 1 : n}`, error: INCOMPLETE_COLLECTION }]
  } else if (typeValue !== 'FeatureCollection') {
    yield [...parsed, { label: 'feature 0', error: 'the top-level "type" must be "FeatureCollection"' }]
  } else if (parsed.length > 0) {
    yield parsed
  }
}

const tokenValue = (token: Token): unknown =>
  token.name === 'numberValue' ? Number(token.value) : (token as { value?: unknown }).value

function featureRecord (value: unknown, n: number): RawRecord {
  const label = `feature ${n}`
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return { label, error: 'not a JSON object' }
  const feature = value as {
    type?: unknown, geometry?: { type?: unknown, coordinates?: unknown }, properties?: unknown
  }
  if (feature.type !== 'Feature') return { label, error: 'type must be "Feature"' }
  const g = feature.geometry
  if (!g || g.type !== 'Point' || !Array.isArray(g.coordinates) || g.coordinates.length < 2) {
    return { label, error: 'geometry must be a Point with [longitude, latitude]' }
  }
  const p = feature.properties
  if (p === null || typeof p !== 'object' || Array.isArray(p)) return { label, error: 'properties must be an object' }
  const [longitude, latitude] = g.coordinates as unknown[]
  return { label, fields: { ...(p as Record<string, unknown>), longitude, latitude } }
}

const readers = { csv: readCsvBatches, ndjson: readNdjsonBatches, geojson: readGeojsonBatches }

/** Records in file order, a chunk of the file's worth at a time; bytes not UTF-8 end the file with an error. */
export async function * readRecordBatches (
  format: ImportFormat,
  path: string,
  onBytes?: OnBytes
): AsyncGenerator<RawRecord[]> {
  try {
    yield * readers[format](path, onBytes)
  } catch (err) {
    if (!(err instanceof NotUtf8Error)) throw err
    // GeoJSON's labels count features: a file-level problem is feature 0 there
    const label = format === 'geojson' ? 'feature 0' : `line ${err.line}`
    const error = `not UTF-8 text at byte ${err.offset + 1} (line ${err.line}): the file must be saved as UTF-8`
    yield [{ label, error }]
  }
}
