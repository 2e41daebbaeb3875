// Streaming readers of the three import formats (docs/data-files.md): CSV through csv-parse,
// NDJSON a line at a time, GeoJSON's features one at a time (the rest of the collection through
// stream-json's tokenizer). Each yields raw records with the label an operator finds them by
// (`line N`, or `feature N` for GeoJSON), in batches of one read's worth, holding only those in
// memory; one record is bounded in size and nesting, so a file of any content reads in bounded
// memory.
import { isUtf8 } from 'node:buffer'
import { createReadStream } from 'node:fs'
import { Parser as CsvParser, type CsvError, type Options as CsvOptions } from 'csv-parse'
import { jsonParser, type Token } from 'stream-json/core/parser.js'
import { getManyValues, isMany, none } from 'stream-chain/defs.js'
import { CSV_HEADER, type ImportFormat } from './file-formats.ts'

/** Told the bytes read so far, after each read. */
type OnBytes = (bytes: number) => void

/**
 * The most one record (a CSV record, an NDJSON line, a GeoJSON feature) may take, in bytes: a
 * hostile file's one record would otherwise be held whole, and built into values many times its
 * size.
 */
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
  if (Array.isArray(value)) {
    for (const item of value) if (item !== null && typeof item === 'object' && deeperThan(item, levels - 1)) return true
    return false
  }
  for (const key in value) {
    const item = (value as Record<string, unknown>)[key]
    if (item !== null && typeof item === 'object' && deeperThan(item, levels - 1)) return true
  }
  return false
}

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

/** A line too long to be a record: its text is not kept. */
const LONG_LINE = Symbol('longer than MAX_RECORD_BYTES')

interface LineBatch {
  lines: (string | typeof LONG_LINE)[]
  /** the batch holds the file's last line, which no line break ends: the file may be cut short */
  unterminated: boolean
}

/** A line's text without its CR, or LONG_LINE. */
const lineOf = (text: string) => {
  const line = text.charCodeAt(text.length - 1) === 13 ? text.slice(0, -1) : text
  return overBound(line) ? LONG_LINE : line
}

/**
 * Physical lines without their line ending, a chunk's worth at a time (a line is numbered by its
 * place: the first line yielded is line 1); a line over MAX_RECORD_BYTES is LONG_LINE, and no more
 * of it than that is held. Rows are handed on in batches because a step of an async generator per
 * row cost more than reading the row.
 */
async function * lineBatches (path: string, onBytes?: OnBytes): AsyncGenerator<LineBatch> {
  // the start of a line no break has ended yet, in pieces: a long line is joined once, and each
  // chunk searched once (joining and searching again per chunk is quadratic in the line's length)
  let carry: string[] = []
  let carried = 0 // its characters
  let long = false // the line carried is over the bound: its pieces are dropped
  for await (const chunk of chunks(path, onBytes)) {
    const lines: LineBatch['lines'] = []
    let start = 0
    let nl = chunk.indexOf('\n')
    if (nl >= 0 && (carried > 0 || long)) { // the line carried ends here
      lines.push(long || carried + nl > MAX_RECORD_BYTES ? LONG_LINE : lineOf(carry.join('') + chunk.slice(0, nl)))
      carry = []
      carried = 0
      long = false
      start = nl + 1
      nl = chunk.indexOf('\n', start)
    }
    for (; nl >= 0; nl = chunk.indexOf('\n', start)) {
      lines.push(lineOf(chunk.slice(start, nl)))
      start = nl + 1
    }
    if (start < chunk.length && !long) { // the rest begins, or goes on with, a line not ended yet
      carried += chunk.length - start
      if (carried <= MAX_RECORD_BYTES) {
        carry.push(chunk.slice(start))
      } else {
        carry = []
        carried = 0
        long = true
      }
    }
    if (lines.length > 0) yield { lines, unterminated: false }
  }
  if (long) yield { lines: [LONG_LINE], unterminated: true }
  else if (carried > 0) yield { lines: [lineOf(carry.join(''))], unterminated: true }
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
 * cannot read (malformed quoting) is reported and reading goes on with the next one. A record
 * longer than MAX_RECORD_BYTES ends the reading, found at the latest one read after the bound
 * (csv-parse would hold it whole, in as many fields as it has commas, and cannot resume inside it).
 */
async function * readCsvBatches (path: string, onBytes?: OnBytes): AsyncGenerator<RawRecord[]> {
  let column: number[] | undefined // where each of CSV_HEADER's names is in a record
  let batch: RawRecord[] = []
  let done = false // the header is wrong: nothing more is read
  let lastSkipped: string | undefined
  let recordStart = 0 // file offset of the record being read
  let written = 0 // bytes given to the parser
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
    const size = end - recordStart
    recordStart = end
    if (size > MAX_RECORD_BYTES) {
      batch.push({ label, error: tooLong('record') })
      done = true // as for one still being read: the same outcome whatever the reads
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
      batch.push({ label, fields: csvRecord(fields, column) })
    }
  }
  const onSkip = (err: CsvError | undefined) => {
    if (done || !err) return
    if (!column) return headerError()
    // the offset of the record's start, or of its last field read before the error
    const label = `line ${lines.lineOf(err.bytes as number).line}`
    // where this record ends is not known: the next one is measured from here (the file is refused anyway)
    recordStart = err.bytes as number
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
      written += buffer.length
      if (!done && written - recordStart > MAX_RECORD_BYTES) {
        batch.push({ label: `line ${lines.lineOf(recordStart).line}`, error: tooLong('record') })
        done = true
      }
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
      const label = `line ${n}`
      if (text === LONG_LINE) {
        batch.push({ label, error: tooLong('line') })
        continue
      }
      if (text.trim() === '') continue
      // a last line without its line break is taken when it is a whole object: a cut one never parses
      const value = parseJson(text)
      if (value === NOT_JSON) batch.push({ label, error: unterminated ? NDJSON_CUT_SHORT : 'not valid JSON' })
      else if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        batch.push({ label, error: 'not a JSON object' })
      } else if (deeperThan(value, MAX_RECORD_DEPTH)) {
        batch.push({ label, error: TOO_DEEP })
      } else batch.push({ label, fields: value as Record<string, unknown> })
    }
    if (batch.length > 0) yield batch
  }
}

