// The documentation page in a real headless Chromium (Debian's; .ci/run installs it), driven over
// the DevTools protocol, on a real server with every host but the server unreachable, so the page
// can only work from assets the service serves itself: it shows the partner operations and no
// operators' probes, one document (no top bar), no error in its console, and a request made with
// Authorize (the partner's token) and Try it out answers 200. It also takes a screenshot
// (docs/docs-page.png is one of these: SAVE_DOCS_SCREENSHOT=<path> keeps it).
import t from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import WebSocket from 'ws'
import { tmpDataDir } from '../helper.ts'
import { admin, startServer } from '../run.ts'

const browser = [process.env.CHROMIUM, 'chromium', 'chromium-browser']
  .find((b) => b && spawnSync(b, ['--version']).status === 0)

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
  const send = (method: string, params: object = {}, sessionId?: string) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      pending.set(++id, { resolve: resolve as (v: unknown) => void, reject })
      socket.send(JSON.stringify({ id, method, params, sessionId }))
    })
  return { send, events, close: () => socket.close() }
}

t.test('/docs offline: the partner operations, no console error; Authorize, Try it out, Execute → 200', {
  skip: browser ? false : 'NO BROWSER: install Debian\'s chromium (.ci/run does) to run this test'
}, async (t) => {
  const dir = tmpDataDir(t)
  const env = { DATA_DIR: dir, SANDBOX_SITE_COUNT: '2000', NODE_ENV: 'production' }
  const created = admin(['partners', 'create', '--name', 'Docs Reader', '--tier', 'growth', '--json'], env)
  t.equal(created.status, 0, created.stderr)
  const token = JSON.parse(created.stdout).token as string
  const server = await startServer(env)
  t.teardown(() => server.stop('SIGKILL'))

  // its own profile, removed with retries: the browser's helper processes may still be writing as it exits
  const profile = mkdtempSync(join(tmpdir(), 'lsp-chromium-'))
  t.teardown(() => rmSync(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 }))
  const chromium = spawn(browser!, [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync', `--user-data-dir=${profile}`,
    '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1', '--remote-debugging-port=0', '--window-size=1280,1400',
    'about:blank'
  ], { stdio: ['ignore', 'ignore', 'pipe'] })
  let cdp: Awaited<ReturnType<typeof devtools>> | undefined
  t.teardown(async () => {
    if (chromium.exitCode === null) {
      const exited = new Promise((resolve) => chromium.once('exit', resolve))
      // closed through the protocol, it takes its helper processes along; killed if it does not exit
      const kill = setTimeout(() => chromium.kill('SIGKILL'), 10_000)
      if (cdp) await cdp.send('Browser.close').catch(() => {})
      else chromium.kill('SIGKILL')
      await exited
      clearTimeout(kill)
    }
    cdp?.close()
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
  cdp = await devtools(browserUrl)
  const { targetId } = await cdp.send('Target.createTarget', { url: 'about:blank' })
  const { sessionId } = await cdp.send('Target.attachToTarget', { targetId, flatten: true }) as { sessionId: string }
  const page = (method: string, params: object = {}) => cdp.send(method, params, sessionId)
  await page('Runtime.enable')
  await page('Log.enable')
  await page('Page.enable')
  const evaluate = async (expression: string) => {
    const { result, exceptionDetails } = await page('Runtime.evaluate', {
      expression, awaitPromise: true, returnByValue: true
    }) as { result: { value: unknown }, exceptionDetails?: unknown }
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
  await until('the operations', 'document.querySelectorAll(".opblock").length >= 9')
  t.same(
    await evaluate('[...document.querySelectorAll(".opblock-summary-path")].map((e) => e.getAttribute("data-path"))'),
    ['/v1/sites', '/v1/sites/nearest', '/v1/sites/by-tag', '/v1/sites/along-route', '/v1/sites/by-bbox',
      '/v1/sites/{id}', '/v1/usage', '/v1/categories', '/v1/tags', '/v1'],
    'the partner operations and the index; no probes')
  t.equal(await evaluate('document.querySelector(".topbar") === null'), true, 'no top bar offering another document')
  t.equal(await evaluate('document.querySelector(".info .title").textContent'),
    'Landing-Site Partner API 1.3 OAS 3.1', 'the title and the version')
  t.equal(await evaluate('document.querySelector(".servers select option")?.value'), '/',
    'the one server: this service')

  const { data } = await page('Page.captureScreenshot', { format: 'png' }) as { data: string }
  const png = Buffer.from(data, 'base64')
  t.same([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'a PNG')
  t.ok(png.length > 20_000, `${png.length} bytes: more than a blank page`)
  const shot = join(dir, 'docs-page.png')
  writeFileSync(shot, png)
  if (process.env.SAVE_DOCS_SCREENSHOT) copyFileSync(shot, process.env.SAVE_DOCS_SCREENSHOT)

  // Authorize with the token (the api_key scheme's field), as a partner would
  await evaluate('document.querySelector(".btn.authorize").click()')
  await until('the Authorize dialog', 'document.querySelector(".modal-ux input[type=text]") !== null')
  await evaluate(`(() => {
    const input = document.querySelector('.modal-ux input[type=text]')
    Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value').set.call(input, ${JSON.stringify(token)})
    input.dispatchEvent(new Event('input', { bubbles: true }))
    input.closest('form').querySelector('button[type=submit]').click()
  })()`)
  await until('authorized', 'document.querySelector(\'.modal-ux .btn-done\') !== null && ' +
    'document.querySelector(\'.modal-ux button[aria-label="Remove authorization"]\') !== null')
  await evaluate('document.querySelector(".modal-ux .btn-done").click()')

  // GET /v1/sites/nearest: Try it out, fill lat and lng, Execute
  await evaluate('document.querySelector("#operations-sites-nearestSite .opblock-summary-control").click()')
  await until('the operation opened', 'document.querySelector("#operations-sites-nearestSite .try-out__btn") !== null')
  await evaluate('document.querySelector("#operations-sites-nearestSite .try-out__btn").click()')
  await until('the parameters editable',
    'document.querySelector("#operations-sites-nearestSite tr[data-param-name=lat] input") !== null')
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
  await until('the values taken',
    'document.querySelector("#operations-sites-nearestSite tr[data-param-name=lat] input").className === ""', 5_000)
    .catch(() => {})
  await new Promise((resolve) => setTimeout(resolve, 1000))
  await evaluate('document.querySelector("#operations-sites-nearestSite .execute").click()')
  const status = await until('the live response', 'document.querySelector("#operations-sites-nearestSite ' +
    '.live-responses-table tbody .response-col_status")?.textContent.trim()')
  t.equal(status, '200', 'Try it out answered 200')
  const body = await evaluate('document.querySelector("#operations-sites-nearestSite ' +
    '.live-responses-table .response-col_description pre")?.textContent') as string
  t.match(body, /"helipaddy_link"/, 'with a site')
  // (the page shows a header's values joined by commas without their spaces)
  const shown = (await evaluate('document.querySelector("#operations-sites-nearestSite ' +
    '.live-responses-table tbody .response-col_description").textContent') as string).replace(/\s+/g, '')
  t.match(shown, 'ratelimit-policy:"minute";q=90;w=60,"hour";q=1200;w=3600,"day";q=12000;w=86400',
    'the rate-limit headers of the growth tier, as the document says')
  t.match(shown, 'cache-control:private,max-age=60')

  const errors = cdp.events
    .filter((e) => (e.method === 'Runtime.consoleAPICalled' && e.params.type === 'error') ||
      e.method === 'Runtime.exceptionThrown' ||
      (e.method === 'Log.entryAdded' && (e.params.entry as { level: string }).level === 'error'))
    .map((e) => JSON.stringify(e.params).slice(0, 300))
  t.same(errors, [], 'nothing in the console at the error level')
  t.equal(await server.stop('SIGTERM'), 0)
})
