// Streaming readers of the import formats (docs/data-files.md): CSV through csv-parse, NDJSON a line and GeoJSON
// a feature at a time. Records are labelled as an operator finds them (`line N`, `feature N`) and bounded in size
// and nesting, so a file of any content reads in bounded memory.
import { isUtf8 } from 'node:buffer'
import { createReadStream } from 'node:fs'
import { Parser as CsvParser, type CsvError, type Options as CsvOptions } from 'csv-parse'
import { jsonParser, type Token } from 'stream-json/core/parser.js'
import { getManyValues, isMany, none } from 'stream-chain/defs.js'
import { CSV_HEADER, type ImportFormat } from './export.ts'

/** Told the bytes read so far. */
type OnBytes = (bytes: number) => void

/** The most bytes one record may take: a hostile file's one record would otherwise be held whole, and built. */
const MAX_RECORD_BYTES = 64 * 1024
/** The most levels of arrays and objects one record may nest (a GeoJSON feature needs three). */
const MAX_RECORD_DEPTH = 32

const tooLong = (record: string) => `the ${record} is longer than ${MAX_RECORD_BYTES / 1024} KiB ` +
  `(${MAX_RECORD_BYTES.toLocaleString('en')} bytes), the most one record may take`
const TOO_DEEP = `arrays and objects nested more than ${MAX_RECORD_DEPTH} levels deep`

/** Over MAX_RECORD_BYTES as UTF-8: counted only for text that may be (a UTF-16 unit is 1 to 3 bytes). */
const overBound = (text: string) =>
  text.length * 3 > MAX_RECORD_BYTES && Buffer.byteLength(text) > MAX_RECORD_BYTES

/** Whether the array or object `value` nests arrays and objects more than `levels` deep (itself the first). */
function deeperThan (value: object, levels: number): boolean {
  if (levels === 0) return true
  for (const item of Array.isArray(value) ? value : Object.values(value)) {
    if (item !== null && typeof item === 'object' && deeperThan(item, levels - 1)) return true
  }
  return false
}

const NOT_JSON = Symbol('not JSON')
const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return NOT_JSON
  }
}

export interface RawRecord {
  label: string
  /** The record's fields, or the reason it could not be read at all. */
  fields?: Record<string, unknown>
  error?: string
}

/** Size of reads: larger ones raise the peak memory at no gain in speed. Tests make it tiny to split every token. */
export const readOptions = { chunkBytes: 1 << 16 }

/** Bytes that are not UTF-8: the import is refused at the first (a decoder would make them U+FFFD). */
class NotUtf8Error extends Error {
  constructor (readonly offset: number) {
    super(`not UTF-8 at byte ${offset + 1}`)
  }
}

/** Bytes in the UTF-8 sequence a lead byte starts; 0 for a byte no sequence starts with. */
const sequenceLength = (byte: number) =>
  byte < 0x80 ? 1 : byte < 0xc2 ? 0 : byte < 0xe0 ? 2 : byte < 0xf0 ? 3 : byte < 0xf5 ? 4 : 0

const lineBreaks = (bytes: Uint8Array) => {
  let n = 0
  for (let i = bytes.indexOf(10); i >= 0; i = bytes.indexOf(10, i + 1)) n++
  return n
}

/** Where `bytes` (known not to be UTF-8) first is not: the start of the first bad sequence. */
function firstNotUtf8 (bytes: Uint8Array): number {
  for (let i = 0; i < bytes.length;) {
    const n = sequenceLength(bytes[i])
    if (n === 0 || !isUtf8(bytes.subarray(i, i + n))) return i
    i += n
  }
  return bytes.length
}

