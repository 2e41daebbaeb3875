// Prometheus metrics on a real server: /metrics answers on its own loopback port (not on the
// partner port), and after traffic the counters have moved by exactly what was sent.
import t from 'tap'
import { tmpDataDir } from '../helper.ts'
import { admin, adminAsync, metricsUrlOf, parseMetrics, startServer } from '../run.ts'
import { FragmentMemory } from '../../src/answers/fragment-memory.ts'

t.test('counters, histograms and gauges move with the traffic', async (t) => {
  const dir = tmpDataDir(t)
  const env = { DATA_DIR: dir, SANDBOX_SITE_COUNT: '3000', NODE_ENV: 'production', PARTNER_REFRESH_MS: '100' }
  const created = JSON.parse(admin(['partners', 'create', '--name', 'Metered', '--json'], env).stdout)
  const server = await startServer(env)
  t.teardown(() => server.stop('SIGKILL'))
  const metricsUrl = metricsUrlOf(server)
  t.not(new URL(metricsUrl).port, new URL(server.url).port, 'a port of its own')
  t.equal((await fetch(`${server.url}/metrics`)).status, 404, 'not on the partner port')
  const scrape = async () => {
    const res = await fetch(metricsUrl)
    t.equal(res.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8')
    return parseMetrics(await res.text())
  }
  const before = await scrape()
  t.equal(before.get('lsp_dataset_sites{dataset="sandbox"}'), 3000)
  t.equal(before.get('lsp_dataset_sites{dataset="production"}'), 0)
  t.equal(before.get('lsp_partners'), 1)
  t.equal(before.get('lsp_control_db_writable'), 1)
  t.equal(before.get('lsp_shared_state_connected'), undefined, 'no shared state: no such gauge')
  t.equal(before.get('lsp_shared_state_unavailable_total'), 0)
  t.ok((before.get('lsp_process_resident_memory_bytes') ?? 0) > 0, 'process metrics')
  t.equal(before.get('lsp_record_fragment_bytes{dataset="sandbox"}'), 0,
    'no record\'s JSON made before a request needs it')

  const url = `${server.url}/v1/sites?lat=51.507&lng=-0.128&api_key=${created.token}`
  for (let i = 0; i < 5; i++) t.equal((await fetch(url)).status, 200) // 1 miss, 4 hits
  const answered = await scrape()
  t.equal(answered.get('lsp_record_fragment_bytes{dataset="sandbox"}'), FragmentMemory.CHUNK_BYTES,
    'the full form\'s first chunk')
  t.equal(answered.get('lsp_record_fragment_bytes{dataset="production"}'), 0)
  t.equal((await fetch(`${server.url}/v1/sites?lat=91&lng=0&api_key=${created.token}`)).status, 400)
  t.equal((await fetch(`${server.url}/v1/nowhere/${created.token}`)).status, 404)
  const statuses = await Promise.all(Array.from({ length: 40 }, async () => (await fetch(url)).status))
  const refused = statuses.filter((s) => s === 429).length
  t.equal(refused, 40 - (30 - 6), 'the demo tier admits 30 a minute')
  const reload = await adminAsync(['datasets', 'reload'], env)
  t.equal(reload.status, 0, reload.stderr)

  const after = await scrape()
  const moved = (key: string) => (after.get(key) ?? 0) - (before.get(key) ?? 0)
  t.equal(moved('lsp_http_requests_total{route="/v1/sites",method="GET",status="200"}'), 5 + 24)
  t.equal(moved('lsp_http_requests_total{route="/v1/sites",method="GET",status="400"}'), 1)
  t.equal(moved('lsp_http_requests_total{route="/v1/sites",method="GET",status="429"}'), refused)
  t.equal(moved('lsp_http_requests_total{route="unmatched",method="GET",status="404"}'), 1,
    'unknown paths share one series')
  t.equal(moved('lsp_http_request_duration_seconds_count{route="/v1/sites",status="200"}'), 29)
  t.equal(moved('lsp_http_request_duration_seconds_bucket{le="+Inf",route="/v1/sites",status="200"}'), 29)
  t.equal(moved('lsp_cache_lookups_total{result="miss"}'), 1)
  t.equal(moved('lsp_cache_lookups_total{result="hit"}'), 28)
  t.equal(moved('lsp_rate_limit_refusals_total{tier="demo"}'), refused)
  t.equal(moved('lsp_dataset_reloads_total{result="ok"}'), 1)
  t.equal(after.get('lsp_record_fragment_bytes{dataset="sandbox"}'), 0,
    'the reloaded dataset\'s records have made no JSON yet')
  t.equal(moved('lsp_dataset_reloads_total{result="refused"}'), 0)
  t.notOk([...after.keys()].some((k) => k.includes(created.token)), 'no token in a label')
  t.equal((await fetch(metricsUrl.replace('/metrics', '/other'))).status, 404)
  t.equal(await server.stop('SIGTERM'), 0)
})