const INCOMPLETE_COLLECTION =
  'the file is not a complete GeoJSON FeatureCollection (no "features" array, or cut short)'
const NOT_COLLECTION = 'the file is not a GeoJSON FeatureCollection (no top-level object)'

const [SPACE, TAB, LF, CR, QUOTE, BACKSLASH, COMMA] = [32, 9, 10, 13, 34, 92, 44]
const [OPEN_BRACE, CLOSE_BRACE, OPEN_BRACKET, CLOSE_BRACKET] = [123, 125, 91, 93]
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
 * The elements of a "features" array, read from the text after its `[`. Each element's extent is
 * found by its brackets and strings, then the element alone is parsed (JSON.parse): a syntax error
 * is reported at the feature it is in (a tokenizer fed a whole read loses the features of that
 * read before the error), and a feature over MAX_RECORD_BYTES or MAX_RECORD_DEPTH is refused
 * without being held or built.
 */
class FeatureArray {
  /** features read, in every "features" array of the file */
  n = 0
  /** an element has begun and not ended */
  inElement = false
  /** an element was not valid JSON: reading stops (where the next begins is not known) */
  broken = false
  private expect: 'first' | 'element' | 'separator' = 'first'
  private literal = false // a number, true, false or null: it ends where a separator begins
  private pieces: string[] = [] // its text, in pieces, while within the bound
  private size = 0 // its characters
  private readonly nesting = new JsonNesting()

  open () {
    this.expect = 'first'
  }

  /**
   * Reads `text` from `from`, pushing a record per element into `out`: where the array's `]` is in
   * the text, text.length when the array goes on in the next read, or -1 after a syntax error.
   */
  read (text: string, from: number, out: RawRecord[]): number {
    for (let i = from; i < text.length;) {
      if (this.inElement) {
        const end = this.scan(text, i)
        this.hold(text.slice(i, end < 0 ? text.length : end))
        if (end < 0) return text.length
        out.push(this.element())
        if (this.broken) return -1
        i = end
        continue
      }
      const c = text.charCodeAt(i)
      if (isSpace(c)) {
        i++
      } else if (this.expect === 'separator' && c === COMMA) {
        this.expect = 'element'
        i++
      } else if (c === CLOSE_BRACKET && this.expect !== 'element') {
        return i
      } else if (this.expect === 'separator' || c === CLOSE_BRACKET) {
        // a comma missing between two features, or one too many before the `]`
        out.push({ label: `feature ${this.n + 1}`, error: 'not valid JSON' })
        return -1
      } else {
        this.inElement = true
        this.literal = c !== OPEN_BRACE && c !== OPEN_BRACKET && c !== QUOTE
      }
    }
    return text.length
  }

  /** Where the element ends in `text` (the index after it), or -1 when it goes on in the next read. */
  private scan (text: string, from: number): number {
    if (this.literal) {
      for (let i = from; i < text.length; i++) {
        const c = text.charCodeAt(i)
        if (isSpace(c) || c === COMMA || c === CLOSE_BRACKET) return i
      }
      return -1
    }
    for (let i = from; i < text.length; i++) {
      // the end of its outermost array or object, or of a string element
      if (this.nesting.step(text.charCodeAt(i)) && this.nesting.depth === 0) return i + 1
    }
    return -1
  }

