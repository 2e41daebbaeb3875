// The documentation page as a partner uses it, in a real headless Chromium driven over the
// DevTools protocol: the page loads with no error in its console, and a request made with
// Authorize (the partner's token) and Try it out answers 200.
import t from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import { join } from 'node:path'
import WebSocket from 'ws'
import { tmpDataDir } from '../helper.ts'
import { admin, startServer } from '../run.ts'

const browser = [process.env.CHROMIUM, 'chromium', 'chromium-browser'].find((b) => b && spawnSync(b, ['--version']).status === 0)

/** A DevTools protocol session on one page: commands, and the events seen so far. */
async function devtools (url: string) {
  const socket = new WebSocket(url)
  await new Promise((resolve, reject) => { socket.once('open', resolve); socket.once('error', reject) })
  let id = 0
  const pending = new Map<number, { resolve: (v: unknown) => void, reject: (e: Error) => void }>()
  const events: { method: string, params: Record<string, unknown>, sessionId?: string }[] = []
  socket.on('message', (data) => {
    const message = JSON.parse(String(data))
    if (message.id !== undefined) {
      const waiting = pending.get(message.id)
      pending.delete(message.id)
      if (message.error) waiting?.reject(new Error(JSON.stringify(message.error)))
      else waiting?.resolve(message.result)
    } else events.push(message)
  })
  const send = (method: string, params: object = {}, sessionId?: string) => new Promise<Record<string, unknown>>((resolve, reject) => {
    pending.set(++id, { resolve: resolve as (v: unknown) => void, reject })
    socket.send(JSON.stringify({ id, method, params, sessionId }))
  })
  return { send, events, close: () => socket.close() }
}

