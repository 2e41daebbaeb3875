// A burst of SIGHUPs to a real server: the first starts a reload, those that come while it runs
// are merged into one more reload after it, then the server is idle again.
import { readdirSync } from 'node:fs'
import t from 'tap'
import { tmpDataDir } from '../helper.ts'
import { startServer } from '../run.ts'
import { setTimeout as sleep } from 'node:timers/promises'

t.test('ten SIGHUPs while a reload runs: two reloads', async (t) => {
  const dir = tmpDataDir(t)
  // 100,000 sites, each reload verified and indexed in the worker: a reload lasts far longer
  // than the burst of signals below
  const server = await startServer({ DATA_DIR: dir, SANDBOX_SITE_COUNT: '100000', INDEX_WORKER_MIN_MB: '0' })
  t.teardown(() => server.stop('SIGKILL'))
  const reloads = () =>
    server.output().split('\n').filter((l) => l.includes('"msg":"datasets reloaded"')).map((l) => JSON.parse(l))
  server.child.kill('SIGHUP')
  await sleep(50) // the first signal is handled on its own and starts the reload
  for (let i = 0; i < 9; i++) {
    server.child.kill('SIGHUP')
    await sleep(10)
  }
  for (let i = 0; i < 600 && reloads().length < 2; i++) await sleep(50)
  await sleep(1000) // time for a third reload to show, were there one
  const done = reloads()
  t.same(done.map((r) => [r.reason, r.datasets[0].site_count]), [['SIGHUP', 100000], ['SIGHUP', 100000]], 'two reloads')
  t.equal(done[0].requests, 1)
  t.ok(done[1].requests >= 1 && done[1].requests <= 9,
    `the second reload answered ${done[1].requests} signals (the kernel may merge signals sent close together)`)
  t.equal(await server.stop('SIGTERM'), 0)
})

t.test('a SIGHUP while the server boots: it lives on, and reloads once ready', async (t) => {
  const dir = tmpDataDir(t)
  const sent: string[] = []
  // first boot: the sandbox is generated (its temporary file shows) before the app is built
  const server = await startServer({ DATA_DIR: dir, SANDBOX_SITE_COUNT: '100000' }, 120_000, {
    onSpawn: (child) => {
      const poll = setInterval(() => {
        if (!readdirSync(dir).some((name) => name.startsWith('.sandbox.db.'))) return
        clearInterval(poll)
        child.kill('SIGHUP')
        sent.push('SIGHUP')
      }, 5)
      child.on('exit', () => clearInterval(poll))
    }
  })
  t.teardown(() => server.stop('SIGKILL'))
  t.same(sent, ['SIGHUP'], 'the signal went while the sandbox was being generated')
  const reloads = () =>
    server.output().split('\n').filter((l) => l.includes('"msg":"datasets reloaded"')).map((l) => JSON.parse(l))
  for (let i = 0; i < 600 && reloads().length < 1; i++) await sleep(50)
  t.same(reloads().map((r) => [r.reason, r.datasets[0].site_count]), [['SIGHUP', 100000]], 'one reload, once ready')
  t.equal(await server.stop('SIGTERM'), 0)
})
