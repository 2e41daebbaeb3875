// One client's idle connections must not lock the others out: the real server process, its
// open-file limit set low (so that MAX_CONNECTIONS is lowered to fit it), idle sockets from one
// loopback address past its cap, another address served meanwhile, the refusals logged once,
// and the idle sockets closed by the headers timeout, which frees their slots.
import { connect, type Socket } from 'node:net'
import t from 'tap'
import { buildTestApp, tmpDataDir } from '../helper.ts'
import { startServer } from '../run.ts'

const FILE_LIMIT = 306 // MAX_CONNECTIONS is lowered to this less the 256 kept for other files: 50
const PER_ADDRESS = 30 // MAX_CONNECTIONS_PER_IP=6000 lowered in proportion (10000 → 50)
const TOO_MANY = '{"code":"svc_partner_api_too_many_connections",' +
  '"message":"Too many open connections, from this address or in all. Close idle connections or retry later.",' +
  '"data":{"status":503}}'
const TIMED_OUT = '{"code":"rest_bad_request","message":"The request is malformed.","data":{"status":408}}'
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

interface Connection { socket: Socket, received: string, closed: boolean }

/** A connection from a loopback address of its own (Linux routes all of 127/8 to lo). */
function open (port: number, from: string): Connection {
  const connection: Connection = {
    socket: connect({ host: '127.0.0.1', port, localAddress: from }), received: '', closed: false
  }
  connection.socket.on('data', (d) => { connection.received += d })
  connection.socket.on('error', () => {})
  connection.socket.on('close', () => { connection.closed = true })
  return connection
}

async function until (what: string, condition: () => boolean, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`not in ${timeoutMs} ms: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** One request on a kept-alive connection: the answer's status line and body once complete. */
async function ask (connection: Connection, path: string) {
  connection.received = ''
  connection.socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`)
  await until(`an answer to ${path}`, () => {
    const end = connection.received.indexOf('\r\n\r\n')
    const length = /\r\ncontent-length: (\d+)\r\n/i.exec(connection.received)
    return connection.closed ||
      (end >= 0 && length !== null && connection.received.length >= end + 4 + Number(length[1]))
  }, 10_000)
  return split(connection.received)
}

function split (text: string) {
  const end = text.indexOf('\r\n\r\n')
  const [statusLine, ...fields] = text.slice(0, end).split('\r\n')
  const headers = Object.fromEntries(
    fields.map((f) => [f.slice(0, f.indexOf(':')).toLowerCase(), f.slice(f.indexOf(':') + 1).trim()])
  )
  return { statusLine, headers, body: text.slice(end + 4) }
}

const refused = (list: Connection[]) => list.filter((c) => c.closed && c.received.startsWith('HTTP/1.1 503 ')).length
const logLines = (output: string, msg: string) =>
  output.split('\n').filter((l) => l.includes(`"msg":"${msg}`)).map((l) => JSON.parse(l))

