// Rate limits and /usage through inject, with an injected clock: headers, 429 bodies,
// concurrency, what counts and what does not, rows, telemetry.
import t from 'tap'
import { buildTestApp, site } from '../helper.ts'
import { PartnerStore, controlPath } from '../../src/partners/store.ts'

let now = Date.UTC(2026, 10, 21, 12, 0, 0)
const clock = () => now
const sandbox = [
  site('s-1', 4, 51.5, -0.12, ['~fuel']), site('s-2', 7, 51.51, -0.12, ['~fuel']), site('s-3', 5, 51.52, -0.12)
]
const { app, tokens } = await buildTestApp(t, {
  sandbox,
  partners: [
    { name: 'Demo', slug: 'demo', tier: 'demo' },
    { name: 'Growth', slug: 'growth', tier: 'growth', limitOverrides: { minute: 5, hour: 'unlimited', day: 8 } },
    { name: 'Crowd', slug: 'crowd', tier: 'demo' },
    { name: 'Order', slug: 'order', tier: 'demo' },
    { name: 'Cached', slug: 'cached', tier: 'demo' }
  ]
}, {}, { clock })

const get = (slug: string, path: string, headers: Record<string, string> = {}) =>
  app.inject({ method: 'GET', url: `/v1${path}${path.includes('?') ? '&' : '?'}api_key=${tokens[slug]}`, headers })
const NEAR = '/sites?lat=51.5&lng=-0.12'
const usage = async (slug: string, expand = '') => JSON.parse((await get(slug, `/usage${expand}`)).body)

t.test('headers on every answer that reached the limiter', async (t) => {
  const res = await get('demo', NEAR)
  t.equal(res.statusCode, 200)
  t.equal(res.headers['ratelimit-policy'], '"minute";q=30;w=60, "hour";q=200;w=3600, "day";q=1000;w=86400')
  t.equal(res.headers.ratelimit, '"minute";r=29;t=60')
  t.equal(res.headers['x-ratelimit-limit'], '30')
  t.equal(res.headers['x-ratelimit-remaining'], '29')
  t.equal(res.headers['x-ratelimit-used'], '1')
  t.equal(res.headers['x-ratelimit-reset'], String(now / 1000 + 60))
  const badParam = await get('demo', '/sites?lat=91&lng=0')
  t.equal(badParam.statusCode, 400)
  t.equal(badParam.headers['x-ratelimit-used'], '2', 'a request refused at step 4 still counts and carries the fields')
  const noKey = await app.inject({ method: 'GET', url: '/v1/sites?lat=51.5&lng=-0.12' })
  t.notOk(noKey.headers['ratelimit-policy'], 'a request refused at auth never reached the limiter')
  const disabled = await get('demo', '/sites/by-tag?tag=~fuel')
  t.equal(disabled.statusCode, 403)
  t.notOk(disabled.headers['ratelimit-policy'], 'nor did one refused as feature_disabled')
  t.equal((await usage('demo')).windows.minute.used, 2)
})

t.test('429: Retry-After exact, the window in the body, then served again', async (t) => {
  now += 3_600_000 * 25 // a fresh day
  for (let i = 0; i < 5; i++) {
    t.equal((await get('growth', NEAR)).statusCode, 200)
    now += 1000
  }
  now += 500
  const refused = await get('growth', NEAR)
  t.equal(refused.statusCode, 429)
  t.same(JSON.parse(refused.body), {
    code: 'svc_partner_api_rate_limited',
    message: 'Rate limit exceeded for the minute window. Retry after 55 seconds.',
    data: { status: 429, window: 'minute', retry_after: 55 }
  })
  t.equal(refused.headers['retry-after'], '55')
  t.equal(refused.headers.ratelimit, '"minute";r=0;t=55')
  t.equal(refused.headers['ratelimit-policy'], '"minute";q=5;w=60, "day";q=8;w=86400', 'the unlimited hour is left out')
  t.equal(refused.headers['cache-control'], 'no-store')
  now += 54_000
  t.equal((await get('growth', NEAR)).statusCode, 429, 'a second early')
  now += 1000
  t.equal((await get('growth', NEAR)).statusCode, 200, 'Retry-After seconds later it is accepted')
  const u = await usage('growth')
  t.same(u.windows.minute, {
    limit: 5, used: 5, remaining: 0, window_seconds: 60, resets_in_seconds: 1,
    resets_at: new Date(now + 500).toISOString(), rows: 10
  }, 'the refused requests were not counted (2 rows per answer: sites of categories 4 and 7)')
  t.same(u.windows.hour, {
    limit: null, used: 6, remaining: null, window_seconds: 3600, resets_in_seconds: null, resets_at: null, rows: 12
  })
  t.same([u.windows.day.limit, u.windows.day.used, u.windows.day.remaining], [8, 6, 2])
  now += 60_000
  t.equal((await get('growth', NEAR)).statusCode, 200)
  t.equal((await get('growth', NEAR)).statusCode, 200)
  const dayFull = await get('growth', NEAR)
  t.same(JSON.parse(dayFull.body).data.window, 'day', 'the day window refuses once its 8 are used')
  t.equal(dayFull.headers.ratelimit, '"day";r=0;t=' + dayFull.headers['retry-after'],
    'the tightest window is the day now')
})