  /** Keeps a piece of the element while the element is within the bound. */
  private hold (piece: string) {
    this.size += piece.length
    if (this.size <= MAX_RECORD_BYTES) this.pieces.push(piece)
    else this.pieces = []
  }

  /** The element read, as a record; the state made ready for the next. */
  private element (): RawRecord {
    const label = `feature ${++this.n}`
    const text = this.pieces.join('')
    const { size, nesting: { deepest } } = this
    this.inElement = false
    this.expect = 'separator'
    this.pieces = []
    this.size = this.nesting.depth = this.nesting.deepest = 0
    if (size > MAX_RECORD_BYTES || overBound(text)) return { label, error: tooLong('feature') }
    if (deepest > MAX_RECORD_DEPTH) return { label, error: TOO_DEEP }
    const value = parseJson(text)
    if (value !== NOT_JSON) return featureRecord(value, this.n)
    this.broken = true
    return { label, error: 'not valid JSON' }
  }
}

/**
 * GeoJSON FeatureCollection, streamed: the elements of the top-level "features" array are read one
 * by one (FeatureArray), the rest of the file by stream-json's tokenizer, which is given the text
 * up to each array opened in the top-level object, to tell whether it is "features".
 */
async function * readGeojsonBatches (path: string, onBytes?: OnBytes): AsyncGenerator<RawRecord[]> {
  const tokenize = jsonParser({ streamValues: false }) // whole keys, strings and numbers: one token each
  const features = new FeatureArray()
  let depth = 0 // the tokens': 1 in the top-level object, 2 in one of its arrays or objects
  let key: string | undefined // the top-level key whose value comes next
  let typeValue: unknown
  let sawFeatures = false
  let inFeatures = false // the tokens are in the "features" array
  let owned = false // FeatureArray reads the text: the tokenizer has had the array's `[`, not its `]`
  const nesting = new JsonNesting() // the same depth, in the text read so far, strings skipped
  let started = false // a character other than whitespace was read
  let parsed: RawRecord[] = []

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
    let tokens: unknown
    try {
      tokens = tokenize(text as string)
    } catch {
      const where = sawFeatures ? ' after the "features" array' : ''
      if (text === none) parsed.push({ label: `feature ${features.n}`, error: INCOMPLETE_COLLECTION })
      else parsed.push({ label: 'feature 0', error: `not valid JSON${where}` })
      return false
    }
    if (isMany(tokens)) for (const token of getManyValues(tokens) as Token[]) onToken(token)
    return true
  }
  /** Reads a chunk of the file; false: reading stops. */
  const read = (text: string): boolean => {
    let from = 0 // the text before this was given to the tokenizer or FeatureArray
    for (let i = 0; i < text.length;) {
      if (owned) {
        const end = features.read(text, i, parsed)
        if (end < 0) return false
        if (end === text.length) return true
        owned = false // the array's `]`, at `end`, goes to the tokenizer
        from = i = end
        continue
      }
      const c = text.charCodeAt(i++)
      if (!started) {
        if (isSpace(c)) continue
        started = true
        if (c !== OPEN_BRACE) {
          parsed.push({ label: 'feature 0', error: NOT_COLLECTION })
          return false
        }
      }
      // an array opened in the top-level object: the tokenizer's keys tell whether it is "features"
      if (nesting.step(c) && c === OPEN_BRACKET && nesting.depth === 2) {
        if (!feed(text.slice(from, i))) return false
        from = i
        if (inFeatures) {
          owned = true
          features.open()
        }
      }
    }
    return from === text.length || feed(text.slice(from))
  }

  for await (const chunk of chunks(path, onBytes)) {
    const more = read(chunk)
    if (parsed.length > 0) yield parsed
    parsed = []
    if (!more) return
  }
  if (owned) {
    const n = features.inElement ? features.n + 1 : features.n
    yield [{ label: `feature ${n}`, error: INCOMPLETE_COLLECTION }]
  } else if (!started) {
    yield [{ label: 'feature 0', error: NOT_COLLECTION }]
  } else if (!feed(none)) {
    yield parsed
  } else if (!sawFeatures || depth !== 0) {
    yield [{ label: `feature ${features.n}`, error: INCOMPLETE_COLLECTION }]
  } else if (typeValue !== 'FeatureCollection') {
    yield [{ label: 'feature 0', error: 'the top-level "type" must be "FeatureCollection"' }]
  }
}

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
