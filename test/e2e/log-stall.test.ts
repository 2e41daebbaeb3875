// A log reader that stops: the real server's stdout is a pipe this test stops reading. The
// service goes on answering, holds at most LOG_BUFFER_MB of lines, and drops the rest; once the
// reader drains the pipe again, a warning line says how many were dropped, and the metric agrees.
// Every request answered has its access line or is among those dropped.
import t from 'tap'
import { tmpDataDir } from '../helper.ts'
import { startServer } from '../run.ts'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

interface Line { level: number, msg: string, dropped_lines?: number }
/** The complete lines of the output (the last may still be arriving). */
const logLines = (out: string): Line[] => out.slice(0, out.lastIndexOf('\n') + 1).split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Line)

t.test('a stalled log reader costs lines, counted and reported, not memory', async (t) => {
  const dir = tmpDataDir(t)
  const server = await startServer({ DATA_DIR: dir, SANDBOX_SITE_COUNT: '200', NODE_ENV: 'production', LOG_BUFFER_MB: '1' })
  t.teardown(() => server.stop('SIGKILL'))
  const metricsUrl = /"msg":"metrics listening at (http:\/\/127\.0\.0\.1:\d+\/metrics)"/.exec(server.output())![1]
  /** Access lines received, and lines the warnings say were dropped (one parse of the output). */
  const tally = () => {
    const lines = logLines(server.output())
    const warnings = lines.filter((l) => l.dropped_lines !== undefined)
    return { requests: lines.filter((l) => l.msg === 'request').length, warnings, dropped: warnings.reduce((sum, l) => sum + l.dropped_lines!, 0) }
  }
  const before = tally().requests

  server.child.stdout.pause()
  // about 250 bytes a line: 24,000 lines are 6 MB, far more than the 1 MB held plus the socket's
  // buffers (about 200 kB here) and this reader's
  const sent = 24_000
  const url = `${server.url}/v1/sites/nearest?lat=51.5&lng=-0.1`
  const statuses = new Map<number, number>()
  let next = 0
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (next < sent) {
      next++
      const res = await fetch(url)
      await res.arrayBuffer()
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
    }
  }))
  t.same([...statuses], [[401, sent]], 'every request answered while nobody reads the log')

  server.child.stdout.resume()
  let seen = tally()
  for (let i = 0; i < 100 && seen.requests - before + seen.dropped < sent; i++) {
    await sleep(100)
    seen = tally()
  }
  t.ok(seen.warnings.length >= 1 && seen.warnings.every((l) => l.level === 40), 'warnings once the writer caught up')
  t.match(seen.warnings[0]?.msg, /^\d+ log lines were dropped: their reader did not keep up and more than LOG_BUFFER_MB were waiting$/)
  t.ok(seen.dropped > 0 && seen.dropped < sent, `some lines dropped (${seen.dropped}), not all`)
  t.equal(seen.requests - before + seen.dropped, sent, 'each request has its line or is counted as dropped')

  const metrics = await (await fetch(metricsUrl)).text()
  t.match(metrics, new RegExp(`^lsp_log_lines_dropped_total ${seen.dropped}$`, 'm'), 'the metric counts the same lines')
})
