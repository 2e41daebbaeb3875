// The bench's floor (bench/floor.ts) answers what the bench counts it for: a cached answer
// with the service's headers for a known token, a 429 with the limit's headers for a partner at its
// limit, refusals otherwise, one access line each. A floor that answered 401s or 400s would make
// its ratio meaningless.
import t from 'tap'
import Fastify from 'fastify'
import floor from '../floor.ts'

async function floorApp (lines: string[]) {
  const app = Fastify({ logger: false })
  app.get('/', async () => ({ hello: 'world' }))
  const out = { write: (text: string) => lines.push(...text.split('\n').filter(Boolean)) }
  await app.register(floor, { tokens: ['tok-a', 'tok-b', 'tok-c:3'], out })
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
  t.same({ ...line, time: 0, ms: 0 }, {
    level: 30, time: 0, reqId: first.headers['x-request-id'], method: 'GET', url, ip: '127.0.0.1', status: 200, ms: 0,
    msg: 'request'
  })
  // one thing changed at a time: the query, then the partner (its permissions are in the key)
  const otherPoint = await app.inject({
    url: '/v1/sites/nearest?lat=43.9058&lng=7.6001', headers: { authorization: 'Bearer tok-b' }
  })
  const otherPartner = await app.inject({ url, headers: { authorization: 'Bearer tok-a' } })
  t.equal(otherPoint.statusCode, 200)
  t.not(otherPoint.headers.etag, first.headers.etag)
  t.equal(otherPartner.body, first.body)
  t.not(otherPartner.headers.etag, first.headers.etag)
})

t.test('refusals: no token, an unknown one, a bad query; the bare route keeps no hook of the floor', async (t) => {
  const lines: string[] = []
  const app = await floorApp(lines)
  const url = '/v1/sites/nearest?lat=43.9&lng=7.6'
  const refused = [
    await app.inject({ url }),
    await app.inject({ url, headers: { authorization: 'Bearer tok-d' } }),
    await app.inject({ url: '/v1/sites/nearest?lat=91&lng=7.6', headers: { authorization: 'Bearer tok-a' } }),
    await app.inject({ url: '/v1/sites/nearest?lat=43.9', headers: { authorization: 'Bearer tok-a' } })
  ]
  t.same(refused.map((r) => r.statusCode), [401, 401, 400, 400])
  t.same(refused.map((r) => JSON.parse(r.body)), [
    {
      code: 'svc_partner_api_missing_key',
      message: 'An API key is required: send it as the api_key query parameter or an Authorization: Bearer header.',
      data: { status: 401 }
    },
    { code: 'svc_partner_api_invalid_key', message: 'The API key is not recognised.', data: { status: 401 } },
    { code: 'rest_bad_request', message: 'The request is malformed.', data: { status: 400 } },
    { code: 'rest_bad_request', message: 'The request is malformed.', data: { status: 400 } }
  ])
  for (const r of refused) {
    t.match(r.headers, {
      'x-request-id': /^[0-9a-f-]{36}$/, 'cache-control': 'no-store', 'content-type': 'application/json; charset=utf-8'
    })
  }
  await flushed()
  t.same(lines.map((line) => JSON.parse(line)).map((l) => [l.reqId, l.status]),
    refused.map((r) => [r.headers['x-request-id'], r.statusCode]), 'a line for each refusal')
  const bare = await app.inject({ url: '/' })
  t.equal(bare.body, '{"hello":"world"}')
  await flushed()
  t.equal(lines.length, 4, 'no line for the bare route')
})

t.test('a limited partner: its first requests answered, then 429s with the limit\'s headers, sliding', async (t) => {
  const lines: string[] = []
  const app = await floorApp(lines)
  const start = 1_800_000_000_250 // not on a whole second: the rounding of Retry-After and the reset shows
  const clock = { now: start }
  const realNow = Date.now
  Date.now = () => clock.now
  t.teardown(() => { Date.now = realNow })
  const url = '/v1/sites?lat=43.9&lng=7.6&radius=25'
  const headers = { authorization: 'Bearer tok-c' }
  const statuses: number[] = []
  for (let i = 0; i < 3; i++) {
    statuses.push((await app.inject({ url, headers })).statusCode)
    clock.now += 10_000
  }
  t.same(statuses, [200, 200, 200])
  clock.now = start + 57_500 // the first request leaves the window 2.5 s later
  const refused = await app.inject({ url, headers })
  t.equal(refused.statusCode, 429)
  t.same(JSON.parse(refused.body), {
    code: 'svc_partner_api_rate_limited',
    message: 'Rate limit exceeded for the minute window. Retry after 3 seconds.',
    data: { status: 429, window: 'minute', retry_after: 3 }
  })
  t.match(refused.headers, {
    'x-request-id': /^[0-9a-f-]{36}$/,
    'ratelimit-policy': '"minute";q=3;w=60',
    ratelimit: '"minute";r=0;t=3',
    'x-ratelimit-limit': '3',
    'x-ratelimit-remaining': '0',
    'x-ratelimit-used': '3',
    'x-ratelimit-reset': '1800000061', // (start + 60 s) / 1000, rounded up
    'retry-after': '3',
    'cache-control': 'no-store',
    'content-type': 'application/json; charset=utf-8'
  })
  clock.now = start + 60_000 // the first request has left the window
  t.equal((await app.inject({ url, headers })).statusCode, 200)
  t.equal((await app.inject({ url, headers })).statusCode, 429, 'the window is full again')
  const unlimited = await app.inject({ url: '/v1/sites?lat=43.9&lng=7.6', headers: { authorization: 'Bearer tok-a' } })
  t.equal(unlimited.statusCode, 200, 'an unlimited partner is not refused')
})

t.test('a limit that is not a whole number from 1 to the ring\'s size is refused at registration', async (t) => {
  for (const limit of ['abc', '0', '2.5', String(2 ** 20 + 1)]) {
    const app = Fastify({ logger: false })
    const registered = async () => {
      await app.register(floor, { tokens: [`tok:${limit}`], out: { write: () => true } }).ready()
    }
    await t.rejects(registered, new RegExp(`${limit.replace('.', '\\.')} is not a limit`))
  }
})
