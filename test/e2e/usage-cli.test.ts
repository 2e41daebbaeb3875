// The operator's view of a partner's usage, no token needed, over real processes: known requests
// (accepted, 400, 403, 429, and some that are no one's) sent with a partner's token; then
// `partners usage SLUG --json` shows what the partner's GET /usage?expand=telemetry shows, and
// its history day holds the exact counts; both survive a restart. With Redis and two instances,
// each instance's counts add up, nothing lost at a clean shutdown. `partners report` judges the
// go-live rule. (The partner is made, and the text and refusals read, by the CLI's main() in
// this process: the JSON reports are the processes' own.)
import t from 'tap'
import { tmpDataDir } from '../helper.ts'
import { adminAsync, adminInProcess, startServer, type Server } from '../run.ts'
import { redisMissing, startRedis } from '../redis.ts'
import { setTimeout as sleep } from 'node:timers/promises'

/** Waits, if need be, so that the next few seconds stay within one UTC minute (and day). */
async function awayFromMinuteEnd () {
  const intoMinute = Date.now() % 60_000
  if (intoMinute > 45_000) await sleep(60_000 - intoMinute + 200)
}

const get = async (server: Server, path: string, token?: string) => {
  const res = await fetch(`${server.url}${path}`, token ? { headers: { authorization: `Bearer ${token}` } } : {})
  await res.arrayBuffer()
  return res.status
}

const usageOf = async (server: Server, token: string) =>
  (await fetch(`${server.url}/v1/usage?expand=telemetry&api_key=${token}`)).json()

async function cli (args: string[], env: Record<string, string>) {
  const r = await adminAsync(args, env)
  if (r.status !== 0) throw new Error(`admin ${args.join(' ')}: exit ${r.status}: ${r.stderr}`)
  return JSON.parse(r.stdout)
}

interface Report {
  timestamp?: string
  client?: unknown
  history?: unknown
  windows: Record<string, { resets_at: string | null, resets_in_seconds: number | null }>
}

/**
 * The report without what depends on the moment of asking; resets to the second (the counters are saved per
 * second).
 */
function comparable (report: Report) {
  const { timestamp: _t, client: _c, history: _h, ...rest } = report
  const windows = Object.fromEntries(Object.entries(rest.windows).map(([name, w]) => {
    const { resets_at: at, resets_in_seconds: _s, ...kept } = w
    return [name, { ...kept, resets_second: at === null ? null : at.slice(0, 19) }]
  }))
  return { ...rest, windows }
}

/** The requests of the test, by what they should count as: 5 accepted (one 400, one 403), 2 refused. */
async function knownRequests (server: Server, token: string) {
  const statuses: number[] = []
  for (let i = 0; i < 3; i++) {
    statuses.push(await get(server, `/v1/sites/nearest?lat=51.5&lng=-0.1${i === 0 ? '' : `&limit=${i}`}`, token))
  }
  statuses.push(await get(server, '/v1/sites/nearest?lat=95&lng=0', token)) // 400
  statuses.push(await get(server, '/v1/sites?lat=51.5&lng=-0.1&category_id=3', token)) // 403: category not permitted
  statuses.push(await get(server, '/v1/sites/nearest?lat=51.5&lng=-0.1', token)) // 429: 5 a minute
  statuses.push(await get(server, '/v1/sites/nearest?lat=51.5&lng=-0.1', token)) // 429
  // no one's: no token, an unknown token; and /usage, which is never counted
  statuses.push(await get(server, '/v1/sites/nearest?lat=51.5&lng=-0.1'))
  statuses.push(await get(server, '/v1/sites/nearest?lat=51.5&lng=-0.1', 'lsp_unknown'))
  statuses.push(await get(server, '/v1/usage', token))
  return statuses
}

