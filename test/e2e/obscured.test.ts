// Obscured coordinates, end to end: true positions go into an import file, the real CLI rounds
// them into the dataset file, and the service measures only from what is stored. Two sites whose
// true positions differ by tens of metres but round to the same stored point give identical
// answers to every query point, so no amount of moving the query point can tell them apart or
// place either more finely than the stored precision. The radius at which a site appears is the
// distance to its stored point, not to its true one.
import t from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { buildApp } from '../../src/app.ts'
import { seededRandom } from '../../src/sites/generator.ts'
import { haversineKm, testConfig, tmpDataDir } from '../helper.ts'
import { admin } from '../run.ts'

const dir = tmpDataDir(t)
const env = { DATA_DIR: dir, NODE_ENV: 'production', SANDBOX_SITE_COUNT: '0' }
// true positions: 30 m apart, both rounding to 51.507, -0.128 at 3 decimals (the default)
const A = { id: 'true-a', lat: 51.50739, lng: -0.12776 }
const B = { id: 'true-b', lat: 51.50712, lng: -0.12821 }
const STORED = { lat: 51.507, lng: -0.128 }
const csv = (s: typeof A) => 'id,category,name,region,country,latitude,longitude,tags\n' +
  `${s.id},4,Obscured,EUR,GB,${s.lat},${s.lng},\n` +
  'far-1,4,Far away,EUR,FR,48.857,2.352,\n'
writeFileSync(join(dir, 'a.csv'), csv(A))
writeFileSync(join(dir, 'b.csv'), csv(B))
// the first admin call creates control.db; the datasets come from the importer alone
const created = admin(['partners', 'create', '--name', 'Sand', '--tier', 'growth', '--json'], env)
if (created.status !== 0) throw new Error(created.stderr)
const sandToken = JSON.parse(created.stdout).token as string
const createLive = ['partners', 'create', '--name', 'Live', '--tier', 'growth', '--environment', 'production', '--json']
const live = JSON.parse(admin(createLive, env).stdout)
for (const s of ['sandbox', 'production']) {
  const r = admin(['datasets', 'import', '--dataset', s, '--file', join(dir, s === 'sandbox' ? 'a.csv' : 'b.csv')], env)
  if (r.status !== 0) throw new Error(r.stderr)
}
const UNLIMITED = ['--limit-minute', 'unlimited', '--limit-hour', 'unlimited', '--limit-day', 'unlimited']
for (const slug of [JSON.parse(created.stdout).slug, live.slug]) admin(['partners', 'update', slug, ...UNLIMITED], env)

// no assertion at the top level before this await: tap would end the file's test meanwhile, and
// refuse the subtests below (setup failures throw instead)
const app = await buildApp(testConfig(dir))
t.teardown(() => app.close())
const ask = (token: string, url: string) => app.inject({ url, headers: { authorization: `Bearer ${token}` } })
const nearest = async (token: string, lat: number, lng: number) =>
  (await ask(token, `/v1/sites/nearest?lat=${lat}&lng=${lng}&radius=75`)).json()
const found = async (token: string, lat: number, lng: number, radius: number) =>
  (await ask(token, `/v1/sites?lat=${lat}&lng=${lng}&radius=${radius}`)).json().length > 0

t.test('the dataset files hold only the rounded positions', async (t) => {
  for (const [file, id] of [['sandbox.db', A.id], ['production.db', B.id]]) {
    const db = new Database(join(dir, file), { readonly: true })
    t.same(db.prepare('SELECT latitude, longitude FROM sites WHERE id = ?').get(id),
      { latitude: STORED.lat, longitude: STORED.lng }, file)
    t.equal(db.prepare("SELECT value FROM meta WHERE key = 'precision'").pluck().get(), '3')
    db.close()
  }
})

t.test('two true positions, one stored point: identical answers from every query point', async (t) => {
  const random = seededRandom('obscured')
  let differFromTrue = 0
  for (let i = 0; i < 400; i++) {
    // from metres away to tens of kilometres, all around the site
    const scale = [0.0005, 0.005, 0.05, 0.3][i % 4]
    const lat = Math.round((STORED.lat + (random() - 0.5) * scale) * 1e6) / 1e6
    const lng = Math.round((STORED.lng + (random() - 0.5) * scale) * 1e6) / 1e6
    const a = await nearest(sandToken, lat, lng)
    const b = await nearest(live.token, lat, lng)
    if (a.id !== A.id || b.id !== B.id) { t.fail(`nearest from ${lat},${lng}: ${a.id}, ${b.id}`); return }
    const expected = Math.round(haversineKm(lat, lng, STORED.lat, STORED.lng) / 1.852 * 1000) / 1000
    if (a.distance_nm !== expected || b.distance_nm !== expected) {
      t.fail(`from ${lat},${lng}: ${a.distance_nm} and ${b.distance_nm}, stored point ${expected}`)
      return
    }
    if (JSON.stringify([a.latitude, a.longitude]) !== JSON.stringify([b.latitude, b.longitude])) {
      t.fail('positions differ')
      return
    }
    if (Math.round(haversineKm(lat, lng, A.lat, A.lng) / 1.852 * 1000) / 1000 !== expected) differFromTrue++
  }
  t.pass('400 query points: both sites at the same distance, the stored point\'s')
  t.ok(differFromTrue > 200, `the true position would have shown in ${differFromTrue} of 400 answers`)
})

t.test('the radius at which a site appears is the distance to its stored point', async (t) => {
  const random = seededRandom('radius')
  for (let i = 0; i < 20; i++) {
    const lat = Math.round((STORED.lat + (random() - 0.5) * 0.2) * 1e4) / 1e4
    const lng = Math.round((STORED.lng + (random() - 0.5) * 0.2) * 1e4) / 1e4
    // bisect the smallest radius that finds the site
    let lo = 0.0001
    let hi = 40
    for (let step = 0; step < 40; step++) {
      const mid = (lo + hi) / 2
      if (await found(sandToken, lat, lng, mid)) hi = mid
      else lo = mid
    }
    const stored = haversineKm(lat, lng, STORED.lat, STORED.lng)
    const truth = haversineKm(lat, lng, A.lat, A.lng)
    t.ok(Math.abs(hi - stored) < 1e-6, `from ${lat},${lng}: appears at ${hi.toFixed(7)} km; ` +
      `stored point ${stored.toFixed(7)} km, true position ${truth.toFixed(7)} km`)
  }
})
