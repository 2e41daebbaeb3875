// A reload still under way when the service closes: the close stops it (its index worker is
// terminated) and waits for it, so nothing of it runs on after the close, and the operator's
// request is answered while control.db is still open.
import t, { type Test } from 'tap'
import { readdirSync } from 'node:fs'
import Database from 'better-sqlite3'
import { buildApp, loggerOptions } from '../../src/app.ts'
import { controlPath } from '../../src/partners/store.ts'
import { logCapture, randomSites, site, testConfig, tmpDataDir, writeFixture } from '../helper.ts'

async function appReloading (t: Test) {
  const { lines, stream } = logCapture()
  const dir = tmpDataDir(t)
  writeFixture(dir, { sandbox: randomSites('reload-close', 2000), production: [site('p-1', 4, 51.5, -0.12)] })
  // every file indexed in a worker, as a large dataset is
  const config = testConfig(dir, { LOG_LEVEL: 'info', INDEX_WORKER_MIN_MB: '0', PARTNER_REFRESH_MS: '50' })
  const app = await buildApp(config, { logger: { ...loggerOptions(config), stream } })
  let started!: () => void
  const reloadStarted = new Promise<void>((resolve) => { started = resolve })
  const reload = app.datasets.reload.bind(app.datasets)
  app.datasets.reload = () => { started(); return reload() }
  return { app, dir, lines, reloadStarted }
}

t.test('a reload asked for in-process: settled when the close returns, as refused', async (t) => {
  const { app, dir, lines } = await appReloading(t)
  let settled = false
  const outcome = app.reloadDatasets('test')
  outcome.then(() => { settled = true }, () => {})
  await app.close()
  t.ok(settled, 'the close waited for the reload')
  const result = await outcome
  t.equal(result.ok, false)
  t.equal(result.ok ? '' : result.error, 'the service closed before the reload ended')
  t.notOk(lines.some((l) => l.includes('"msg":"datasets reloaded"')), 'no swap after the close began')
  t.ok(lines.some((l) => l.includes('"msg":"dataset reload stopped: the service is closing"')),
    'logged as stopped, not as refused')
  t.same(readdirSync(dir).filter((name) => name.includes('.tmp')), [], 'no temporary file left')
})

t.test('a reload asked for by the CLI (control.db): answered before control.db closes', async (t) => {
  const { app, dir, lines, reloadStarted } = await appReloading(t)
  const db = new Database(controlPath(dir))
  t.teardown(() => db.close())
  db.prepare('INSERT INTO reload_requests (requested_at) VALUES (?)').run(new Date().toISOString())
  const keepAlive = setInterval(() => {}, 1000) // the poll's timer does not hold the process
  await reloadStarted
  clearInterval(keepAlive)
  await app.close()
  const rows = db.prepare('SELECT ok, detail FROM reload_results').all() as { ok: number, detail: string }[]
  t.equal(rows.length, 1, 'one answer')
  t.equal(rows[0].ok, 0)
  t.equal(JSON.parse(rows[0].detail).error, 'the service closed before the reload ended')
  await new Promise((resolve) => setTimeout(resolve, 200))
  t.same(lines.filter((l) => /"level":50/.test(l) || (/reload|control\.db/.test(l) && /"level":40/.test(l))), [],
    'nothing failed, even later')
})
