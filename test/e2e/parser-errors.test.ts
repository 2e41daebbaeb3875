// Requests that Node's HTTP parser refuses, and one without Host, sent over raw sockets to a
// listening server: each is answered with the API's error body and an X-Request-Id, and closed.
import { connect } from 'node:net'
import t from 'tap'
import { buildApp, loggerOptions } from '../../src/app.ts'
import { UNLIMITED, logCapture, nextTurn, site, testConfig, tmpDataDir, writeFixture } from '../helper.ts'

const { lines, stream } = logCapture()
const dir = tmpDataDir(t)
const tokens = writeFixture(dir, {
  production: [site('prd-hotel', 4, 51.5, -0.12)],
  partners: [
    {
      name: 'Live', slug: 'live', tier: 'growth', environment: 'production', categories: [4], limitOverrides: UNLIMITED
    }
  ]
})
const config = testConfig(dir, { LOG_LEVEL: 'info', HEADERS_TIMEOUT_MS: '1000', REQUEST_TIMEOUT_MS: '1000' })
const app = await buildApp(config, { logger: { ...loggerOptions(config), stream } })
t.teardown(() => app.close())
const { port } = new URL(await app.listen({ host: '127.0.0.1', port: 0 }))

interface Answer { statusLine: string, headers: Record<string, string>, body: string }

/** Sends the bytes and reads until the server closes the connection. */
function send (bytes: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port: Number(port) })
    const chunks: Buffer[] = []
    socket.setTimeout(10_000, () => socket.destroy(new Error('no answer in 10 s')))
    socket.on('data', (d) => chunks.push(d))
    socket.on('error', reject)
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('latin1')
      const end = text.indexOf('\r\n\r\n')
      const [statusLine, ...fields] = text.slice(0, end).split('\r\n')
      const headers: Record<string, string> = {}
      for (const field of fields) {
        const colon = field.indexOf(':')
        headers[field.slice(0, colon).toLowerCase()] = field.slice(colon + 1).trim()
      }
      resolve({ statusLine, headers, body: text.slice(end + 4) })
    })
    socket.write(bytes, 'latin1')
  })
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
/** The access lines of a request, as `METHOD url status`. */
const accessLines = (id: string) => lines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'request' && l.reqId === id)
  .map((l) => `${l.method} ${l.url} ${l.status}`)
const body = (status: number) =>
  JSON.stringify({ code: 'rest_bad_request', message: 'The request is malformed.', data: { status } })
const STATUS_LINE: Record<number, string> = {
  400: 'HTTP/1.1 400 Bad Request',
  408: 'HTTP/1.1 408 Request Timeout',
  413: 'HTTP/1.1 413 Payload Too Large',
  431: 'HTTP/1.1 431 Request Header Fields Too Large'
}

t.test('each request the parser refuses: status, body, request id, closed', async (t) => {
  const token = tokens.live
  const cases: [string, string, number][] = [
    ['a raw space in the URL', `GET /v1/sites?api_key=${token}&lat=51 5 HTTP/1.1\r\nHost: x\r\n\r\n`, 400],
    ['a NUL in the URL', `GET /v1/sites?api_key=${token}\0 HTTP/1.1\r\nHost: x\r\n\r\n`, 400],
    ['a lowercase method', `get /v1/sites?api_key=${token} HTTP/1.1\r\nHost: x\r\n\r\n`, 400],
    ['conflicting Content-Length',
      'POST /v1/sites HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab', 400],
    ['a folded header',
      `GET /v1/sites HTTP/1.1\r\nHost: x\r\nX-Note: one\r\n  two\r\nAuthorization: Bearer ${token}\r\n\r\n`, 400],
    ['headers over 16 kB',
      `GET /v1/sites?api_key=${token} HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(17_000)}\r\n\r\n`, 431],
    ['chunk extensions over 16 kB',
      'POST /v1/sites HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n' +
      `1;${'e'.repeat(17_000)}\r\na\r\n0\r\n\r\n`, 413],
    ['headers not complete in HEADERS_TIMEOUT_MS', `GET /v1/sites?api_key=${token} HTTP/1.1\r\nHost: x\r\n`, 408]
  ]
  const ids = new Set<string>()
  for (const [what, bytes, status] of cases) {
    const answer = await send(bytes)
    t.equal(answer.statusLine, STATUS_LINE[status], what)
    t.equal(answer.body, body(status), what)
    t.same(Object.keys(answer.headers),
      ['content-type', 'content-length', 'cache-control', 'x-request-id', 'connection'], what)
    t.equal(answer.headers['cache-control'], 'no-store', what)
    t.equal(answer.headers['content-type'], 'application/json; charset=utf-8', what)
    t.equal(answer.headers['content-length'], String(Buffer.byteLength(body(status))), what)
    t.equal(answer.headers.connection, 'close', what)
    t.match(answer.headers['x-request-id'], UUID, what)
    ids.add(answer.headers['x-request-id'])
  }
  t.equal(ids.size, cases.length, 'a fresh request id each')
  const refusals = lines.filter((l) => l.includes('"msg":"request refused by the HTTP parser"'))
  t.equal(refusals.length, cases.length - 1, 'one line per refused request (a timeout is logged at debug)')
  for (const id of [...ids].slice(0, -1)) {
    t.equal(refusals.filter((l) => l.includes(`"reqId":"${id}"`)).length, 1, `logged with its request id ${id}`)
  }
  t.notOk(lines.some((l) => l.includes(token)), 'the token is in no log line')
})