t.test('100 simultaneous requests at a limit of 30: exactly 30 accepted', async (t) => {
  now += 86_400_000
  const answers = await Promise.all(Array.from({ length: 100 }, () => get('crowd', NEAR)))
  const counts = answers.reduce<Record<number, number>>(
    (c, r) => ({ ...c, [r.statusCode]: (c[r.statusCode] ?? 0) + 1 }), {}
  )
  t.same(counts, { 200: 30, 429: 70 })
  t.equal((await usage('crowd')).windows.minute.used, 30)
})

t.test('/usage: never counted, answers while limited, report shape, telemetry', async (t) => {
  now += 86_400_000
  for (let i = 0; i < 3; i++) await get('order', NEAR)
  await get('order', '/sites/nearest?lat=51.5&lng=-0.12')
  await get('order', '/sites/nearest?lat=-40&lng=100')
  await get('order', '/sites?lat=0&lng=0')
  for (let i = 0; i < 24; i++) await get('order', NEAR) // 30 accepted in all
  const limited = await get('order', NEAR)
  t.equal(limited.statusCode, 429)
  const first = await get('order', '/usage')
  t.equal(first.statusCode, 200, 'answers while limited')
  t.notOk(first.headers['ratelimit-policy'], '/usage never reaches the limiter')
  await get('order', '/usage')
  const report = await usage('order', '?expand=telemetry')
  t.same(Object.keys(report), ['timestamp', 'partner', 'client', 'windows', 'telemetry'])
  t.equal(report.timestamp, new Date(now).toISOString())
  t.same(report.partner, {
    id: report.partner.id, slug: 'order', name: 'Order', environment: 'sandbox', is_sandbox: true
  })
  t.match(report.partner.id, /^ptn_[0-9a-f]{12}$/)
  t.same(report.client, { ip: '127.0.0.1' })
  t.same(report.windows.minute, {
    limit: 30, used: 30, remaining: 0, window_seconds: 60, resets_in_seconds: 60,
    resets_at: new Date(now + 60_000).toISOString(),
    rows: 3 * 2 + 1 + 0 + 0 + 24 * 2 // /sites finds s-1 and s-2 (demo allow-list 4,7), nearest 1, null 0, 400 0
  })
  t.equal(report.windows.day.used, 30)
  t.same(report.telemetry.windows, {
    minute: { requests: 31, rows: 55, errors: 2 },
    hour: { requests: 31, rows: 55, errors: 2 },
    day: { requests: 31, rows: 55, errors: 2 }
  }, 'the 31st refused request is an event and an error; /usage calls are not events')
  t.equal(report.telemetry.feed_size, 200)
  t.equal(report.telemetry.events, 31)
  t.equal(report.telemetry.recent_events.length, 10)
  t.same(report.telemetry.recent_events[0], {
    timestamp: new Date(now).toISOString(), endpoint: 'sites', status: 429, rows: 0,
    duration_ms: report.telemetry.recent_events[0].duration_ms, dataset: null, cache: 'none'
  })
  t.same(report.telemetry.recent_events[1].cache, 'hit', 'repeated questions came from the cache')
  t.same(report.telemetry.recent_events.map((e: { rows: number }) => e.rows).slice(1), [2, 2, 2, 2, 2, 2, 2, 2, 2])
  const invalid = await get('order', '/usage?expand=more')
  t.same(JSON.parse(invalid.body), {
    code: 'rest_invalid_param', message: 'Invalid parameter(s): expand.',
    data: { status: 400, params: { expand: 'expand must be telemetry' } }
  })
  t.notOk((await usage('order')).telemetry, 'no telemetry block unless asked')
})

