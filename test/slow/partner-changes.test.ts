// Partner changes cost what changed (issue 50): two real instances on one DATA_DIR without Redis,
// 10,000 partners, the CLI as a process. An instance learns of partner changes from control.db's
// partner_changes (moved only by writes to the partners table), never from the other instance's
// heartbeats and counter saves, and re-reads only the partners that changed.
import { readFileSync } from 'node:fs'
import http from 'node:http'
import { performance } from 'node:perf_hooks'
import t from 'tap'
import { PartnerStore, controlPath } from '../../src/partners/store.ts'
import { site, tmpDataDir, writeFixture } from '../helper.ts'
import { admin, metricsUrlOf, parseMetrics, startServer, type Server } from '../run.ts'

const PARTNERS = 10_000
const REFRESH_MS = 1000

const dataDir = tmpDataDir(t, 'lsp-partner-changes-')
const tokens = writeFixture(dataDir, {
  sandbox: [site('s1', 4, 51.5, -0.1)],
  partners: [
    { name: 'Meter', slug: 'meter', limitOverrides: { minute: 'unlimited', hour: 'unlimited', day: 'unlimited' } },
    { name: 'Probe', slug: 'probe' }
  ]
})
const filler = new PartnerStore(controlPath(dataDir))
filler.db.transaction(() => {
  for (let i = 2; i < PARTNERS; i++) filler.create({ name: `Partner ${i}`, slug: `p${i}` })
})()
filler.close()

const env = {
  DATA_DIR: dataDir, NODE_ENV: 'test', PARTNER_REFRESH_MS: String(REFRESH_MS), PILOT_APP_URL: 'https://p.test'
}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Partner rows the instance has read from control.db since it started (its metric). */
async function rowsRead (server: Server): Promise<number> {
  const metrics = parseMetrics(await (await fetch(metricsUrlOf(server))).text())
  return metrics.get('lsp_partner_rows_read_total') ?? NaN
}

const reloadLines = (server: Server) =>
  server.output().split('\n').filter((line) => line.includes('"msg":"partners reloaded"'))

/** CPU seconds the process has used (user and system), from /proc. */
function cpuSeconds (pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ')
  return (Number(fields[11]) + Number(fields[12])) / 100 // utime, stime: in clock ticks of 1/100 s
}

async function status (server: Server, token: string): Promise<number> {
  const res = await fetch(`${server.url}/v1/usage`, { headers: { authorization: `Bearer ${token}` } })
  await res.arrayBuffer()
  return res.status
}