t.test('without STATE_URL: the CLI shows /usage and the exact history, and both survive a restart', async (t) => {
  const dir = tmpDataDir(t)
  const env = { DATA_DIR: dir, SANDBOX_SITE_COUNT: '2000', NODE_ENV: 'production', COUNTER_SAVE_MS: '200' }
  const created = JSON.parse(
    (await adminInProcess(['partners', 'create', '--name', 'Acme', '--tier', 'growth', '--json'], env)).stdout)
  t.equal((await adminInProcess(['partners', 'update', 'acme', '--limit-minute', '5'], env)).status, 0)
  const token = created.token as string
  const server = await startServer(env)
  t.teardown(() => server.stop('SIGKILL'))

  await awayFromMinuteEnd()
  t.same(await knownRequests(server, token), [200, 200, 200, 400, 403, 429, 429, 401, 401, 200])
  await sleep(600) // a save or two
  const live = await usageOf(server, token)
  const shown = await cli(['partners', 'usage', 'acme', '--json'], env)
  t.same(Object.keys(shown), ['timestamp', 'partner', 'windows', 'telemetry', 'history'],
    'the report\'s keys (no client: the CLI has no caller) and the history')
  t.same(comparable(shown), comparable(live), 'the windows, rows and telemetry of /usage?expand=telemetry')
  t.equal(live.telemetry.events, 7, 'seven events: the requests with the partner\'s token, but /usage')
  const rows = live.windows.day.rows as number
  t.ok(rows >= 3, `${rows} rows answered`)
  const today = new Date().toISOString().slice(0, 10)
  t.equal(shown.history.length, 7, 'seven days by default')
  const day = shown.history[6]
  const minute = live.telemetry.recent_events[0].timestamp.slice(0, 16) + 'Z'
  const expected = {
    date: today, requests: 7, accepted: 5, refused: 2, client_errors: { 400: 1, 403: 1 }, server_errors: {}, rows,
    busiest_minute: { minute, requests: 7 }
  }
  t.same(day, expected, 'today\'s counts, exact')
  t.same(shown.history.slice(0, 6).map((d: { requests: number }) => d.requests), [0, 0, 0, 0, 0, 0],
    'the days before: none')
  const twoDays = await cli(['partners', 'usage', 'acme', '--json', '--days', '2'], env)
  t.same(twoDays.history.map((d: { date: string }) => d.date).at(-1), today, '--days 2: oldest first')

  t.equal(await server.stop('SIGTERM'), 0)
  const again = await startServer(env)
  t.teardown(() => again.stop('SIGKILL'))
  const after = await usageOf(again, token)
  t.same(after.telemetry, live.telemetry, 'the telemetry feed survived the restart')
  t.equal(await get(again, '/v1/sites/nearest?lat=51.5&lng=-0.1', token), 429, 'the minute is still full')
  await sleep(600)
  const later = await cli(['partners', 'usage', 'acme', '--json'], env)
  t.same(later.history[6], { ...expected, requests: 8, refused: 3, busiest_minute: later.history[6].busiest_minute },
    'the history survived, and goes on')
  t.ok([7, 8].includes(later.history[6].busiest_minute.requests),
    'the busiest minute: the 7 before, with the one after if it came in the same minute')
  t.equal(later.telemetry.events, 8)

  const text = await adminInProcess(['partners', 'usage', 'acme'], env)
  t.equal(text.status, 0)
  t.match(text.stdout, /^minute +5 +5 +0 /m, 'text: the windows')
  t.match(text.stdout, new RegExp(`^${today} +8 +5 +3 400:1 403:1 +0 `, 'm'), 'text: the history table')
  const report = await cli(['partners', 'report', '--json'], env)
  interface ReportLine { slug: string, requests_per_day_max: number, go_live: { ready: boolean, failures: string[] } }
  t.same(report.map((l: ReportLine) => [l.slug, l.requests_per_day_max, l.go_live]),
    [['acme', 8, {
      ready: false,
      failures: [
        'traffic on 1 of 7 days (needs 5)',
        // 429s count: what the partner asked for (7 or 8: the restart may have crossed a minute)
        `over the minute limit of 5 at ${later.history[6].busiest_minute.minute} ` +
          `(${later.history[6].busiest_minute.requests})`,
        '37.50% refused with 429 (needs under 1.00%)',
        '25.00% errors (needs under 1.00%)'
      ]
    }]],
    'the go-live verdict says which conditions fail')

  for (const [args, message] of [
    [['partners', 'usage', 'acme', '--days', '0'],
      '--days must be a whole number from 1 to 90 (USAGE_HISTORY_DAYS: the days kept)'],
    [['partners', 'report', '--days', '91'],
      '--days must be a whole number from 1 to 90 (USAGE_HISTORY_DAYS: the days kept)'],
    [['partners', 'usage', 'nobody'], "no partner with slug 'nobody'"]
  ] as const) {
    const r = await adminInProcess([...args], env)
    t.same([r.status, r.stderr], [message.startsWith('no partner') ? 1 : 2, `error: ${message}\n`], args.join(' '))
  }
  t.equal(await again.stop('SIGTERM'), 0)
})

