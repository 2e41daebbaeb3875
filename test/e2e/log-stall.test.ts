// A log reader that stops: the real server's stdout is a pipe this test stops reading. The
// service goes on answering, holds at most LOG_BUFFER_MB of lines, and drops the rest; once the
// reader drains the pipe again, a warning line says how many were dropped, and the metric agrees.
// Every request answered has its access line or is among those dropped. A SIGTERM meanwhile ends
// the process within SHUTDOWN_TIMEOUT_MS on a blocking pipe (the compiled service, as npm start runs
// it); a file run on its own also runs the first tests through tsx, which makes the pipe non-blocking.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { closeSync, constants, openSync, symlinkSync, writeFileSync } from 'node:fs'
import { Socket } from 'node:net'
import { join } from 'node:path'
import t from 'tap'
import { REPO_ROOT, tmpDataDir } from '../helper.ts'
import { baseEnv, metricsUrlOf, node, parseMetrics, startServer } from '../run.ts'
import { setTimeout as sleep } from 'node:timers/promises'

interface Line { level: number, msg: string, dropped_lines?: number }
/** The complete lines of the output (the last may still be arriving). */
const logLines = (out: string): Line[] =>
  out.slice(0, out.lastIndexOf('\n') + 1).split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Line)

/** `count` requests on 16 connections; their statuses and how many of each. */
async function flood (url: string, count: number) {
  const statuses = new Map<number, number>()
  let next = 0
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (next < count) {
      next++
      const res = await fetch(url)
      await res.arrayBuffer()
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
    }
  }))
  return [...statuses]
}

/** The process's exit code, or 'running' if it has not exited within `ms`. */
const exitWithin = (child: ChildProcess, ms: number) =>
  Promise.race([
    new Promise<number | null>((resolve) =>
      child.exitCode === null ? child.on('exit', resolve) : resolve(child.exitCode)),
    sleep(ms).then(() => 'running' as const)
  ])

const HELD = /log lines held at exit were not written: their reader had taken nothing for \d+ ms/

t.test('a stalled log reader costs lines, counted and reported, not memory', async (t) => {
  const dir = tmpDataDir(t)
  const server = await startServer({
    DATA_DIR: dir, SANDBOX_SITE_COUNT: '200', NODE_ENV: 'production', LOG_BUFFER_MB: '1'
  })
  t.teardown(() => server.stop('SIGKILL'))
  const metricsUrl = metricsUrlOf(server)
  /** Access lines received, and lines the warnings say were dropped (one parse of the output). */
  const tally = () => {
    const lines = logLines(server.output())
    const warnings = lines.filter((l) => l.dropped_lines !== undefined)
    return {
      requests: lines.filter((l) => l.msg === 'request').length, warnings,
      dropped: warnings.reduce((sum, l) => sum + l.dropped_lines!, 0)
    }
  }
  const before = tally().requests

  server.child.stdout.pause()
  // about 250 bytes a line: 24,000 lines are 6 MB, far more than the 1 MB held plus the socket's
  // buffers (about 200 kB here) and this reader's
  const sent = 24_000
  t.same(await flood(`${server.url}/v1/sites/nearest?lat=51.5&lng=-0.1`, sent), [[401, sent]],
    'every request answered while nobody reads the log')

  server.child.stdout.resume()
  let seen = tally()
  for (let i = 0; i < 100 && seen.requests - before + seen.dropped < sent; i++) {
    await sleep(100)
    seen = tally()
  }
  t.ok(seen.warnings.length >= 1 && seen.warnings.every((l) => l.level === 40), 'warnings once the writer caught up')
  t.match(seen.warnings[0]?.msg,
    /^\d+ log lines were dropped: their reader did not keep up and more than LOG_BUFFER_MB were waiting$/)
  t.ok(seen.dropped > 0 && seen.dropped < sent, `some lines dropped (${seen.dropped}), not all`)
  t.equal(seen.requests - before + seen.dropped, sent, 'each request has its line or is counted as dropped')

  const metrics = parseMetrics(await (await fetch(metricsUrl)).text())
  t.equal(metrics.get('lsp_log_lines_dropped_total'), seen.dropped, 'the metric counts the same lines')
})

t.test('a SIGTERM while the reader has stopped: the close ends within SHUTDOWN_TIMEOUT_MS, ' +
  'the lines held are left', async (t) => {
  const server = await startServer({
    DATA_DIR: tmpDataDir(t), SANDBOX_SITE_COUNT: '200', NODE_ENV: 'production', LOG_BUFFER_MB: '1',
    SHUTDOWN_TIMEOUT_MS: '1000'
  })
  t.teardown(() => server.stop('SIGKILL'))
  server.child.stdout.pause()
  // 2 MB of lines: the pipe is full, the writer holds 1 MB
  t.same(await flood(`${server.url}/v1/sites/nearest?lat=51.5&lng=-0.1`, 8000), [[401, 8000]])
  server.child.kill('SIGTERM')
  t.equal(await exitWithin(server.child, 6000), 1,
    'exit 1 (the close timed out), not a process that waits for its reader')
  t.match(server.output(), HELD, 'stderr says the lines held were not written')
})

