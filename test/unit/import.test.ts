// Import readers and validation: the three formats, line/feature numbers, quoting, chunk
// boundaries anywhere, all or nothing, and the error report.
import { spawn, spawnSync } from 'node:child_process'
import { readFileSync, readdirSync, utimesSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { datasetPath, writeDataset } from '../../src/sites/dataset-file.ts'
import { loadDataset } from '../../src/sites/dataset.ts'
import { writeSitesFile } from '../../src/sites/export.ts'
import { generateSites } from '../../src/sites/generator.ts'
import { readOptions, readRecordBatches, type RawRecord } from '../../src/sites/import-formats.ts'
import type { ImportFormat } from '../../src/sites/export.ts'
import { importSites } from '../../src/sites/import.ts'
import { site, tmpDataDir } from '../helper.ts'

const dir = tmpDataDir(t)
const HEADER = 'id,category,name,region,country,latitude,longitude,tags'
const INCOMPLETE = 'the file is not a complete GeoJSON FeatureCollection (no "features" array, or cut short)'
const CSV_CUT_SHORT = 'the file ends inside this record (no line break after the last record): cut short? ' +
  'Every record, the last one too, must end with a line break'
const CAFE = 'Caf\u00e9 \u20ac \u{1F681}'

/** A CSV record's fields, in the header's order. */
const csvFields = (...[id, category, name, region, country, latitude, longitude, tags]: string[]) =>
  ({ id, category, name, region, country, latitude, longitude, tags })

async function collect (format: ImportFormat, text: string, name = `f.${format}`): Promise<RawRecord[]> {
  const path = join(dir, name)
  writeFileSync(path, text)
  const out: RawRecord[] = []
  for await (const batch of readRecordBatches(format, path)) out.push(...batch)
  return out
}

t.test('CSV records: quotes, embedded commas, quotes and line breaks, CRLF, BOM, blank lines', async (t) => {
  const text = '\uFEFF' + HEADER + '\r\n' +
    'a1,4,"Inn, ""The Crown""",EUR,GB,51.5,-0.1,~fuel|~ppr\r\n' +
    '\r\n' +
    'a2,7,"Two\nline name",EUR,GB,51.6,-0.2,\n' +
    'a3,7,N,EUR,GB,51.7,-0.3\n' +
    'a4,7,"open,EUR,GB,1,1,\n'
  const records = await collect('csv', text)
  t.same(records, [
    { label: 'line 2', fields: csvFields('a1', '4', 'Inn, "The Crown"', 'EUR', 'GB', '51.5', '-0.1', '~fuel|~ppr') },
    { label: 'line 4', fields: csvFields('a2', '7', 'Two\nline name', 'EUR', 'GB', '51.6', '-0.2', '') },
    { label: 'line 6', error: 'expected 8 fields, found 7' },
    { label: 'line 7', error: 'unterminated quoted field: the file ends inside it (cut short?)' }
  ])
  const original = readOptions.chunkBytes
  t.teardown(() => { readOptions.chunkBytes = original })
  for (const size of [1, 2, 3, 7, 64]) { // lines and records split across reads anywhere
    readOptions.chunkBytes = size
    t.same(await collect('csv', text), records, `chunks of ${size} bytes`)
    t.same(await collect('ndjson', '{"id":"a"}\r\n\n[1]\n{"id":"b"}'), [
      { label: 'line 1', fields: { id: 'a' } },
      { label: 'line 3', error: 'not a JSON object' },
      { label: 'line 4', fields: { id: 'b' } }
    ], `NDJSON in chunks of ${size} bytes`)
  }
  readOptions.chunkBytes = original
  t.same(await collect('csv', `${HEADER}\na,4,"b,c","d""e",EUR,GB,1,\n`),
    [{ label: 'line 2', fields: csvFields('a', '4', 'b,c', 'd"e', 'EUR', 'GB', '1', '') }])
  // a quote inside an unquoted field, or text after a closing quote: that record is refused
  t.same(await collect('csv', `${HEADER}\nm1,4,a"b,EUR,GB,1,1,\nok,4,N,EUR,GB,1,1,\nm2,"4"x,N,EUR,GB,1,1,\n`), [
    { label: 'line 2', error: 'malformed quoting' },
    { label: 'line 3', fields: csvFields('ok', '4', 'N', 'EUR', 'GB', '1', '1', '') },
    { label: 'line 4', error: 'malformed quoting' }
  ])
  t.same(await collect('csv', 'id,name\n1,2\n'), [{ label: 'line 1', error: `the header must be ${HEADER}` }])
  t.same(await collect('csv', ''), [{ label: 'line 1', error: `the header must be ${HEADER}` }])
  const reordered = await collect('csv',
    'tags,id,category,name,region,country,latitude,longitude\n~a,x,4,N,EUR,GB,1,2\n')
  t.same(reordered[0].fields,
    { tags: '~a', id: 'x', category: '4', name: 'N', region: 'EUR', country: 'GB', latitude: '1', longitude: '2' })
})

t.test('CSV line numbers are the file\'s, CRLF line breaks inside quoted fields too', async (t) => {
  const text = `${HEADER}\r\nq1,4,"Two\r\nlines",EUR,GB,1,1,\r\nq2,4,"Three\r\nline\r\nname",EUR,GB,1,1,\r\n` +
    'short,4,N\r\nq3,4,x"y,EUR,GB,1,1,\r\nq4,4,N,EUR,GB,1,1,\r\n'
  const original = readOptions.chunkBytes
  t.teardown(() => { readOptions.chunkBytes = original })
  for (const size of [1, 5, 64]) {
    readOptions.chunkBytes = size
    t.same((await collect('csv', text)).map((r) => [r.label, r.error ?? r.fields!.id]), [
      ['line 2', 'q1'], ['line 4', 'q2'], ['line 7', 'expected 8 fields, found 3'], ['line 8', 'malformed quoting'],
      ['line 9', 'q4']
    ], `chunks of ${size} bytes`)
  }
})

t.test('bytes that are not UTF-8 are refused at the first, with its line and byte, in every format', async (t) => {
  const bytes = (...parts: (string | number[] | Buffer)[]) =>
    Buffer.concat(parts.map((p) => Buffer.isBuffer(p) ? p : typeof p === 'string' ? Buffer.from(p) : Buffer.from(p)))
  const csvLine = (id: string, name: string | number[]) => bytes(`${id},4,`, name, ',EUR,GB,1,1,\n')
  const ndLine = (id: string, name: string | number[]) => bytes(`{"id":"${id}","name":"`, name, '"}\n')
  const files: [ImportFormat, Buffer][] = [
    ['csv', bytes(HEADER + '\n', csvLine('ok', CAFE), csvLine('bad', [0x43, 0x61, 0x66, 0xe9]))],
    ['ndjson', bytes(ndLine('ok', CAFE), ndLine('bad', [0x43, 0x61, 0x66, 0xe9]))],
    ['geojson', bytes('{"type":"FeatureCollection","features":[\n' +
      `{"type":"Feature","geometry":{"type":"Point","coordinates":[1,2]},"properties":{"name":"${CAFE}"}},\n` +
      '{"type":"Feature","properties":{"name":"Caf', [0xe9], '"}}]}\n')]
  ]
  const original = readOptions.chunkBytes
  t.teardown(() => { readOptions.chunkBytes = original })
  for (const [format, file] of files) {
    const bad = file.indexOf(0xe9) // the only byte 0xE9 of the file: é, € and 🚁 have none
    const line = file.subarray(0, bad).toString('latin1').split('\n').length
    const refusal = {
      label: format === 'geojson' ? 'feature 0' : `line ${line}`,
      error: `not UTF-8 text at byte ${bad + 1} (line ${line}): the file must be saved as UTF-8`
    }
    const path = join(dir, `not-utf8.${format}`)
    writeFileSync(path, file)
    for (const size of [1, 2, 3, 5, 64, 65536]) { // sequences split across reads anywhere
      readOptions.chunkBytes = size
      const records: RawRecord[] = []
      for await (const batch of readRecordBatches(format, path)) records.push(...batch)
      t.same(records.filter((r) => r.error), [refusal], `${format} in chunks of ${size} bytes`)
      const names = records.filter((r) => r.fields).map((r) => r.fields!.name)
      t.ok(names.every((name) => name === CAFE), `${format}: what was read before is read right`)
    }
  }
  readOptions.chunkBytes = original
  const cases: [string, number[], number][] = [
    ['a sequence the file ends inside', [0xe2, 0x82], 0],
    ['an overlong encoding', [0xc0, 0x80], 0],
    ['a surrogate', [0xed, 0xa0, 0x80], 0],
    ['a continuation byte alone', [0x41, 0x80], 1]
  ]
  for (const [what, tail, at] of cases) {
    for (const size of [1, 2, 64]) {
      readOptions.chunkBytes = size
      const file = bytes('{"id":"a"}\n', tail)
      writeFileSync(join(dir, 'tail.ndjson'), file)
      const records: RawRecord[] = []
      for await (const batch of readRecordBatches('ndjson', join(dir, 'tail.ndjson'))) records.push(...batch)
      const error = `not UTF-8 text at byte ${12 + at} (line 2): the file must be saved as UTF-8`
      t.same(records.filter((r) => r.error), [{ label: 'line 2', error }], `${what}, chunks of ${size}`)
    }
  }
  readOptions.chunkBytes = original
})

t.test('a U+FEFF in the text is kept wherever the reads begin; only the byte-order mark is dropped ' +
  '(a FEFF starting a read was dropped)', async (t) => {
  const name = 'x\uFEFFy'
  const ndjson = '\uFEFF' + JSON.stringify({ id: 'a', name }) + '\n'
  const geojson = '\uFEFF' + JSON.stringify({
    type: 'FeatureCollection',
    features: [{ type: 'Feature', geometry: { type: 'Point', coordinates: [1, 2] }, properties: { name } }]
  })
  const original = readOptions.chunkBytes
  t.teardown(() => { readOptions.chunkBytes = original })
  for (const size of [1, 2, 3, 7, 64]) {
    readOptions.chunkBytes = size
    t.same(await collect('ndjson', ndjson), [{ label: 'line 1', fields: { id: 'a', name } }],
      `NDJSON, reads of ${size}`)
    t.same(await collect('geojson', geojson), [{ label: 'feature 1', fields: { name, longitude: 1, latitude: 2 } }],
      `GeoJSON, reads of ${size}`)
  }
})

t.test('NDJSON: one object a line, blank lines skipped but counted', async (t) => {
  const records = await collect('ndjson', '{"id":"a"}\n\n[1]\nnot json\n{"id":"b"}')
  t.same(records, [
    { label: 'line 1', fields: { id: 'a' } },
    { label: 'line 3', error: 'not a JSON object' },
    { label: 'line 4', error: 'not valid JSON' },
    { label: 'line 5', fields: { id: 'b' } }
  ])
})

t.test('GeoJSON: features streamed one by one, whatever the chunk boundaries', async (t) => {
  const text = JSON.stringify({
    features: [
      {
        type: 'Feature',
        geometry: { type: 'Point', coordinates: [-0.1, 51.5] },
        properties: { id: 'g1', category: 4, name: 'Brace } and "quote" [', tags: ['~fuel'] }
      },
      { type: 'Feature', geometry: { type: 'LineString', coordinates: [[0, 0], [1, 1]] }, properties: {} },
      42,
      {
        type: 'Feature',
        geometry: { type: 'Point', coordinates: [2, 3] },
        properties: { id: 'g3', features: [], type: 'x' }
      }
    ],
    crs: { type: 'ignored', features: 1 },
    type: 'FeatureCollection'
  }, null, 1)
  const expected = [
    {
      label: 'feature 1',
      fields: { id: 'g1', category: 4, name: 'Brace } and "quote" [', tags: ['~fuel'], longitude: -0.1, latitude: 51.5 }
    },
    { label: 'feature 2', error: 'geometry must be a Point with [longitude, latitude]' },
    { label: 'feature 3', error: 'not a JSON object' },
    { label: 'feature 4', fields: { id: 'g3', features: [], type: 'x', longitude: 2, latitude: 3 } }
  ]
  const original = readOptions.chunkBytes
  t.teardown(() => { readOptions.chunkBytes = original })
  for (const size of [1, 2, 3, 7, 64, 1 << 20]) {
    readOptions.chunkBytes = size
    t.same(await collect('geojson', text), expected, `chunks of ${size} bytes`)
  }
  readOptions.chunkBytes = original
  t.same(await collect('geojson', '[1,2]'),
    [{ label: 'feature 0', error: 'the file is not a GeoJSON FeatureCollection (no top-level object)' }])
  t.same(await collect('geojson', '{"type":"FeatureCollection"}'), [{ label: 'feature 0', error: INCOMPLETE }])
  t.same(await collect('geojson', '{"type":"Feature","features":[]}'),
    [{ label: 'feature 0', error: 'the top-level "type" must be "FeatureCollection"' }])
  const cut = await collect('geojson', text.slice(0, text.length / 2))
  t.same(cut.at(-1), { label: 'feature 2', error: INCOMPLETE }, 'a truncated file')
})

t.test('round trip: export then import in every format gives the same dataset', async (t) => {
  const sites = [...generateSites({ count: 3000, seed: 'round', prefix: 'r' })]
  sites[5] = { ...sites[5], name: 'Quote " and, comma' }
  for (const format of ['csv', 'geojson', 'ndjson'] as const) {
    const file = join(dir, `round.${format}`)
    t.equal(await writeSitesFile(file, format, sites), 3000)
    const target = join(dir, `round-${format}.db`)
    const result = await importSites({ file, format, target, precision: 3 })
    t.same([result.ok, result.siteCount, result.errorCount], [true, 3000, 0], format)
    const ds = loadDataset(target, 'sandbox')
    const byId = new Map(sites.map((s) => [s.id, s]))
    let same = 0
    for (let p = 0; p < ds.count; p++) {
      const s = byId.get(ds.ids.at(p))!
      if (s.name === ds.names.at(p) && s.category === ds.categories[p] && s.latitude === ds.lats[p] &&
        s.longitude === ds.lngs[p] && s.region === ds.regions.at(p) && s.country === ds.countries.at(p)) same++
    }
    t.equal(same, 3000, `${format}: every field back as it was`)
    const tagRows = [...ds.tagSites.values()].reduce((n, list) => n + list.length, 0)
    t.equal(tagRows, sites.reduce((n, s) => n + s.tags.length, 0), `${format}: every tag`)
  }
})

t.test('coordinates are obscured by rounding to --precision', async (t) => {
  const file = join(dir, 'precise.ndjson')
  const precise = {
    id: 'p', category: 4, name: 'P', region: 'EUR', country: 'GB', latitude: 51.123456, longitude: -0.987654, tags: []
  }
  writeFileSync(file, JSON.stringify(precise) + '\n')
  for (const [precision, lat, lng] of [[3, 51.123, -0.988], [1, 51.1, -1], [0, 51, -1]] as const) {
    const target = join(dir, `precise-${precision}.db`)
    t.ok((await importSites({ file, format: 'ndjson', target, precision })).ok)
    const ds = loadDataset(target, 'sandbox')
    t.same([ds.lats[0], ds.lngs[0], ds.meta.precision], [lat, lng, String(precision)], `precision ${precision}`)
  }
})

t.test('every invalid value is reported with its line; nothing is written', async (t) => {
  const target = datasetPath(dir, 'production')
  writeDataset(target, [site('old', 4, 1, 1)], { source: 'old', precision: 3 })
  const before = readFileSync(target)
  const rows = [
    HEADER,
    'ok1,4,Fine,EUR,GB,51.5,-0.1,~fuel',
    'bad id,4,N,EUR,GB,1,1,',
    'c1,2147483648,N,EUR,GB,1,1,', // one above the largest id (0 is in the next test)
    'c2,4.5,N,EUR,GB,1,1,',
    'n1,4,,EUR,GB,1,1,',
    'r1,4,N,eur,GB,1,1,',
    'k1,4,N,EUR,GBR,1,1,',
    'l1,4,N,EUR,GB,90.5,1,',
    'l2,4,N,EUR,GB,1,-181,',
    'l3,4,N,EUR,GB,NaN,1,',
    't1,4,N,EUR,GB,1,1,~ok|Bad',
    'ok1,4,Again,EUR,GB,1,1,'
  ]
  const file = join(dir, 'bad.csv')
  writeFileSync(file, rows.join('\n') + '\n')
  const result = await importSites({ file, format: 'csv', target, precision: 3 })
  t.equal(result.ok, false)
  t.same(result.errors, [
    'line 3: id must be 1 to 64 characters of A-Z a-z 0-9 _ -',
    'line 4: category must be a whole number from 1 to 2147483647',
    'line 5: category must be a whole number from 1 to 2147483647',
    'line 6: name must be 1 to 200 characters without control characters',
    'line 7: region must be three upper-case letters',
    'line 8: country must be two upper-case letters',
    'line 9: latitude must be a number from -90 to 90',
    'line 10: longitude must be a number from -180 to 180',
    'line 11: latitude must be a number from -90 to 90',
    'line 12: tag "Bad" must be ~ then lowercase letters, digits and hyphens (at most 64 characters)',
    'line 13: duplicate id "ok1"'
  ])
  t.equal(result.errorCount, 11)
  t.same(readFileSync(target), before, 'the old file is untouched')
  t.same(readdirSync(dir).filter((f) => f.endsWith('.tmp')), [], 'no temporary file left')
})

t.test('at most 20 errors are listed, then the count', async (t) => {
  const file = join(dir, 'many.ndjson')
  writeFileSync(file, Array.from({ length: 57 }, (_, i) => JSON.stringify({ id: `x${i}`, category: 4 })).join('\n'))
  const result = await importSites({ file, format: 'ndjson', target: join(dir, 'many.db'), precision: 3 })
  t.equal(result.errors.length, 20)
  t.equal(result.errorCount, 57)
  t.match(result.errors[19], /^line 20: name must be/)
})

t.test('a duplicate id found when its batch is written is still listed in line order', async (t) => {
  // line 5 repeats line 2's id; lines 6 to 25 are invalid. The duplicate is found only when its
  // batch of sites is written, after those lines were checked, and is still listed first.
  const rows = [HEADER]
  for (let i = 0; i < 100; i++) rows.push(`d${i},4,N,EUR,GB,1,1,~a`)
  rows[4] = 'd0,4,Again,EUR,GB,1,1,'
  for (let line = 6; line <= 25; line++) rows[line - 1] = `e${line},0,N,EUR,GB,1,1,`
  const file = join(dir, 'late.csv')
  writeFileSync(file, rows.join('\n') + '\n')
  const result = await importSites({ file, format: 'csv', target: join(dir, 'late.db'), precision: 3 })
  t.equal(result.ok, false)
  t.equal(result.errorCount, 21)
  t.same(result.errors, [
    'line 5: duplicate id "d0"',
    ...Array.from({ length: 19 }, (_, i) => `line ${i + 6}: category must be a whole number from 1 to 2147483647`)
  ])
})

t.test('a file with no sites is refused', async (t) => {
  const file = join(dir, 'empty.csv')
  writeFileSync(file, HEADER + '\n')
  const result = await importSites({ file, format: 'csv', target: join(dir, 'empty.db'), precision: 3 })
  t.same([result.ok, result.errors], [false, ['file: holds no sites']])
})

t.test('an import removes the temporary files of dead writers of its dataset, and no one else\'s', async (t) => {
  const data = tmpDataDir(t)
  const target = datasetPath(data, 'production')
  writeDataset(target, [site('old', 4, 1, 1)], { source: 'old', precision: 3 })
  const dead = spawnSync('true').pid! // exited: its pid is free
  const live = spawn('sleep', ['60'])
  t.teardown(() => live.kill('SIGKILL'))
  const now = Date.now()
  const stale = [
    `.production.db.${dead}.${now - 5000}.tmp`,
    `.production.db.${dead}.${now - 5000}.tmp-journal`,
    `.production.db.${dead}.${now - 9000}.tmp-wal`,
    `.production.db.${dead}.${now - 9000}.tmp-shm`,
    // this pid, from before this process started
    `.production.db.${process.pid}.${Math.floor(performance.timeOrigin) - 1000}.tmp`,
    `.production.db.${live.pid}.${now - 3 * 3_600_000}.tmp` // a live pid, but not written for hours: the pid was reused
  ]
  const kept = [
    `.production.db.${live.pid}.${now}.tmp`, // a concurrent import
    `.production.db.${live.pid}.${now}.tmp-journal`,
    `.production.db.${process.pid}.${now}.tmp`, // another writer of this process
    `.sandbox.db.${dead}.${now}.tmp`, // the other dataset's: its own writer removes it
    `.production.db.${dead}.tmp`,
    `.production.db.${dead}.${now}.tmp.bak`,
    'production.db-journal'
  ]
  for (const name of [...stale, ...kept]) writeFileSync(join(data, name), 'x')
  const hoursAgo = new Date(now - 2 * 3_600_000)
  utimesSync(join(data, stale[5]), hoursAgo, hoursAgo)
  const file = join(data, 'sites.ndjson')
  writeFileSync(file,
    JSON.stringify({ id: 'n', category: 4, name: 'N', region: 'EUR', country: 'GB', latitude: 1, longitude: 1 }) + '\n')
  const result = await importSites({ file, format: 'ndjson', target, precision: 3 })
  t.same([result.ok, result.siteCount], [true, 1])
  t.same(readdirSync(data).sort(), [...kept, 'production.db', 'sites.ndjson'].sort(),
    'the stale files are gone, no journal is left beside the new file, the rest stays')
})

t.test('a file cut short inside its last record is refused in every format; the old dataset stays', async (t) => {
  const data = tmpDataDir(t)
  const target = datasetPath(data, 'production')
  const writeOld = () => writeDataset(target, [site('old', 4, 1, 1)], { source: 'old', precision: 3 })
  writeOld()
  let before = readFileSync(target)
  const sites = [...generateSites({ count: 5, seed: 'cut', prefix: 'c' })]
  // a quoted CSV field, a tag to cut
  sites[4] = { ...sites[4], name: 'Quote " and, comma', tags: ['~fuel', '~helipad'] }
  const reasons = {
    csv: [`line 6: ${CSV_CUT_SHORT}`, 'line 6: unterminated quoted field: the file ends inside it (cut short?)'],
    ndjson: ['line 5: not valid JSON, and the file ends inside it (no line break after the last line): cut short?'],
    geojson: [4, 5].map((n) => `feature ${n}: ${INCOMPLETE}`)
  }
  for (const format of ['csv', 'ndjson', 'geojson'] as const) {
    const whole = join(data, `whole.${format}`)
    await writeSitesFile(whole, format, sites)
    const text = readFileSync(whole, 'utf8')
    const lastRecord = format === 'geojson'
      ? text.lastIndexOf('{"type":"Feature"')
      : text.lastIndexOf('\n', text.length - 2) + 1
    const seen = new Set<string>()
    const accepted: number[] = []
    const changed: number[] = []
    for (let end = lastRecord; end < text.length; end++) {
      const file = join(data, `cut.${format}`)
      writeFileSync(file, text.slice(0, end))
      const result = await importSites({ file, format, target, precision: 3 })
      if (result.ok) {
        accepted.push(end)
        writeOld()
        before = readFileSync(target)
        continue
      }
      seen.add(result.errors.join('; '))
      if (!readFileSync(target).equals(before)) changed.push(end)
    }
    const refused = text.length - lastRecord - accepted.length
    t.same([...seen].sort(), reasons[format].sort(), `${format}: ${refused} cuts refused, each with its reason`)
    t.same(changed, [], `${format}: the old file untouched by every refused cut`)
    // what no reader can tell from a whole file: a cut right at a line break (CSV, NDJSON), or a
    // cut of the final line break alone after a whole JSON object (NDJSON, GeoJSON)
    const undetectable = format === 'csv'
      ? [lastRecord]
      : format === 'ndjson' ? [lastRecord, text.length - 1] : [text.length - 1]
    t.same(accepted, undetectable,
      `${format}: only a cut between records, or of the final line break after a whole object, imports`)
  }
  t.same(readdirSync(data).filter((f) => f.includes('.tmp')), [], 'no temporary file left')
})

t.test('a CSV file whose last record has no line break is refused, even when the record reads as valid', async (t) => {
  const file = join(dir, 'heli.csv')
  const options = { file, format: 'csv', target: join(dir, 'heli.db'), precision: 3 } as const
  writeFileSync(file, `${HEADER}\nh1,4,Helipad,EUR,GB,51.5,-0.1,~fuel|~heli`) // cut from ~helipad
  const result = await importSites(options)
  t.same([result.ok, result.errors], [false, [`line 2: ${CSV_CUT_SHORT}`]])
  writeFileSync(file, `${HEADER}\r\nh1,4,Helipad,EUR,GB,51.5,-0.1,~fuel|~helipad\r\n`)
  t.same((await importSites(options)).siteCount, 1, 'with its CRLF, it imports')
})

t.test('a lone surrogate escape in a name is refused at its line or feature, not stored as U+FFFD', async (t) => {
  const target = datasetPath(dir, 'sandbox')
  const fields = (id: string, name: string) =>
    ({ id, category: 4, name, region: 'EUR', country: 'GB', latitude: 51.5, longitude: -0.1, tags: [] })
  const reason = (at: string) =>
    `name holds a lone surrogate (\\u${at}), which is not text: the file must hold the character whole`
  // JSON.stringify writes a lone surrogate as its escape, as a hostile file would
  const ndjson = join(dir, 'surrogates.ndjson')
  writeFileSync(ndjson, [fields('s-1', 'Fine 🚁'), fields('s-2', 'Bad \ud800'), fields('s-3', '\udc00 too')]
    .map((f) => JSON.stringify(f)).join('\n') + '\n')
  t.match(readFileSync(ndjson, 'utf8'), '\\ud800', 'the file holds the escape')
  const fromLines = await importSites({ file: ndjson, format: 'ndjson', target, precision: 3 })
  t.same([fromLines.ok, fromLines.errors], [false, [`line 2: ${reason('d800')}`, `line 3: ${reason('dc00')}`]])
  const geojson = join(dir, 'surrogates.geojson')
  const feature = (f: ReturnType<typeof fields>) =>
    ({ type: 'Feature', geometry: { type: 'Point', coordinates: [f.longitude, f.latitude] }, properties: f })
  writeFileSync(geojson, JSON.stringify({
    type: 'FeatureCollection', features: [fields('g-1', 'Fine'), fields('g-2', 'Also fine'), fields('g-3', 'x\udbff')]
      .map(feature)
  }))
  const fromFeatures = await importSites({ file: geojson, format: 'geojson', target, precision: 3 })
  t.same([fromFeatures.ok, fromFeatures.errors], [false, [`feature 3: ${reason('dbff')}`]])
})

/** A valid record's fields; `name` and `extra` to make it long or deep. */
const record = (id: string, name = 'N', extra: Record<string, unknown> = {}) =>
  ({ id, category: 4, name, region: 'EUR', country: 'GB', latitude: 51.5, longitude: -0.1, tags: ['~a'], ...extra })
const featureOf = (fields: ReturnType<typeof record>) => {
  const { latitude, longitude, ...properties } = fields
  return { type: 'Feature', geometry: { type: 'Point', coordinates: [longitude, latitude] }, properties }
}
/** A FeatureCollection's text, a feature a line, as exporters write it. */
const collection = (features: string[]) => `{"type":"FeatureCollection","features":[\n${features.join(',\n')}\n]}\n`
const nested = (levels: number) => '['.repeat(levels) + ']'.repeat(levels)

t.test('GeoJSON: a syntax error is reported at the feature it is in, whatever the reads ' +
  '(it was feature 0 or a feature of an earlier read)', async (t) => {
  const good = (i: number) => JSON.stringify(featureOf(record(`g${i}`)))
  const five = collection([1, 2, 3, 4, 5].map((i) => i === 3 ? good(i).replace('"Feature"', '"Feature" x') : good(i)))
  const original = readOptions.chunkBytes
  t.teardown(() => { readOptions.chunkBytes = original })
  for (const size of [1, 2, 3, 7, 64, 65536]) {
    readOptions.chunkBytes = size
    t.same((await collect('geojson', five)).map((r) => [r.label, r.error ?? r.fields!.id]),
      [['feature 1', 'g1'], ['feature 2', 'g2'], ['feature 3', 'not valid JSON']], `reads of ${size} bytes`)
  }
  readOptions.chunkBytes = original
  const many = collection(Array.from({ length: 3000 }, (_, i) =>
    i + 1 === 2001 ? good(i + 1).replace('"properties":{', '"properties":{,') : good(i + 1)))
  const records = await collect('geojson', many)
  t.same([records.length, records.at(-1)], [2001, { label: 'feature 2001', error: 'not valid JSON' }],
    'feature 2001 of 3000, the read it is in holding about a hundred')
  t.ok(records.slice(0, 2000).every((r, i) => r.fields?.id === `g${i + 1}`), 'the 2000 before it read')

  const errors = async (text: string) => (await collect('geojson', text)).filter((r) => r.error)
  t.same(await errors(collection([good(1), good(2)]).replace('},\n{', '}\n{')),
    [{ label: 'feature 2', error: 'not valid JSON' }], 'a comma missing before feature 2')
  t.same(await errors(collection([good(1), ''])), [{ label: 'feature 2', error: 'not valid JSON' }],
    'one comma too many')
  t.same(await errors(`{"type":"FeatureCollection" "features":[${good(1)}]}`),
    [{ label: 'feature 0', error: 'not valid JSON' }], 'before the features')
  t.same(await errors(`{"type":"FeatureCollection","features":[${good(1)}],}`),
    [{ label: 'feature 0', error: 'not valid JSON after the "features" array' }])
  t.same(await errors(`{"type":"FeatureCollection","features":[${good(1)}, tru]}`),
    [{ label: 'feature 2', error: 'not valid JSON' }])
  const others = '{"bbox":[1,2,3,4],"crs":{"features":[1]},"type":"FeatureCollection",' +
    `"features":[${good(1)}, "x", null, [${good(2)}], ${good(3)}]}`
  t.same((await collect('geojson', others)).map((r) => [r.label, r.error ?? r.fields!.id]), [
    ['feature 1', 'g1'], ['feature 2', 'not a JSON object'], ['feature 3', 'not a JSON object'],
    ['feature 4', 'not a JSON object'], ['feature 5', 'g3']
  ], 'other arrays are not features; any JSON value is an element')
})

t.test('a record over 64 KiB, or nested over 32 levels, is refused at its line or feature ' +
  '(a 10 MB line was read whole and built)', async (t) => {
  const line = (fields: object) => JSON.stringify(fields)
  // a line of exactly 65,536 bytes, in two-byte characters near the end: 65,537 is one too many
  const sized = (id: string, bytes: number) => {
    const base = line(record(id, ''))
    const name = 'n'.repeat(bytes - Buffer.byteLength(base) - 2) + '\u00e9'
    return line(record(id, name))
  }
  t.equal(Buffer.byteLength(sized('b', 65536)), 65536)
  const deep = { other: JSON.parse(nested(31)) } // with the record itself: 32 levels
  const ndjson = [
    line(record('n1')), sized('n2', 65536), sized('n3', 65537), line(record('n4', 'N', deep)),
    line(record('n5', 'N', { other: [JSON.parse(nested(31))] })), 'x'.repeat(200_000), nested(40_000),
    line(record('n8'))
  ].join('\n') + '\n'
  const TOO_LONG = 'the line is longer than 64 KiB (65,536 bytes), the most one record may take'
  const TOO_DEEP = 'arrays and objects nested more than 32 levels deep'
  const expected = [
    ['line 1', 'n1'], ['line 2', 'n2'], ['line 3', TOO_LONG], ['line 4', 'n4'], ['line 5', TOO_DEEP],
    ['line 6', TOO_LONG], ['line 7', TOO_LONG], ['line 8', 'n8']
  ]
  const original = readOptions.chunkBytes
  t.teardown(() => { readOptions.chunkBytes = original })
  for (const size of [7, 4096, 65536, 1 << 20]) {
    readOptions.chunkBytes = size
    t.same((await collect('ndjson', ndjson)).map((r) => [r.label, r.error ?? r.fields!.id]), expected,
      `NDJSON in reads of ${size} bytes`)
    t.same((await collect('ndjson', ndjson.slice(0, -1) + 'x'.repeat(70_000))).at(-1),
      { label: 'line 8', error: TOO_LONG }, `a last line without its line break, reads of ${size} bytes`)
  }

  const feature = (fields: ReturnType<typeof record>) => JSON.stringify(featureOf(fields))
  const featureSized = (id: string, bytes: number) => {
    const name = 'n'.repeat(bytes - Buffer.byteLength(feature(record(id, ''))) - 2) + '\u00e9'
    return feature(record(id, name))
  }
  // in a feature, properties are the second level: 30 more make 32
  const geojson = collection([
    feature(record('g1')), featureSized('g2', 65536), featureSized('g3', 65537),
    feature(record('g4', 'N', { other: JSON.parse(nested(30)) })),
    feature(record('g5', 'N', { other: [JSON.parse(nested(30))] })), JSON.stringify('x'.repeat(70_000)),
    nested(40_000), feature(record('g8'))
  ])
  const FEATURE_TOO_LONG = 'the feature is longer than 64 KiB (65,536 bytes), the most one record may take'
  for (const size of [7, 4096, 65536, 1 << 20]) {
    readOptions.chunkBytes = size
    t.same((await collect('geojson', geojson)).map((r) => [r.label, r.error ?? r.fields!.id]), [
      ['feature 1', 'g1'], ['feature 2', 'g2'], ['feature 3', FEATURE_TOO_LONG], ['feature 4', 'g4'],
      ['feature 5', TOO_DEEP], ['feature 6', FEATURE_TOO_LONG], ['feature 7', FEATURE_TOO_LONG], ['feature 8', 'g8']
    ], `GeoJSON in reads of ${size} bytes`)
  }

  const csvLine = (id: string, name: string) => `${id},4,"${name}",EUR,GB,1,1,~a`
  const csvBase = Buffer.byteLength(csvLine('c2', '')) + 1 // with its line break
  const csv = [HEADER, csvLine('c1', 'N'), csvLine('c2', 'n'.repeat(65536 - csvBase)),
    csvLine('c3', 'n'.repeat(65537 - csvBase)), csvLine('c4', 'N')].join('\n') + '\n'
  for (const size of [7, 4096, 65536, 1 << 20]) {
    readOptions.chunkBytes = size
    t.same((await collect('csv', csv)).map((r) => [r.label, r.error ?? r.fields!.id]), [
      ['line 2', 'c1'], ['line 3', 'c2'],
      ['line 4', 'the record is longer than 64 KiB (65,536 bytes), the most one record may take']
    ], `CSV in reads of ${size} bytes: reading stops at the record`)
    t.same((await collect('csv', `${HEADER}\nc1,4,N,EUR,GB,1,1,\nx${','.repeat(200_000)}\nc3,4,N,EUR,GB,1,1,\n`))
      .map((r) => [r.label, r.error ?? r.fields!.id]),
    [['line 2', 'c1'], ['line 3', 'the record is longer than 64 KiB (65,536 bytes), the most one record may take']],
    `a line of commas, reads of ${size} bytes`)
  }
})

t.test('records over the bounds refuse the import as any invalid row: 20 listed, the count, ' +
  'the old file untouched', async (t) => {
  const target = datasetPath(tmpDataDir(t), 'production')
  writeDataset(target, [site('old', 4, 1, 1)], { source: 'old', precision: 3 })
  const before = readFileSync(target)
  const file = join(dir, 'long-lines.ndjson')
  writeFileSync(file, Array.from({ length: 25 }, (_, i) => 'x'.repeat(66_000 + i)).join('\n') + '\n')
  const result = await importSites({ file, format: 'ndjson', target, precision: 3 })
  t.same([result.ok, result.errorCount, result.errors.length], [false, 25, 20])
  t.equal(result.errors[19], 'line 20: the line is longer than 64 KiB (65,536 bytes), the most one record may take')
  t.same(readFileSync(target), before, 'the old file is untouched')
})
