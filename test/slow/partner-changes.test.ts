// Partner changes cost what changed (issue 50): two real instances on one DATA_DIR without Redis,
// 10,000 partners, the CLI as a process. An instance learns of partner changes from control.db's
// partner_changes (moved only by writes to the partners table), never from the other instance's
// heartbeats and counter saves, and re-reads only the partners that changed.
import { readFileSync } from 'node:fs'
import t from 'tap'
import { PartnerStore, controlPath } from '../../src/partners/store.ts'
import { site, tmpDataDir, writeFixture } from '../helper.ts'
import { burstLatencies, burstP99s, rowsRead, sleep, until } from '../latency.ts'
import { admin, startServer, type Server } from '../run.ts'

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
    for (const server of servers) {
      // the log is written asynchronously: its line may come after the 403
      await until('the reload line', async () => reloadLines(server).length > 0)
      t.match(reloadLines(server).at(-1), /"partners":10000,"changed":1,/)
    }

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
  const writer = new PartnerStore(controlPath(dataDir))
  t.teardown(() => writer.close())
  const readBefore = await rowsRead(a)
  const [figures] = await burstLatencies([a], tokens.meter, async () => {
    for (let i = 0; i < 5; i++) {
      writer.update(`p${100 + i}`, { maxResults: 50 + i }) // one a refresh: five refreshes with a change
      await sleep(REFRESH_MS + 100)
    }
  })
  t.equal(await rowsRead(a) - readBefore, 5, 'five rows read for five changes')
  t.same(figures.others, [], 'every request answered 200')
  t.comment(burstP99s(figures))
})
