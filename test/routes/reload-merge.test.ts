// Reload requests that arrive while a reload runs are merged into one more reload, and every
// requester is answered with a reload that started after its request (the app, through inject).
import t from 'tap'
import { buildApp, loggerOptions } from '../../src/app.ts'
import { datasetPath, writeDataset } from '../../src/sites/dataset-file.ts'
import { logCapture, site, testConfig, tmpDataDir, writeFixture } from '../helper.ts'

const { lines, stream, clear } = logCapture()
const dir = tmpDataDir(t)
writeFixture(dir, { sandbox: [site('s-1', 4, 1, 1)], production: [site('p-1', 4, 51.5, -0.12)] })
const config = testConfig(dir, { LOG_LEVEL: 'info' })
const app = await buildApp(config, { logger: { ...loggerOptions(config), stream } })
t.teardown(() => app.close())

const productionWith = (count: number) => writeDataset(datasetPath(dir, 'production'),
  Array.from({ length: count }, (_, i) => site(`p-${i}`, 4, 51.5, -0.12 + i / 100)), { source: 'test', precision: 3 })
const reloads = () => lines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'datasets reloaded')
  .map((l) => ({ reason: l.reason, requests: l.requests, production: l.datasets[1].site_count }))
const productionCount = (outcome: { datasets: { site_count: number }[] }) => outcome.datasets[1].site_count

t.test('six requests at once: two reloads, the second for the five that came while the first ran', async (t) => {
  clear()
  productionWith(2)
  const first = app.reloadDatasets('SIGHUP')
  const during = [
    app.reloadDatasets('SIGHUP'), app.reloadDatasets('request 7'), app.reloadDatasets('SIGHUP'),
    app.reloadDatasets('shared request 3'), app.reloadDatasets('SIGHUP')
  ]
  const outcomes = await Promise.all([first, ...during])
  t.same(outcomes.map((o) => [o.ok, productionCount(o)]), Array(6).fill([true, 2]))
  t.same(reloads(), [
    { reason: 'SIGHUP', requests: 1, production: 2 },
    { reason: 'SIGHUP, request 7, shared request 3', requests: 5, production: 2 }
  ])
  const metrics = await app.metrics.registry.metrics()
  t.match(metrics, /^lsp_dataset_reloads_total\{result="ok"\} 2$/m, 'the reload metric counts two')
})

t.test('a request made during a reload is answered by the next one, ' +
  'which reads the file as it is after the request', async (t) => {
  clear()
  const first = app.reloadDatasets('before')
  productionWith(3) // written while the first reload may already have read the file
  const second = app.reloadDatasets('after the new file')
  t.equal(productionCount(await second), 3)
  await first
  t.same(reloads().map((r) => r.reason), ['before', 'after the new file'])
  const ready = await app.inject('/readyz')
  t.equal(ready.json().datasets.production.site_count, 3)
})