t.test('with STATE_URL and two instances: the counts add up, ' +
  'nothing lost at a clean shutdown', { skip: redisMissing() }, async (t) => {
  const redis = await startRedis(t)
  const dirs = [tmpDataDir(t), tmpDataDir(t)]
  const env = { DATA_DIR: dirs[0], SANDBOX_SITE_COUNT: '2000', NODE_ENV: 'production', STATE_URL: redis.url }
  const token = JSON.parse(
    (await adminInProcess(['partners', 'create', '--name', 'Shared', '--tier', 'growth', '--json'], env)).stdout
  ).token as string
  t.equal((await adminInProcess(['partners', 'update', 'shared', '--limit-minute', '5'], env)).status, 0)
  const servers = [await startServer(env), await startServer({ ...env, DATA_DIR: dirs[1] })]
  for (const s of servers) t.teardown(() => s.stop('SIGKILL'))

  await awayFromMinuteEnd()
  // the known requests split over the two instances
  const statuses: number[] = []
  for (let i = 0; i < 3; i++) statuses.push(await get(servers[i % 2], '/v1/sites/nearest?lat=51.5&lng=-0.1', token))
  statuses.push(await get(servers[1], '/v1/sites/nearest?lat=95&lng=0', token))
  statuses.push(await get(servers[0], '/v1/sites?lat=51.5&lng=-0.1&category_id=3', token))
  statuses.push(await get(servers[1], '/v1/sites/nearest?lat=51.5&lng=-0.1', token))
  t.same(statuses, [200, 200, 200, 400, 403, 429])
  await sleep(1500) // each instance adds its counts every second
  const live = await usageOf(servers[0], token)
  const shown = await cli(['partners', 'usage', 'shared', '--json'], env)
  t.same(comparable(shown), comparable(live), 'the CLI reads the windows and telemetry in Redis')
  const rows = live.windows.day.rows as number
  const expected = { requests: 6, accepted: 5, refused: 1, client_errors: { 400: 1, 403: 1 }, server_errors: {}, rows }
  const { date: _d, busiest_minute: busiest, ...counts } = shown.history.at(-1)
  t.same(counts, expected, 'both instances\' counts, once each')
  t.equal(busiest.requests, 6)

  // the last requests, then a clean shutdown at once: each adds what it counted before it exits
  statuses.length = 0
  for (let i = 0; i < 4; i++) statuses.push(await get(servers[i % 2], '/v1/sites/nearest?lat=51.5&lng=-0.1', token))
  t.same(statuses, [429, 429, 429, 429])
  t.same(await Promise.all(servers.map((s) => s.stop('SIGTERM'))), [0, 0])
  const final = (await cli(['partners', 'usage', 'shared', '--json'], env)).history.at(-1)
  t.same([final.requests, final.refused, final.busiest_minute.requests], [10, 5, 10], 'nothing lost at the shutdown')
})