/** The file's bytes, checked to be UTF-8: a fatal TextDecoder does not say where, and decodes CSV for nothing. */
async function * utf8Buffers (path: string, onBytes?: OnBytes): AsyncGenerator<Buffer> {
  const stream = createReadStream(path, { highWaterMark: readOptions.chunkBytes })
  let bytes = 0
  let held: Buffer | undefined // the start of a sequence the last read cut, checked with the next read
  let heldAt = 0 // its file offset
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
      if (!isUtf8(whole)) throw new NotUtf8Error(heldAt + firstNotUtf8(whole))
      heldAt += cut
      held = cut < data.length ? Buffer.from(data.subarray(cut)) : undefined
      onBytes?.(bytes)
      if (whole.length > 0) yield whole
    }
    if (held) throw new NotUtf8Error(heldAt) // the file ends inside a sequence
  } finally {
    stream.destroy()
  }
}

/** The line (from 1) of a file's byte at `offset`: counted only for a file refused there. */
async function lineAt (path: string, offset: number): Promise<number> {
  let line = 1
  if (offset === 0) return line
  for await (const bytes of createReadStream(path, { end: offset - 1 }) as AsyncIterable<Buffer>) {
    line += lineBreaks(bytes)
  }
  return line
}

/** Text chunks of a file (UTF-8, checked). */
async function * chunks (path: string, onBytes?: OnBytes): AsyncGenerator<string> {
  const decoder = new TextDecoder() // drops a byte-order mark at the start
  for await (const buffer of utf8Buffers(path, onBytes)) yield decoder.decode(buffer, { stream: true })
}

/** A file cut inside its last field still reads as a valid record (`~heli` for `~helipad`): refused. */
const CSV_CUT_SHORT = 'the file ends inside this record (no line break after the last record): cut short? ' +
  'Every record, the last one too, must end with a line break'

/** Line numbers of offsets asked in file order: csv-parse's own count takes a quoted CRLF as two lines. */
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
    for (let chunk = this.chunks[0]; chunk; chunk = this.chunks[0]) {
      const end = Math.min(offset, this.chunkStart + chunk.length)
      this.breaks += lineBreaks(chunk.subarray(this.at - this.chunkStart, end - this.chunkStart))
      this.at = end
      if (offset < this.chunkStart + chunk.length) {
        return { line: this.breaks + 1, isBreak: chunk[offset - this.chunkStart] === 10 }
      }
      this.chunkStart += chunk.length
      this.chunks.shift()
    }
    return { line: this.breaks + 1, isBreak: false } // the end of the file
  }
}

/** csv-parse handing each record on with the offset where it ends (its per-record info objects cost more). */
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
 * CSV (RFC 4180), each record labelled with the line it starts on; one with malformed quoting is reported and
 * reading goes on. One over MAX_RECORD_BYTES ends the reading: csv-parse would hold it whole, and cannot resume.
 */
