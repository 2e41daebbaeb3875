// The bench's floor route (scripts/bench-floor.ts) answers what the bench counts it for: a cached
// answer with the service's headers for a known token, refusals otherwise, one access line each.
// A floor that answered 401s or 400s would make its ratio meaningless.
import t from 'tap'
import Fastify from 'fastify'
import floor from '../../scripts/bench-floor.ts'

async function floorApp (lines: string[]) {
  const app = Fastify({ logger: false })
  app.get('/', async () => ({ hello: 'world' }))
  await app.register(floor, { tokens: ['tok-a', 'tok-b'], out: { write: (text: string) => lines.push(...text.split('\n').filter(Boolean)) } })
  return app
}
const flushed = () => new Promise((resolve) => setImmediate(resolve))

t.test('a known token gets the same bytes and ETag again, with the five headers and a line each', async (t) => {
  const lines: string[] = []
  const app = await floorApp(lines)
  const url = '/v1/sites/nearest?lat=43.9058&lng=7.6000'
  const first = await app.inject({ url, headers: { authorization: 'Bearer tok-b' } })
  const again = await app.inject({ url, headers: { authorization: 'bearer  tok-b' } })
  t.equal(first.statusCode, 200)
  t.same(Object.keys(first.headers).filter((h) => h !== 'date' && h !== 'connection').sort(),
    ['cache-control', 'content-length', 'content-type', 'etag', 'vary', 'x-request-id'])
  t.match(first.headers['x-request-id'], /^[0-9a-f-]{36}$/)
  t.not(first.headers['x-request-id'], again.headers['x-request-id'])
  t.equal(first.headers['cache-control'], 'private, max-age=60')
  t.equal(first.headers['content-type'], 'application/json; charset=utf-8')
  t.equal(again.headers.etag, first.headers.etag)
  t.equal(again.body, first.body)
  t.equal(JSON.parse(first.body).latitude, 43.9058)
  await flushed()
  t.equal(lines.length, 2)
  const line = JSON.parse(lines[0])
  t.same({ ...line, time: 0, ms: 0 }, { level: 30, time: 0, reqId: first.headers['x-request-id'], method: 'GET', url, ip: '127.0.0.1', status: 200, ms: 0, msg: 'request' })
  const other = await app.inject({ url: '/v1/sites/nearest?lat=43.9058&lng=7.6001', headers: { authorization: 'Bearer tok-a' } })
  t.not(other.headers.etag, first.headers.etag)
})

t.test('refusals: no token, an unknown one, a bad query; the bare route keeps no hook of the floor', async (t) => {
  const lines: string[] = []
  const app = await floorApp(lines)
  const url = '/v1/sites/nearest?lat=43.9&lng=7.6'
  t.equal((await app.inject({ url })).statusCode, 401)
  t.equal((await app.inject({ url, headers: { authorization: 'Bearer tok-c' } })).statusCode, 401)
  t.equal((await app.inject({ url: '/v1/sites/nearest?lat=91&lng=7.6', headers: { authorization: 'Bearer tok-a' } })).statusCode, 400)
  t.equal((await app.inject({ url: '/v1/sites/nearest?lat=43.9', headers: { authorization: 'Bearer tok-a' } })).statusCode, 400)
  await flushed()
  t.equal(lines.length, 4, 'a line for each refusal')
  const bare = await app.inject({ url: '/' })
  t.equal(bare.body, '{"hello":"world"}')
  await flushed()
  t.equal(lines.length, 4, 'no line for the bare route')
})