t.test('HTTP/1.1 without Host: 400 in the same body, and the connection closed; ' +
  'HTTP/1.0 may leave it out', async (t) => {
  // no Connection: close asked for: the server closes (send() waits for the close, 10 s at most)
  const answer = await send('GET /healthz HTTP/1.1\r\n\r\n')
  t.equal(answer.statusLine, STATUS_LINE[400])
  t.equal(answer.headers.connection, 'close')
  t.equal(answer.headers['cache-control'], 'no-store')
  t.equal(answer.body, body(400))
  t.equal(answer.headers['content-type'], 'application/json; charset=utf-8')
  t.match(answer.headers['x-request-id'], UUID)
  const old = await send('GET /healthz HTTP/1.0\r\n\r\n')
  t.equal(old.statusLine, 'HTTP/1.1 200 OK')
  t.equal(old.body, '{"status":"ok"}')
})

t.test('without Host, an unknown path and a partner route are refused the same way, with an access line', async (t) => {
  for (const path of ['/nope', '/v1/sites/nearest?lat=51.5&lng=-0.12', '/healthz']) {
    const answer = await send(`GET ${path} HTTP/1.1\r\n\r\n`)
    t.equal(answer.statusLine, STATUS_LINE[400], path)
    t.equal(answer.headers.connection, 'close', path)
    t.equal(answer.body, body(400), path)
    t.match(answer.headers['x-request-id'], UUID, path)
    await nextTurn()
    t.same(accessLines(answer.headers['x-request-id']), path === '/healthz' ? [] : [`GET ${path} 400`],
      `${path}: its access line (a probe has none)`)
  }
})

t.test('an Expect other than 100-continue: 417 in the same body, with a request id and an access line, ' +
  'closed', async (t) => {
  // Node's own 417 (no listener for checkExpectation) has an empty body and no request id
  for (const path of ['/nope', '/v1/sites/nearest?lat=51.5&lng=-0.12']) {
    const answer = await send(`GET ${path} HTTP/1.1\r\nHost: x\r\nExpect: something-else\r\n` +
      `Authorization: Bearer ${tokens.live}\r\n\r\n`)
    t.equal(answer.statusLine, 'HTTP/1.1 417 Expectation Failed', path)
    t.equal(answer.body, body(417), path)
    t.equal(answer.headers['content-type'], 'application/json; charset=utf-8', path)
    t.equal(answer.headers['cache-control'], 'no-store', path)
    t.equal(answer.headers.connection, 'close', path)
    t.match(answer.headers['x-request-id'], UUID, path)
    t.notOk('x-ratelimit-used' in answer.headers, `${path}: refused before the limits`)
    await nextTurn()
    t.same(accessLines(answer.headers['x-request-id']), [`GET ${path} 417`], `${path}: its access line`)
  }
  // 100-continue is still met (Node writes the interim answer), and HTTP/1.0 ignores Expect
  const continued = await send('GET /v1/sites/nearest?lat=51.5&lng=-0.12 HTTP/1.1\r\nHost: x\r\n' +
    `Expect: 100-continue\r\nAuthorization: Bearer ${tokens.live}\r\nConnection: close\r\n\r\n`)
  t.equal(continued.statusLine, 'HTTP/1.1 100 Continue')
  t.match(continued.body, /^HTTP\/1\.1 200 OK\r\n/)
  const old = await send('GET /healthz HTTP/1.0\r\nExpect: something-else\r\n\r\n')
  t.equal(old.statusLine, 'HTTP/1.1 200 OK')
})

t.test('a well-formed request on the same server is answered as ever', async (t) => {
  const answer = await send('GET /v1/sites/nearest?lat=51.5&lng=-0.12 HTTP/1.1\r\nHost: x\r\n' +
    `Authorization: Bearer ${tokens.live}\r\nConnection: close\r\n\r\n`)
  t.equal(answer.statusLine, 'HTTP/1.1 200 OK')
  t.equal(JSON.parse(answer.body).id, 'prd-hotel')
})
