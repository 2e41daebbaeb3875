// The metrics server belongs to the app: it is started by app.listenMetrics() (src/server.ts, before
// the partner port listens), logged, and closed by any app.close(), at its start: Prometheus sees
// the instance gone while requests in flight are still being answered, and a scrape connection
// kept alive does not hold the close.
import { connect, type Socket } from 'node:net'
import t from 'tap'
import { buildTestApp, logCapture } from '../helper.ts'
import { setTimeout as sleep } from 'node:timers/promises'

/** Whether a new connection to the port is taken (a refused one errors). */
const accepts = (port: number) => new Promise<boolean>((resolve) => {
  const socket = connect(port, '127.0.0.1')
  socket.once('connect', () => { socket.destroy(); resolve(true) })
  socket.once('error', () => resolve(false))
})

/** A raw connection that sends a scrape and keeps the connection open. */
async function keptAliveScrape (port: number) {
  const socket = connect(port, '127.0.0.1')
  const state = { received: '', closed: false, socket }
  socket.on('data', (d) => { state.received += d })
  socket.on('error', () => {})
  socket.on('close', () => { state.closed = true })
  await new Promise((resolve) => socket.once('connect', resolve))
  socket.write('GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n')
  for (let i = 0; i < 100 && !state.received.includes('lsp_http_requests_total'); i++) await sleep(20)
  return state
}

t.test('app.close() closes the metrics server, a kept-alive scrape connection included', async (t) => {
  const log = logCapture()
  const { app } = await buildTestApp(t, {}, { METRICS_PORT: '0' }, { logger: { level: 'info', stream: log.stream } })
  const url = await app.listenMetrics()
  const port = Number(new URL(url).port)
  const logged = log.lines.map((l) => JSON.parse(l)).filter((l) => l.msg.startsWith('metrics listening'))
  t.match(logged, [{ level: 30, url, msg: `metrics listening at ${url}` }],
    'its address logged, as the tools that read the log expect')
  t.match(url, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/)
  const scrape = await keptAliveScrape(port)
  t.match(scrape.received, /^HTTP\/1\.1 200 OK\r\n/)
  t.equal(scrape.closed, false, 'kept alive')
  await t.rejects(app.listenMetrics(), /already listening/, 'once per app')

  await app.close()
  t.equal(await accepts(port), false, 'no longer listening')
  for (let i = 0; i < 50 && !scrape.closed; i++) await sleep(20)
  t.equal(scrape.closed, true, 'the kept-alive scrape connection closed too')
})

t.test('the metrics server stops answering as a close starts, before the requests in flight end', async (t) => {
  const { app } = await buildTestApp(t, {}, { METRICS_PORT: '0' })
  const metricsPort = Number(new URL(await app.listenMetrics()).port)
  const apiPort = Number(new URL(await app.listen({ host: '127.0.0.1', port: 0 })).port)
  // a request whose body never comes: it holds the close open
  const held: Socket = connect(apiPort, '127.0.0.1')
  held.on('error', () => {})
  await new Promise((resolve) => held.once('connect', resolve))
  held.write('GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc')
  await sleep(100)
  t.equal(await accepts(metricsPort), true)

  let closed = false
  const closing = app.close().then(() => { closed = true })
  let refused = false
  for (let i = 0; i < 50 && !refused; i++) {
    refused = !await accepts(metricsPort)
    if (!refused) await sleep(20)
  }
  t.equal(refused, true, 'metrics refused once the close has started')
  t.equal(closed, false, 'while the request in flight still holds the close')
  held.destroy()
  await closing
})

t.test('an app never asked to serve metrics (inject-only tests) closes without one', async (t) => {
  const { app } = await buildTestApp(t, {}, { METRICS_PORT: '0' })
  t.equal((await app.inject('/healthz')).statusCode, 200)
  await app.close()
  await t.rejects(app.listenMetrics(), /closed/, 'nor starts one once closed')
})