t.test('idle sockets past the caps are refused; other clients are served; timeouts free the slots', async (t) => {
  const server = await startServer({
    DATA_DIR: tmpDataDir(t),
    NODE_ENV: 'test',
    SANDBOX_SITE_COUNT: '100',
    MAX_CONNECTIONS: '10000',
    MAX_CONNECTIONS_PER_IP: '6000',
    HEADERS_TIMEOUT_MS: '5000',
    REQUEST_TIMEOUT_MS: '5000'
  }, 60_000, { wrap: ['prlimit', `--nofile=${FILE_LIMIT}:${FILE_LIMIT}`] })
  const all: Connection[] = []
  t.teardown(async () => {
    for (const c of all) c.socket.destroy()
    await server.stop('SIGKILL')
  })
  const port = Number(new URL(server.url).port)
  const lowered = logLines(server.output(), 'MAX_CONNECTIONS lowered')
  t.same(lowered.map((l) => [l.configured, l.maxConnections, l.maxPerAddress, l.fileLimit]),
    [[{ maxConnections: 10000, maxPerAddress: 6000 }, 50, PER_ADDRESS, FILE_LIMIT]],
    'the caps are lowered to fit the open-file limit, and said so')

  // One client opens more idle connections than the process may open files: 30 are taken, the
  // other 370 refused at once (without the caps the process ran out of files and served no one).
  const greedy = Array.from({ length: 400 }, () => open(port, '127.0.0.2'))
  all.push(...greedy)
  await until('370 refusals', () => refused(greedy) >= 370, 10_000)
  t.equal(refused(greedy), 370, 'refused past its cap of 30')
  t.equal(greedy.filter((c) => !c.closed).length, 30, 'the other 30 stay open')
  const refusal = split(greedy.find((c) => c.closed)!.received)
  t.equal(refusal.statusLine, 'HTTP/1.1 503 Service Unavailable')
  t.equal(refusal.body, TOO_MANY)
  t.same(Object.keys(refusal.headers),
    ['content-type', 'content-length', 'cache-control', 'x-request-id', 'connection'])
  t.match(refusal.headers['x-request-id'], UUID)

  // Another client is served meanwhile, on a connection it keeps.
  const other = open(port, '127.0.0.3')
  all.push(other)
  const served = await ask(other, '/healthz')
  t.equal(served.statusLine, 'HTTP/1.1 200 OK')
  t.equal(served.body, '{"status":"ok"}')

  // A third fills what is left of the 50: 19 taken (30 + 1 + 19), 11 refused.
  const third = Array.from({ length: 30 }, () => open(port, '127.0.0.4'))
  all.push(...third)
  await until('11 refusals', () => refused(third) >= 11, 10_000)
  t.equal(refused(third), 11, 'refused past the cap of 50 in all')
  t.equal(third.filter((c) => !c.closed).length, 19)
  const late = open(port, '127.0.0.5')
  all.push(late)
  await until('the late one closed', () => late.closed, 10_000)
  t.equal(split(late.received).body, TOO_MANY, 'a new client is refused while all 50 are taken')
  t.equal((await ask(other, '/healthz')).statusLine, 'HTTP/1.1 200 OK', 'a connection already open is served on')

  const refusals = logLines(server.output(), 'connections refused')
  t.equal(refusals.length, 1, 'the refusals are logged once')
  t.match(refusals[0], {
    level: 40, cap: 'per address', address: '127.0.0.2', open: 30, maxConnections: 50, maxPerAddress: PER_ADDRESS
  })

  // The idle ones never sent a request: HEADERS_TIMEOUT_MS closes them, with a 408 each.
  const idle = [...greedy, ...third].filter((c) => !c.closed)
  await until('the idle connections closed', () => idle.every((c) => c.closed), 20_000)
  t.same([...new Set(idle.map((c) => split(c.received).body))], [TIMED_OUT], 'each closed with a 408')
  // A slot is free once the server has run its socket's close, which can come an event-loop turn
  // after the client saw the socket end (a new connection is accepted in the loop's poll phase,
  // closes run after it): a connection refused meanwhile is tried again, and counted. A refusal is
  // written as the connection is accepted: one still open 200 ms after it opened is in.
  const meanwhile: string[] = []
  let again: Connection
  for (let attempt = 0; ; attempt++) {
    all.push(again = open(port, '127.0.0.2'))
    await new Promise((resolve) => setTimeout(resolve, 200))
    if (!again.closed || attempt === 20) break
    meanwhile.push(again.received)
  }
  t.equal((await ask(again, '/healthz')).statusLine, 'HTTP/1.1 200 OK', 'their slots are free again')
  t.ok(meanwhile.every((received) => split(received).body === TOO_MANY),
    `refused meanwhile with the 503: ${meanwhile.length}`)
  const refusedMeanwhile = meanwhile.length

  await until('the end of the episode logged',
    () => logLines(server.output(), 'connections accepted again').length > 0, 20_000)
  t.match(logLines(server.output(), 'connections accepted again'), [{ level: 30, refused: 382 + refusedMeanwhile }],
    'its end is logged once, with the count refused')
  t.equal(logLines(server.output(), 'connections refused').length, 1)
})

t.test('an idle keep-alive connection is closed after KEEP_ALIVE_TIMEOUT_MS', async (t) => {
  const { app } = await buildTestApp(t, {}, { KEEP_ALIVE_TIMEOUT_MS: '1000' })
  const port = Number(new URL(await app.listen({ host: '127.0.0.1', port: 0 })).port)
  const connection = open(port, '127.0.0.6')
  t.teardown(() => connection.socket.destroy())
  const answer = await ask(connection, '/healthz')
  t.equal(answer.statusLine, 'HTTP/1.1 200 OK')
  t.equal(answer.headers['keep-alive'], 'timeout=1')
  connection.received = ''
  await until('the idle connection closed', () => connection.closed, 10_000)
  t.equal(connection.received, '', 'closed without a word')
})

t.test('a client that stops reading its answers loses its connection once nothing has moved for a while', async (t) => {
  // Neither idle (a request is under way) nor slow to send: without a timeout of its own, the
  // connection and its answers' bytes would be held for as long as the client keeps it open.
  const { app } = await buildTestApp(t, {}, { HEADERS_TIMEOUT_MS: '1000', REQUEST_TIMEOUT_MS: '1000' })
  const port = Number(new URL(await app.listen({ host: '127.0.0.1', port: 0 })).port)
  const connection = open(port, '127.0.0.7')
  t.teardown(() => connection.socket.destroy())
  const opened = () =>
    new Promise<number>((resolve, reject) => app.server.getConnections((err, n) => err ? reject(err) : resolve(n)))
  // far more than the sockets' buffers hold (the document is about 125 kB), none of it read
  connection.socket.pause()
  connection.socket.write('GET /v1/openapi.json HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(200))
  let count = 1
  const deadline = Date.now() + 15_000
  while (count > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 200))
    count = await opened()
  }
  t.equal(count, 0, 'the server closed the stalled connection')
})

t.test('an app that listens has the caps of the real server: buildApp applies them', async (t) => {
  const { app } = await buildTestApp(t, {}, { MAX_CONNECTIONS_PER_IP: '2' })
  const port = Number(new URL(await app.listen({ host: '127.0.0.1', port: 0 })).port)
  const connections = Array.from({ length: 3 }, () => open(port, '127.0.0.8'))
  t.teardown(() => { for (const c of connections) c.socket.destroy() })
  await until('one refused', () => refused(connections) === 1, 10_000)
  t.equal(split(connections.find((c) => c.closed)!.received).body, TOO_MANY, 'past MAX_CONNECTIONS_PER_IP: 503')
  const served = connections.find((c) => !c.closed)!
  t.equal((await ask(served, '/healthz')).statusLine, 'HTTP/1.1 200 OK', 'the others are served')
})
