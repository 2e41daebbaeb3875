// A file cut short, imported with the real CLI in each format: exit 1, the line or feature where
// the file ends, and the dataset file as it was.
import { createHash } from 'node:crypto'
import { readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { tmpDataDir } from '../helper.ts'
import { admin } from '../run.ts'

const dir = tmpDataDir(t)
const env = { DATA_DIR: dir, NODE_ENV: 'production' }
const production = join(dir, 'production.db')
const digest = () => createHash('sha256').update(readFileSync(production)).digest('hex')
const rows = Array.from({ length: 5 }, (_, i) => ({
  id: `h${i}`, category: 4, name: `Helipad ${i}`, region: 'EUR', country: 'GB',
  latitude: 51.5, longitude: -0.1 + i / 100, tags: ['~fuel', '~helipad']
}))
const csv = 'id,category,name,region,country,latitude,longitude,tags\n' +
  rows.map((r) => `${r.id},4,${r.name},EUR,GB,${r.latitude},${r.longitude},${r.tags.join('|')}\n`).join('')
const ndjson = rows.map((r) => JSON.stringify(r) + '\n').join('')
const features = rows.map(({ latitude, longitude, ...p }) =>
  ({ type: 'Feature', geometry: { type: 'Point', coordinates: [longitude, latitude] }, properties: p }))
const geojson = JSON.stringify({ type: 'FeatureCollection', features }) + '\n'
const importFile = (name: string, text: string) => {
  writeFileSync(join(dir, name), text)
  return admin(['datasets', 'import', '--dataset', 'production', '--file', join(dir, name)], env)
}
const refused = (reason: string) => `${reason}\nerror: import refused: 1 invalid row; ${production} is unchanged\n`

t.test('the whole file imports', async (t) => {
  const r = importFile('whole.csv', csv)
  t.equal(r.status, 0, r.stderr)
  t.match(r.stdout, /^imported 5 sites into /)
})

t.test('each format cut inside its last record: refused, the old file untouched', async (t) => {
  const before = digest()
  const cases: [string, string, string][] = [
    ['cut.csv', csv.slice(0, csv.length - 4),
      'line 6: the file ends inside this record (no line break after the last record): cut short? ' +
      'Every record, the last one too, must end with a line break'],
    ['cut-quoted.csv', csv + 'h5,4,"Helipad, the',
      'line 7: unterminated quoted field: the file ends inside it (cut short?)'],
    ['cut.ndjson', ndjson.slice(0, ndjson.length - 20),
      'line 5: not valid JSON, and the file ends inside it (no line break after the last line): cut short?'],
    ['cut.geojson', geojson.slice(0, geojson.length - 20),
      'feature 5: the file is not a complete GeoJSON FeatureCollection (no "features" array, or cut short)']
  ]
  t.match(cases[0][1], /,~fuel\|~heli$/, 'the CSV ends in a tag cut short, itself valid')
  for (const [name, text, reason] of cases) {
    const r = importFile(name, text)
    t.same([r.status, r.stdout, r.stderr], [1, '', refused(reason)], name)
    t.equal(digest(), before, `${name}: the old file is untouched`)
  }
  t.same(readdirSync(dir).filter((f) => f.startsWith('.')), [], 'no temporary file left')
})