t.test('/docs: no console error; Authorize, Try it out, Execute → 200', { skip: browser ? false : 'NO BROWSER: install Debian\'s chromium (.ci/run does) to run this test' }, async (t) => {
  const dir = tmpDataDir(t)
  const env = { DATA_DIR: dir, SANDBOX_SITE_COUNT: '2000', NODE_ENV: 'production' }
  const created = admin(['partners', 'create', '--name', 'Docs Reader', '--tier', 'growth', '--json'], env)
  t.equal(created.status, 0, created.stderr)
  const token = JSON.parse(created.stdout).token as string
  const server = await startServer(env)
  t.teardown(() => server.stop('SIGKILL'))

  const chromium = spawn(browser!, [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', `--user-data-dir=${join(dir, 'chromium-profile')}`,
    '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1', '--remote-debugging-port=0', '--window-size=1280,1400', 'about:blank'
  ], { stdio: ['ignore', 'ignore', 'pipe'] })
  t.teardown(async () => {
    if (chromium.exitCode === null) {
      const exited = new Promise((resolve) => chromium.once('exit', resolve))
      chromium.kill('SIGKILL')
      await exited
    }
  })
  const browserUrl = await new Promise<string>((resolve, reject) => {
    let err = ''
    const timer = setTimeout(() => reject(new Error(`chromium did not open DevTools:\n${err}`)), 30_000)
    chromium.stderr!.on('data', (d) => {
      err += d
      const match = /DevTools listening on (ws:\/\/\S+)/.exec(err)
      if (match) { clearTimeout(timer); resolve(match[1]) }
    })
  })
  const cdp = await devtools(browserUrl)
  t.teardown(() => cdp.close())
  const { targetId } = await cdp.send('Target.createTarget', { url: 'about:blank' })
  const { sessionId } = await cdp.send('Target.attachToTarget', { targetId, flatten: true }) as { sessionId: string }
  const page = (method: string, params: object = {}) => cdp.send(method, params, sessionId)
  await page('Runtime.enable')
  await page('Log.enable')
  await page('Page.enable')
  const evaluate = async (expression: string) => {
    const { result, exceptionDetails } = await page('Runtime.evaluate', { expression, awaitPromise: true, returnByValue: true }) as { result: { value: unknown }, exceptionDetails?: unknown }
    if (exceptionDetails) throw new Error(`in the page: ${JSON.stringify(exceptionDetails)}`)
    return result.value
  }
  const until = async (what: string, expression: string, timeoutMs = 20_000) => {
    const started = Date.now()
    for (;;) {
      const value = await evaluate(expression)
      if (value) return value
      if (Date.now() - started > timeoutMs) throw new Error(`not within ${timeoutMs / 1000} s: ${what}`)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }

  await page('Page.navigate', { url: `${server.url}/docs` })
  await until('the operations', 'document.querySelectorAll(".opblock").length >= 7')
  t.same(await evaluate('[...document.querySelectorAll(".opblock-summary-path")].map((e) => e.getAttribute("data-path"))'),
    ['/v1/sites', '/v1/sites/nearest', '/v1/sites/by-tag', '/v1/sites/{id}', '/v1/usage', '/v1/categories', '/v1/tags', '/v1'], 'the partner operations and the index; no probes')
  t.equal(await evaluate('document.querySelector(".topbar") === null'), true, 'no top bar offering another document')

  // Authorize with the token (the api_key scheme's field), as a partner would
  await evaluate('document.querySelector(".btn.authorize").click()')
  await until('the Authorize dialog', 'document.querySelector(".modal-ux input[type=text]") !== null')
  await evaluate(`(() => {
    const input = document.querySelector('.modal-ux input[type=text]')
    Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value').set.call(input, ${JSON.stringify(token)})
    input.dispatchEvent(new Event('input', { bubbles: true }))
    input.closest('form').querySelector('button[type=submit]').click()
  })()`)
  await until('authorized', `document.querySelector('.modal-ux .btn-done') !== null && document.querySelector('.modal-ux button[aria-label="Remove authorization"]') !== null`)
  await evaluate('document.querySelector(".modal-ux .btn-done").click()')

  // GET /v1/sites/nearest: Try it out, fill lat and lng, Execute
  await evaluate('document.querySelector("#operations-sites-nearestSite .opblock-summary-control").click()')
  await until('the operation opened', 'document.querySelector("#operations-sites-nearestSite .try-out__btn") !== null')
  await evaluate('document.querySelector("#operations-sites-nearestSite .try-out__btn").click()')
  await until('the parameters editable', 'document.querySelector("#operations-sites-nearestSite tr[data-param-name=lat] input") !== null')
  await evaluate(`(() => {
    const set = (name, value) => {
      const input = document.querySelector('#operations-sites-nearestSite tr[data-param-name=' + name + '] input')
      Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value').set.call(input, value)
      input.dispatchEvent(new Event('input', { bubbles: true }))
      input.dispatchEvent(new Event('change', { bubbles: true }))
    }
    set('lat', '51.5')
    set('lng', '-0.12')
    set('radius', '500')
  })()`)
  // the page takes typed values after a short debounce: wait until lat no longer shows as missing
  await until('the values taken', 'document.querySelector("#operations-sites-nearestSite tr[data-param-name=lat] input").className === ""', 5_000).catch(() => {})
  await new Promise((resolve) => setTimeout(resolve, 1000))
  await evaluate('document.querySelector("#operations-sites-nearestSite .execute").click()')
  const status = await until('the live response', 'document.querySelector("#operations-sites-nearestSite .live-responses-table tbody .response-col_status")?.textContent.trim()')
  t.equal(status, '200', 'Try it out answered 200')
  const body = await evaluate('document.querySelector("#operations-sites-nearestSite .live-responses-table .response-col_description pre")?.textContent') as string
  t.match(body, /"helipaddy_link"/, 'with a site')

  const errors = cdp.events
    .filter((e) => (e.method === 'Runtime.consoleAPICalled' && e.params.type === 'error') || e.method === 'Runtime.exceptionThrown' ||
      (e.method === 'Log.entryAdded' && (e.params.entry as { level: string }).level === 'error'))
    .map((e) => JSON.stringify(e.params).slice(0, 300))
  t.same(errors, [], 'nothing in the console at the error level')
  t.equal(await server.stop('SIGTERM'), 0)
})