t.test('a SIGTERM while the reader is slow: every line is written before exit 0', async (t) => {
  const server = await startServer({
    DATA_DIR: tmpDataDir(t), SANDBOX_SITE_COUNT: '200', NODE_ENV: 'production', LOG_BUFFER_MB: '4',
    SHUTDOWN_TIMEOUT_MS: '10000'
  })
  t.teardown(() => server.stop('SIGKILL'))
  const before = logLines(server.output()).filter((l) => l.msg === 'request').length
  server.child.stdout.pause()
  t.same(await flood(`${server.url}/v1/sites/nearest?lat=51.5&lng=-0.1`, 8000), [[401, 8000]])
  server.child.kill('SIGTERM')
  await sleep(1500) // past the exit's one second without progress: the close waits for the reader
  server.child.stdout.resume()
  t.equal(await exitWithin(server.child, 8000), 0, 'exit 0')
  const lines = logLines(server.output())
  t.equal(lines.filter((l) => l.msg === 'request').length - before, 8000, 'every access line')
  t.equal(lines.at(-1)?.msg, 'closing', 'the close\'s own line last')
  t.notMatch(server.output(), HELD)
})

t.test('on a blocking pipe, the compiled service as npm start runs it: a SIGTERM ends it all the same', async (t) => {
  // tsx makes stdout non-blocking itself; this needs the service without it: npm test's build, or one made
  // here without the type check (npm test's own tsc does that) when the file runs on its own
  let server = join(REPO_ROOT, 'dist/src/server.js')
  if (process.env.TEST_BUILT !== '1') {
    const build = tmpDataDir(t, 'lsp-build-')
    const tsc = spawnSync(...node([join(REPO_ROOT, 'node_modules/typescript/bin/tsc'),
      '-p', join(REPO_ROOT, 'tsconfig.build.json'), '--outDir', build, '--sourceMap', 'false', '--noCheck']),
    { encoding: 'utf8' })
    t.equal(tsc.status, 0, tsc.stdout + tsc.stderr)
    symlinkSync(join(REPO_ROOT, 'node_modules'), join(build, 'node_modules'))
    writeFileSync(join(build, 'package.json'), '{"type":"module"}')
    server = join(build, 'src/server.js')
  }
  const fifo = join(tmpDataDir(t, 'lsp-fifo-'), 'stdout')
  spawnSync('mkfifo', [fifo])
  const readEnd = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK)
  const writeEnd = openSync(fifo, constants.O_WRONLY) // blocking: as a shell's pipe
  const child = spawn(...node([server]), {
    env: baseEnv({
      DATA_DIR: tmpDataDir(t), SANDBOX_SITE_COUNT: '200', NODE_ENV: 'production', LOG_BUFFER_MB: '1',
      SHUTDOWN_TIMEOUT_MS: '1000', PORT: '0', METRICS_PORT: '0'
    }),
    stdio: ['ignore', writeEnd, 'pipe']
  })
  closeSync(writeEnd)
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  let stderr = ''
  child.stderr!.on('data', (d) => { stderr += d })
  const reader = new Socket({ fd: readEnd, readable: true, writable: false })
  let out = ''
  reader.on('data', (d) => { out += d })
  let url: string | undefined
  for (let i = 0; i < 300 && !(url = /"msg":"Server listening at (http:\/\/[^"]+)"/.exec(out)?.[1]); i++) {
    await sleep(100)
  }
  t.ok(url, 'listening')
  reader.pause()
  t.same(await flood(`${url}/v1/sites/nearest?lat=51.5&lng=-0.1`, 8000), [[401, 8000]])
  child.kill('SIGTERM')
  t.equal(await exitWithin(child, 6000), 1, 'exit 1 (the close timed out), not a process held by a write under way')
  t.match(stderr, HELD)
  reader.destroy()
})

t.test('a reader that goes away (EPIPE): the service answers on, says so once on stderr, ' +
  'and a SIGTERM ends it', async (t) => {
  const server = await startServer({
    DATA_DIR: tmpDataDir(t), SANDBOX_SITE_COUNT: '200', NODE_ENV: 'production', LOG_BUFFER_MB: '1',
    SHUTDOWN_TIMEOUT_MS: '5000'
  })
  t.teardown(() => server.stop('SIGKILL'))
  server.child.stdout.destroy()
  t.same(await flood(`${server.url}/v1/sites/nearest?lat=51.5&lng=-0.1`, 2000), [[401, 2000]], 'every request answered')
  server.child.kill('SIGTERM')
  t.equal(await exitWithin(server.child, 4000), 0, 'exit 0: the close did not wait for a writer that fails')
  t.equal(server.output().match(/LogWarning: log lines not written: .*EPIPE/g)?.length, 1, 'one warning for the outage')
  t.match(server.output(), /log lines held at exit were not written: the last write failed \(.*EPIPE.*\)/)
})
