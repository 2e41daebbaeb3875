// The connection caps against the open-file limit; the limit as the process has it; stalled
// readers closed, slow ones not.
import { spawnSync } from 'node:child_process'
import { createServer } from 'node:http'
import { connect, type Socket } from 'node:net'
import t from 'tap'
import { FILES_RESERVED, closeStalledWriters, connectionCaps, openFileLimit } from '../../src/http/connections.ts'
import { REPO_ROOT } from '../helper.ts'

t.test('openFileLimit is the limit the process has: Node raises its soft limit to the hard one', async (t) => {
  const hard = spawnSync('sh', ['-c', 'ulimit -Hn'], { encoding: 'utf8' }).stdout.trim()
  t.equal(openFileLimit(), hard === 'unlimited' ? undefined : Number(hard))
  const lowered = spawnSync('prlimit', ['--nofile=512:4096', process.execPath, '--import', 'tsx', '-e',
    'import("./src/http/connections.ts").then((m) => process.stdout.write(String(m.openFileLimit())))'], { cwd: REPO_ROOT, encoding: 'utf8' })
  t.equal(lowered.stdout, '4096', lowered.stderr)
})

t.test('the caps are kept FILES_RESERVED under the open-file limit; the cap per address in proportion', async (t) => {
  t.equal(FILES_RESERVED, 256)
  const configured = { maxConnections: 10000, maxPerAddress: 1000 }
  t.same(connectionCaps(configured, 20000), configured, 'room enough: unchanged')
  t.same(connectionCaps(configured, 10256), configured, 'exactly room enough')
  t.same(connectionCaps(configured, undefined), configured, 'no limit known: unchanged')
  t.same(connectionCaps(configured, 1024), { maxConnections: 768, maxPerAddress: 77 })
  t.same(connectionCaps({ maxConnections: 10000, maxPerAddress: 0 }, 1024), { maxConnections: 768, maxPerAddress: 0 }, 'no cap per address stays none')
  t.same(connectionCaps({ maxConnections: 10000, maxPerAddress: 10000 }, 1024), { maxConnections: 768, maxPerAddress: 768 })
  t.same(connectionCaps(configured, 100), { maxConnections: 1, maxPerAddress: 1 }, 'a limit under the reserve leaves one connection')
})

t.test('closeStalledWriters: a reader whose answer stopped moving is closed, a slow one is not', async (t) => {
  // An answer far larger than the sockets' buffers, so that most of it waits in the server process.
  const body = Buffer.alloc(64 << 20, 'x')
  const server = createServer((req, res) => {
    res.writeHead(200, { 'content-length': body.length })
    res.end(body)
  })
  closeStalledWriters(server, 1000, 200)
  // the server's side of each connection, by the client's port: a paused client would not see its close
  const closedAt = new Map<number, number>()
  server.on('connection', (socket: Socket) => {
    const port = socket.remotePort!
    socket.on('close', () => closedAt.set(port, Date.now()))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => server.close())
  const port = (server.address() as { port: number }).port
  const client = async () => {
    const socket = connect({ host: '127.0.0.1', port })
    const state = { socket, received: 0 }
    socket.on('data', (d: Buffer) => { state.received += d.length })
    socket.on('error', () => {})
    socket.pause()
    socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n')
    await new Promise((resolve) => socket.once('connect', resolve))
    return state
  }
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
  const started = Date.now()
  const stalled = await client()
  const slow = await client()
  t.teardown(() => { stalled.socket.destroy(); slow.socket.destroy() })
  // the slow one reads for 5 ms every 600 ms: for 3.6 s, over three times the stall allowed
  const bursts: number[] = []
  for (let i = 0; i < 6; i++) {
    await sleep(600)
    const before = slow.received
    slow.socket.resume()
    await sleep(5)
    slow.socket.pause()
    bursts.push(slow.received - before)
  }
  const stalledClosed = closedAt.get(stalled.socket.localPort!)
  t.ok(stalledClosed !== undefined, 'the stalled reader is closed')
  t.ok(stalledClosed! - started >= 1000 && stalledClosed! - started < 2500, `after 1 s without progress, within a sweep (${stalledClosed! - started} ms)`)
  t.notOk(closedAt.has(slow.socket.localPort!), 'the slow reader is not')
  t.ok(bursts.every((n) => n > 0) && slow.received < body.length, `it read in every burst, and had more to read (${bursts.join(', ')} of ${body.length})`)
})