async function * readCsvBatches (path: string, onBytes?: OnBytes): AsyncGenerator<RawRecord[]> {
  let column: number[] | undefined // where each of CSV_HEADER's names is in a record
  let batch: RawRecord[] = []
  let done = false // the header is wrong, or a record too long: nothing more is read
  let lastSkipped: string | undefined
  let recordStart = 0 // file offset of the record being read
  let written = 0 // bytes given to the parser
  const lines = new LineCounter()
  const fail = (label: string, error: string) => {
    batch.push({ label, error })
    done = true
  }
  const headerError = () => fail('line 1', `the header must be ${CSV_HEADER.join(',')}`)
  const onRecord = (fields: string[], end: number) => {
    if (done) return
    const last = lines.lineOf(end - 1) // a record ends on its line break, or where the file ends
    let line = last.line
    for (const field of fields) {
      for (let i = field.indexOf('\n'); i >= 0; i = field.indexOf('\n', i + 1)) line--
    }
    const label = `line ${line}`
    const size = end - recordStart
    recordStart = end
    if (size > MAX_RECORD_BYTES) {
      fail(label, tooLong('record')) // as for one still being read: the same outcome whatever the reads
    } else if (!column) {
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
      const c = column // CSV_HEADER's names written out: one shape for every record, and no keyed stores
      const record = {
        id: fields[c[0]], category: fields[c[1]], name: fields[c[2]], region: fields[c[3]],
        country: fields[c[4]], latitude: fields[c[5]], longitude: fields[c[6]], tags: fields[c[7]]
      }
      batch.push({ label, fields: record })
    }
  }
  const onSkip = (err: CsvError | undefined) => {
    if (done || !err) return
    if (!column) return headerError()
    // the offset of the record's start, or of its last field read before the error
    const label = `line ${lines.lineOf(err.bytes as number).line}`
    // where this record ends is not known: the next one is measured from here (the file is refused anyway)
    recordStart = err.bytes as number
    // after a stray quote csv-parse reads on as if quoted: one error for the record
    if (label === lastSkipped) return
    lastSkipped = label
    batch.push({
      label,
      error: err.code === 'CSV_QUOTE_NOT_CLOSED'
        ? 'unterminated quoted field: the file ends inside it (cut short?)'
        : 'malformed quoting'
    })
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
      written += buffer.length
      if (!done && written - recordStart > MAX_RECORD_BYTES) {
        fail(`line ${lines.lineOf(recordStart).line}`, tooLong('record'))
      }
      if (batch.length > 0) yield batch
      batch = []
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

const NDJSON_CUT_SHORT = 'not valid JSON, and the file ends inside it (no line break after the last line): cut short?'

/** A line of NDJSON as a record (undefined: a blank line); `text` undefined: the line is too long. */
function ndjsonRecord (label: string, text: string | undefined, unterminated: boolean): RawRecord | undefined {
  if (text?.endsWith('\r')) text = text.slice(0, -1)
  if (text === undefined || overBound(text)) return { label, error: tooLong('line') }
  if (text.trim() === '') return undefined
  // a last line without its line break is taken when it is a whole object: a cut one never parses
  const value = parseJson(text)
  if (value === NOT_JSON) return { label, error: unterminated ? NDJSON_CUT_SHORT : 'not valid JSON' }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return { label, error: 'not a JSON object' }
  if (deeperThan(value, MAX_RECORD_DEPTH)) return { label, error: TOO_DEEP }
  return { label, fields: value as Record<string, unknown> }
}

/** NDJSON, a line at a time: of a line over MAX_RECORD_BYTES no more than that is held. */
async function * readNdjsonBatches (path: string, onBytes?: OnBytes): AsyncGenerator<RawRecord[]> {
  let n = 0
  let carry = '' // the start of a line no break has ended yet
  let long = false // that line is over the bound: its text is dropped
  for await (const chunk of chunks(path, onBytes)) {
    const lines = chunk.split('\n')
    const rest = lines.pop()!
    const batch: RawRecord[] = []
    for (const line of lines) {
      const record = ndjsonRecord(`line ${++n}`, long ? undefined : carry + line, false)
      if (record) batch.push(record)
      carry = ''
      long = false
    }
    if (!long) carry += rest
    if (carry.length > MAX_RECORD_BYTES + 1) { // more than the bound and a CR
      carry = ''
      long = true
    }
    if (batch.length > 0) yield batch
  }
  const last = ndjsonRecord(`line ${++n}`, long ? undefined : carry, true) // none when the file ends with a break
  if (last) yield [last]
}

const INCOMPLETE_COLLECTION =
  'the file is not a complete GeoJSON FeatureCollection (no "features" array, or cut short)'
const NOT_COLLECTION = 'the file is not a GeoJSON FeatureCollection (no top-level object)'

const [TAB, LF, CR, SPACE, QUOTE, COMMA, BACKSLASH] = [9, 10, 13, 32, 34, 44, 92]
const [OPEN_BRACKET, CLOSE_BRACKET, OPEN_BRACE, CLOSE_BRACE] = [91, 93, 123, 125]
const SEPARATOR = /^[ \t\n\r]*,[ \t\n\r]*$/
const isSpace = (c: number) => c === SPACE || c === LF || c === CR || c === TAB

/** Where JSON text read a character at a time is: in a string or not, and how deep in arrays and objects. */
class JsonNesting {
  depth = 0
  deepest = 0
  private inString = false
  private escaped = false

  /** Takes the next character; true when it opened or closed an array or object, or closed a string. */
  step (c: number): boolean {
    if (this.inString) {
      if (this.escaped) this.escaped = false
      else if (c === BACKSLASH) this.escaped = true
      else if (c === QUOTE) {
        this.inString = false
        return true
      }
      return false
    }
    if (c === OPEN_BRACE || c === OPEN_BRACKET) this.deepest = Math.max(this.deepest, ++this.depth)
    else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) this.depth--
    else {
      if (c === QUOTE) this.inString = true
      return false
    }
    return true
  }
}

/**
 * GeoJSON FeatureCollection, streamed. Each element of the top-level "features" array is found by
 * its brackets and strings and parsed alone (JSON.parse): a syntax error is reported at the feature
 * it is in (a tokenizer fed a whole read loses the features of that read before the error), and a
 * feature over MAX_RECORD_BYTES or MAX_RECORD_DEPTH is refused without being held or built. The
 * rest of the text goes through stream-json's tokenizer, with `null` in place of each feature (none
 * for one after a lone comma): it tells which array is "features" and whether the text is JSON.
 */
async function * readGeojsonBatches (path: string, onBytes?: OnBytes): AsyncGenerator<RawRecord[]> {
  const tokenize = jsonParser({ streamValues: false }) // whole keys, strings and numbers: one token each
  let depth = 0 // the tokens': 1 in the top-level object, 2 in one of its arrays or objects
  let key: string | undefined // the top-level key whose value comes next
  let typeValue: unknown
  let sawFeatures = false
  let inFeatures = false // the tokenizer is in the "features" array (given its `[`, not its `]`)
  const nesting = new JsonNesting() // the same depth, in the text read so far, strings skipped
  let started = false // a character other than whitespace was read
  let n = 0 // features read, in every "features" array of the file
  let feature: string[] | undefined // the text of the feature being read, while within the bound
  let size = 0 // its characters
  let literal = false // it is a number, true, false or null: it ends where a separator begins
  let afterFeature = false // a feature ended, and the tokenizer was given nothing since
  let out: RawRecord[] = []

  const onToken = (token: Token) => {
    switch (token.name) {
      case 'startObject': case 'startArray':
        if (depth === 1 && key === 'features' && token.name === 'startArray') inFeatures = sawFeatures = true
        depth++
        key = undefined
        return
      case 'endObject': case 'endArray':
        depth--
        if (depth === 1) inFeatures = false
        return
      case 'keyValue':
        if (depth === 1) key = token.value
        return
      default: // a value of its own: a string, number, true, false or null
        if (depth === 1 && key === 'type') typeValue = (token as { value?: unknown }).value
        if (depth === 1) key = undefined
    }
  }
  /** Gives the tokenizer `text` (none: the end of the file); false, with the problem reported, on a syntax error. */
  const feed = (text: string | typeof none): boolean => {
    afterFeature = false
    let tokens: unknown
    try {
      tokens = tokenize(text as string)
    } catch {
      if (text === none) out.push({ label: `feature ${n}`, error: INCOMPLETE_COLLECTION })
      else if (inFeatures) out.push({ label: `feature ${n + 1}`, error: 'not valid JSON' }) // a comma amiss
      else out.push({ label: 'feature 0', error: `not valid JSON${sawFeatures ? ' after the "features" array' : ''}` })
      return false
    }
    if (isMany(tokens)) for (const token of getManyValues(tokens) as Token[]) onToken(token)
    return true
  }
  /** The feature read, pushed as a record; false after a syntax error: where the next begins is not known. */
  const endFeature = (): boolean => {
    const label = `feature ${++n}`
    const text = feature!.join('')
    feature = undefined
    if (size > MAX_RECORD_BYTES || overBound(text)) out.push({ label, error: tooLong('feature') })
    else if (nesting.deepest - 2 > MAX_RECORD_DEPTH) out.push({ label, error: TOO_DEEP })
    else {
      const value = parseJson(text)
      if (value === NOT_JSON) {
        out.push({ label, error: 'not valid JSON' })
        return false
      }
      out.push(featureRecord(label, value))
    }
    return true
  }
  /** Where the feature ends in `text` (the index after it), or -1 when it goes on in the next read. */
  const featureEnd = (text: string, from: number): number => {
    for (let i = from; i < text.length; i++) {
      const c = text.charCodeAt(i)
      if (literal) {
        if (isSpace(c) || c === COMMA || c === CLOSE_BRACKET) return i
      } else if (nesting.step(c) && nesting.depth === 2) return i + 1 // its array or object closed, or its string
    }
    return -1
  }
  /** Reads a chunk of the file; false: reading stops. */
  const read = (text: string): boolean => {
    let from = 0 // the text before this was given to the tokenizer, or is a feature's
    for (let i = 0; i < text.length;) {
      if (feature) {
        const end = featureEnd(text, i)
        const piece = text.slice(i, end < 0 ? text.length : end)
        if ((size += piece.length) <= MAX_RECORD_BYTES) feature.push(piece)
        else feature = []
        if (end < 0) return true
        if (!endFeature()) return false
        from = i = end
        afterFeature = true
        continue
      }
      const c = text.charCodeAt(i)
      if (!started && !isSpace(c)) {
        started = true
        if (c !== OPEN_BRACE) {
          out.push({ label: 'feature 0', error: NOT_COLLECTION })
          return false
        }
      }
      if (inFeatures && nesting.depth === 2 && !isSpace(c) && c !== COMMA && c !== CLOSE_BRACKET) {
        // a feature begins at `i`: the tokenizer is given the text before it and `null ` (the space for it to
        // take the `null` at once), but not a lone comma after a feature, the common case (a call per feature is slow)
        const before = text.slice(from, i)
        if (!(afterFeature && SEPARATOR.test(before)) && !feed(before + 'null ')) return false
        from = i
        feature = []
        size = 0
        nesting.deepest = 2
        literal = c !== OPEN_BRACE && c !== OPEN_BRACKET && c !== QUOTE
        continue
      }
      // an array opened in the top-level object (its key tells whether it is "features"), or the features' `]`
      if (nesting.step(c) && ((c === OPEN_BRACKET && nesting.depth === 2) || (inFeatures && nesting.depth === 1))) {
        if (!feed(text.slice(from, i + 1))) return false
        from = i + 1
      }
      i++
    }
    return from === text.length || feed(text.slice(from))
  }

  for await (const chunk of chunks(path, onBytes)) {
    const more = read(chunk)
    if (out.length > 0) yield out
    out = []
    if (!more) return
  }
  if (feature) {
    yield [{ label: `feature ${n + 1}`, error: INCOMPLETE_COLLECTION }]
  } else if (!started) {
    yield [{ label: 'feature 0', error: NOT_COLLECTION }]
  } else if (!feed(none)) {
    yield out
  } else if (!sawFeatures || depth !== 0) {
    yield [{ label: `feature ${n}`, error: INCOMPLETE_COLLECTION }]
  } else if (typeValue !== 'FeatureCollection') {
    yield [{ label: 'feature 0', error: 'the top-level "type" must be "FeatureCollection"' }]
  }
}

function featureRecord (label: string, value: unknown): RawRecord {
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
    const line = await lineAt(path, err.offset)
    // GeoJSON's labels count features: a file-level problem is feature 0 there
    const label = format === 'geojson' ? 'feature 0' : `line ${line}`
    const error = `not UTF-8 text at byte ${err.offset + 1} (line ${line}): the file must be saved as UTF-8`
    yield [{ label, error }]
  }
}