/** Waits until `check` holds; the milliseconds it took. */
async function until (what: string, check: () => Promise<boolean>, timeoutMs = 10_000): Promise<number> {
  const start = Date.now()
  for (;;) {
    if (await check()) return Date.now() - start
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`)
    await sleep(20)
  }
}

/**
 * Latencies (ms) of GET /v1/usage sent at a steady rate for `ms`, whatever the answers' pace: a
 * stalled event loop delays every request sent meanwhile, as it does a real client's.
 */
async function latencies (server: Server, ms: number): Promise<number[]> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 })
  const url = `${server.url}/v1/usage`
  const times: number[] = []
  const failures: number[] = []
  const sent: Promise<void>[] = []
  const one = () => new Promise<void>((resolve, reject) => {
    const start = performance.now()
    http.get(url, { agent, headers: { authorization: `Bearer ${tokens.meter}` } }, (res) => {
      res.resume()
      res.on('end', () => {
        if (res.statusCode === 200) times.push(performance.now() - start)
        else failures.push(res.statusCode!)
        resolve()
      })
    }).on('error', reject)
  })
  for (const end = Date.now() + ms; Date.now() < end;) {
    sent.push(one())
    await sleep(2)
  }
  await Promise.all(sent)
  agent.destroy()
  if (failures.length > 0) throw new Error(`answers other than 200: ${failures.slice(0, 5).join(', ')}`)
  return times
}

const p99 = (values: number[]) => [...values].sort((a, b) => a - b)[Math.ceil(values.length * 0.99) - 1]

const servers: Server[] = []
t.teardown(async () => { for (const server of servers) await server.stop('SIGKILL') })

t.test('two idle instances on one DATA_DIR: no partner reload from each other\'s heartbeats and counter saves',
  async (t) => {
    servers.push(await startServer(env), await startServer(env))
    const [a, b] = servers
    t.same([await rowsRead(a), await rowsRead(b)], [PARTNERS, PARTNERS], 'each read every partner once at boot')
    const cpuBefore = cpuSeconds(a.child.pid!)
    const start = Date.now()
    // counted requests to both, so that each saves counters as well as its heartbeat
    while (Date.now() - start < 5000) {
      for (const server of servers) {
        const res = await fetch(`${server.url}/v1/sites?lat=51.5&lng=-0.1`,
          { headers: { authorization: `Bearer ${tokens.meter}` } })
        t.equal(res.status, 200)
        await res.arrayBuffer()
      }
      await sleep(250)
    }
    const cpu = (cpuSeconds(a.child.pid!) - cpuBefore) / ((Date.now() - start) / 1000)
    t.comment(`instance A used ${(100 * cpu).toFixed(1)}% of a core over 5 s`)
    t.same([reloadLines(a), reloadLines(b)], [[], []], 'no "partners reloaded" on either instance')
    t.same([await rowsRead(a), await rowsRead(b)], [PARTNERS, PARTNERS], 'and no partner row read again')
    t.ok(cpu < 0.1, 'an idle instance uses under 10% of a core')
  })

t.test('a CLI change reaches both instances within PARTNER_REFRESH_MS + 1 s, re-reading that partner alone',
  async (t) => {
    const before = await Promise.all(servers.map(rowsRead))
    const suspended = admin(['partners', 'update', 'probe', '--status', 'suspended'], env)
    t.equal(suspended.status, 0, suspended.stderr)
    const took = await Promise.all(servers.map((server) =>
      until('the suspension', async () => await status(server, tokens.probe) === 403)))
    t.comment(`suspension applied ${took.join(' and ')} ms after the CLI exited`)
    for (const ms of took) t.ok(ms <= REFRESH_MS + 1000, `within ${REFRESH_MS + 1000} ms`)
    t.same((await Promise.all(servers.map(rowsRead))).map((n, i) => n - before[i]), [1, 1], 'one row read by each')
    for (const server of servers) t.match(reloadLines(server).at(-1), /"partners":10000,"changed":1,/)

    const rotated = admin(['partners', 'rotate', 'probe', '--json'], env)
    t.equal(rotated.status, 0, rotated.stderr)
    const token = JSON.parse(rotated.stdout).token as string
    t.equal(admin(['partners', 'update', 'probe', '--status', 'active'], env).status, 0)
    for (const server of servers) {
      await until('the new token', async () => await status(server, token) === 200)
      t.equal(await status(server, tokens.probe), 401, 'the old token is refused')
    }
    t.same((await Promise.all(servers.map(rowsRead))).map((n, i) => n - before[i]).every((n) => n <= 3), true,
      'three changes of one partner: at most three rows read')
  })

// The p99s are reported, not asserted: a latency depends on the machine's minute (figures go to the issue and the
// commit); what the test holds is the cause of the old stalls, whole-table reads.
t.test('10,000 partners: a burst of 5 updates reads 5 rows; /v1/usage p99 at rest and during it', async (t) => {
  const [a] = servers
  await latencies(a, 1000) // connections open, code warm
  const writer = new PartnerStore(controlPath(dataDir))
  t.teardown(() => writer.close())
  // at rest before and after the burst: the machine's other work changes over a run
  const before = await latencies(a, 4000)
  const readBefore = await rowsRead(a)
  const burst = latencies(a, 6000)
  for (let i = 0; i < 5; i++) {
    writer.update(`p${100 + i}`, { maxResults: 50 + i }) // one a refresh: five refreshes with a change
    await sleep(REFRESH_MS + 100)
  }
  const during = await burst
  t.equal(await rowsRead(a) - readBefore, 5, 'five rows read for five changes')
  const rest = [...before, ...await latencies(a, 4000)]
  const figures = `p99 at rest ${p99(rest).toFixed(1)} ms (${rest.length} requests), ` +
    `during the burst ${p99(during).toFixed(1)} ms (${during.length} requests)`
  t.comment(figures)
})