t.test('the telemetry feed keeps the latest 200 events', async (t) => {
  const { app: big, tokens: bigTokens } = await buildTestApp(t, {
    sandbox,
    partners: [{
      name: 'Big', slug: 'big', tier: 'scale',
      limitOverrides: { minute: 'unlimited', hour: 'unlimited', day: 'unlimited' }
    }]
  }, {}, { clock })
  for (let i = 0; i < 250; i++) {
    await big.inject({ method: 'GET', url: `/v1/sites?lat=51.5&lng=-0.12&radius=${1 + i}&api_key=${bigTokens.big}` })
  }
  const report = JSON.parse(
    (await big.inject({ method: 'GET', url: `/v1/usage?expand=telemetry&api_key=${bigTokens.big}` })).body
  )
  t.equal(report.telemetry.events, 200)
  t.equal(report.telemetry.windows.minute.requests, 200, 'derived from the feed: less than the authoritative count')
  t.equal(report.windows.minute.used, 250)
  t.equal(report.windows.minute.limit, null)
})

t.test('cached answers still count', async (t) => {
  now += 86_400_000
  const a = await get('cached', NEAR)
  const b = await get('cached', NEAR)
  t.equal(a.body, b.body)
  t.same([a.headers['x-ratelimit-used'], b.headers['x-ratelimit-used']], ['1', '2'],
    'rate-limit fields are fresh on a cached answer')
  t.same((await usage('cached')).windows.minute.rows, 4)
})

t.test('a HEAD counts as a request and answers no rows', async (t) => {
  now += 86_400_000
  const cases = [['GET', undefined], ['HEAD', undefined], ['HEAD', 'none'], ['GET', 'none']] as const
  for (const [method, ifNoneMatch] of cases) {
    const url = `/v1${NEAR}&api_key=${tokens.cached}`
    const etag = ifNoneMatch && (await app.inject({ method: 'HEAD', url })).headers.etag
    const r = await app.inject({ method, url, headers: etag ? { 'if-none-match': etag as string } : {} })
    t.equal(r.statusCode, etag ? 304 : 200, `${method}${etag ? ' conditional' : ''}`)
  }
  const report = await usage('cached')
  t.same([report.windows.minute.used, report.windows.minute.rows], [6, 2],
    'six requests; the first GET\'s two sites are the only rows answered')
})

t.test('a limit lowered and raised again within the day: every request of the day still counts', async (t) => {
  let at = Date.UTC(2026, 10, 21, 12, 0, 0)
  const { app, dataDir, tokens } = await buildTestApp(t, {
    sandbox,
    partners: [{
      name: 'Varied', slug: 'varied', tier: 'growth',
      limitOverrides: { minute: 'unlimited', hour: 'unlimited', day: 10 }
    }]
  }, {}, { clock: () => at })
  const operator = new PartnerStore(controlPath(dataDir))
  t.teardown(() => operator.close())
  const day = (limit: number) => {
    operator.update('varied', { limitOverrides: { minute: 'unlimited', hour: 'unlimited', day: limit } })
    app.partners.refresh()
  }
  const send = async () => {
    at += 1000
    return (await app.inject({
      method: 'GET', url: `/v1${NEAR}`, headers: { authorization: `Bearer ${tokens.varied}` }
    })).statusCode
  }
  for (let i = 0; i < 8; i++) t.equal(await send(), 200)
  day(3) // e.g. a move to a smaller tier
  t.equal(await send(), 429, 'eight in the day, over the new limit')
  const usageOf = async () => JSON.parse((await app.inject({
    method: 'GET', url: '/v1/usage', headers: { authorization: `Bearer ${tokens.varied}` }
  })).body)
  t.same([(await usageOf()).windows.day.used, (await usageOf()).windows.day.remaining], [8, 0],
    'the day still holds all eight')
  day(10) // and back within the day
  const statuses = []
  for (let i = 0; i < 4; i++) statuses.push(await send())
  t.same(statuses, [200, 200, 429, 429], 'two more make ten in the day: no more')
  t.equal((await usageOf()).windows.day.used, 10)
})
