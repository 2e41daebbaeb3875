// The documentation page in a real browser: headless chromium (Debian's; .ci/run installs it)
// opens /docs on a real server with every host but the server unreachable, so the page can only
// work from assets the service serves itself, and shows the five operations. It also takes a
// screenshot (docs/docs-page.png is one of these).
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { tmpDataDir } from '../helper.ts'
import { startServer } from '../run.ts'

const browser = [process.env.CHROMIUM, 'chromium', 'chromium-browser'].find((b) => b && spawnSync(b, ['--version']).status === 0)

t.test('/docs renders the five operations offline', { skip: browser ? false : 'NO BROWSER: install Debian\'s chromium (.ci/run does) to run this test' }, async (t) => {
  const dir = tmpDataDir(t)
  const server = await startServer({ DATA_DIR: dir, SANDBOX_SITE_COUNT: '100', NODE_ENV: 'production' })
  t.teardown(() => server.stop('SIGKILL'))
  const shot = join(dir, 'docs-page.png')
  const run = (args: string[]) => spawnSync(browser!, [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run',
    `--user-data-dir=${join(dir, 'chromium-profile')}`,
    // nothing but the service is reachable: the page must need no internet
    '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
    '--virtual-time-budget=20000', '--window-size=1280,1400', ...args, `${server.url}/docs`
  ], { encoding: 'utf8', timeout: 120_000, maxBuffer: 64 * 1024 * 1024 })
  const dom = run(['--dump-dom'])
  t.equal(dom.status, 0, dom.stderr.slice(-2000))
  for (const path of ['/v1/sites', '/v1/sites/nearest', '/v1/sites/by-tag', '/v1/sites/{id}', '/v1/usage', '/v1/categories', '/v1/tags']) {
    t.match(dom.stdout, new RegExp(`class="opblock-summary-path" data-path="${path.replace(/[{}]/g, '\\$&')}"`), `shows GET ${path}`)
  }
  t.match(dom.stdout, /Landing-Site Partner API/, 'the title')
  t.match(dom.stdout, /1\.2\.6/, 'the version')
  const screenshot = run([`--screenshot=${shot}`])
  t.equal(screenshot.status, 0, screenshot.stderr.slice(-2000))
  const png = readFileSync(shot)
  t.same([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'a PNG')
  t.ok(png.length > 20_000, `${png.length} bytes: more than a blank page`)
  if (process.env.SAVE_DOCS_SCREENSHOT) spawnSync('cp', [shot, process.env.SAVE_DOCS_SCREENSHOT])
  t.equal(await server.stop('SIGTERM'), 0)
})
