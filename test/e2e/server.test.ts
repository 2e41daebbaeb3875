// End to end: the real server process on a fresh data directory, a partner made with the real
// CLI, requests over real HTTP.
import { existsSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { join } from 'node:path'
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import t from 'tap'
import { tmpDataDir } from '../helper.ts'
import { admin, startServer } from '../run.ts'

t.test('fresh data directory: first boot, CLI partner, HTTP queries, graceful stop', async (t) => {
  const dir = tmpDataDir(t)
  const env = { DATA_DIR: dir, NODE_ENV: 'development', SANDBOX_SITE_COUNT: '5000', PARTNER_REFRESH_MS: '200' }
  const server = await startServer(env)
  t.teardown(() => server.stop('SIGKILL'))

  for (const file of ['sandbox.db', 'production.db', 'control.db']) t.ok(existsSync(join(dir, file)), `${file} created`)
  const demoToken = /^ {2}(lsp_[A-Za-z0-9_-]{43})$/m.exec(server.output())?.[1]
  t.ok(demoToken, 'the demo token is printed once at first boot')

  const demo = await fetch(`${server.url}/v1/sites?lat=51.507&lng=-0.128&api_key=${demoToken}`)
  t.equal(demo.status, 200)
  const demoSites = await demo.json() as { id: string, category: string }[]
  t.ok(demoSites.length > 0, `the sandbox finds sites around London (${demoSites.length})`)
  t.ok(demoSites.every((s) => s.id.startsWith('sbx-') && ['4', '7'].includes(s.category)))
  t.match(demo.headers.get('x-request-id'), /^[0-9a-f-]{36}$/)

  const created = admin(['partners', 'create', '--name', 'Medevac One', '--tier', 'growth', '--json'], env)
  t.equal(created.status, 0, created.stderr)
  const token = JSON.parse(created.stdout).token as string

  // The running service picks the new partner up without a restart.
  let status = 0
  const deadline = Date.now() + 5000
  while (Date.now() < deadline) {
    const res = await fetch(`${server.url}/v1/sites/nearest?lat=48.857&lng=2.352`,
      { headers: { authorization: `Bearer ${token}` } })
    status = res.status
    if (status === 200) break
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  t.equal(status, 200, 'a partner created with the CLI is served within 5 s')

  const nearest = await (await fetch(`${server.url}/v1/sites/nearest?lat=48.857&lng=2.352&api_key=${token}`)).json() as
    Record<string, unknown>
  t.same(Object.keys(nearest), ['id', 'category', 'name', 'latitude', 'longitude', 'distance_nm', 'helipaddy_link'])
  t.equal(nearest.helipaddy_link, `https://helipaddy.com/pad/${nearest.id}`)

  const refused = await fetch(`${server.url}/v1/sites?lat=0&lng=0&api_key=${token}`)
  t.equal(refused.status, 400)
  t.same(await refused.json(), {
    code: 'svc_partner_api_ambiguous_coordinates',
    message: 'Coordinates 0,0 are ambiguous. Use a real-world location.',
    data: { status: 400 }
  })

  const suspended = admin(['partners', 'update', 'medevac-one', '--status', 'suspended'], env)
  t.equal(suspended.status, 0)
  const stopDeadline = Date.now() + 5000
  while (Date.now() < stopDeadline) {
    status = (await fetch(`${server.url}/v1/sites?lat=48.857&lng=2.352&api_key=${token}`)).status
    if (status === 403) break
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  t.equal(status, 403, 'a suspended partner is refused within 5 s')

  t.equal(await server.stop('SIGTERM'), 0, 'SIGTERM closes cleanly')
  const log = server.output()
  t.notOk(log.includes(token), 'the CLI partner token never appears in the server output')
  t.equal(log.split(demoToken!).length - 1, 2,
    'the demo token appears only in the first-boot banner (token line and curl line)')

  // A second boot on the same directory creates nothing and prints no token.
  const again = await startServer(env)
  t.teardown(() => again.stop('SIGKILL'))
  t.notOk(/lsp_/.test(again.output()), 'no token printed on later boots')
  t.equal((await fetch(`${again.url}/v1/sites?lat=51.507&lng=-0.128&api_key=${demoToken}`)).status, 200)

  // A HEAD of the OpenAPI document describes the encoding a GET gets, and sends no body: the next
  // answer on the same connection is read whole.
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  interface Answer { status?: number, headers: Record<string, unknown>, body: Buffer }
  const ask = (method: string, encoding: string) => new Promise<Answer>((resolve, reject) => {
    request(`${again.url}/v1/openapi.json`, { method, agent, headers: { 'accept-encoding': encoding } }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
        .on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }))
        .on('error', reject)
    }).on('error', reject).end()
  })
  const plain = await ask('GET', 'identity')
  for (const encoding of ['br', 'gzip']) {
    const head = await ask('HEAD', encoding)
    const get = await ask('GET', encoding)
    t.same([head.status, head.headers['content-encoding'], head.headers.vary, head.body.length],
      [200, encoding, 'accept-encoding', 0], `HEAD, ${encoding}`)
    t.same([get.status, get.headers['content-encoding']], [200, encoding],
      `GET after it on the same connection, ${encoding}`)
    t.same(encoding === 'br' ? brotliDecompressSync(get.body) : gunzipSync(get.body), plain.body,
      `${encoding}: the document`)
  }
  const plainHead = await ask('HEAD', 'identity')
  t.same([plainHead.headers['content-encoding'], plainHead.headers['content-length']],
    [undefined, String(plain.body.length)], 'HEAD, plain: the plain length')
  agent.destroy()
  t.equal(await again.stop('SIGTERM'), 0)
})

t.test('a bad configuration value stops start-up naming the variable', async (t) => {
  const dir = tmpDataDir(t)
  await t.rejects(startServer({ DATA_DIR: dir, PORT: 'eighty' }, 30_000),
    /server exited with 1:\ninvalid configuration: PORT="eighty"/)
})
