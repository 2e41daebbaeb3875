// The load generator, in a process of its own: on one target, cycling through the given paths;
// prints the figures as one JSON line. Without a rate, autocannon at full speed. With a rate, an
// open loop: requests leave at that rate whatever the answers do, each answer timed to a hundredth
// of a ms. (autocannon's rate option spends each connection's budget for a second back to back at
// the start of the second, which saturates the target, and its percentiles are whole ms.)
import { readFileSync } from 'node:fs'
import { Agent, request } from 'node:http'
import autocannon from 'autocannon'

interface Job { base: string, paths: string[], connections: number, seconds: number, headers?: Record<string, string>, rate?: number }
const job = JSON.parse(readFileSync(process.argv[2], 'utf8')) as Job
let next = 0
const nextPath = () => job.paths[next++ % job.paths.length]

/** Nearest-rank percentile of sorted values. */
const percentile = (sorted: Float64Array, p: number) => sorted.length === 0 ? 0 : sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]
const hundredths = (ms: number) => Math.round(ms * 100) / 100

async function fullSpeed () {
  const result = await autocannon({
    url: job.base,
    connections: job.connections,
    duration: job.seconds,
    headers: job.headers,
    requests: [{ method: 'GET', setupRequest: (req) => ({ ...req, path: nextPath() }) }]
  })
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    total: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statusCodes: (result as unknown as { statusCodeStats: Record<string, { count: number }> }).statusCodeStats
  }
}

/** Answers of the first second are not counted: the connections are being opened. */
const LEAD_IN_MS = 1000
/** How long answers still due after the last request are waited for, then counted as timeouts. */
const DRAIN_MS = 10_000

async function fixedRate (rate: number) {
  const { hostname, port } = new URL(job.base)
  const agent = new Agent({ keepAlive: true, maxSockets: job.connections })
  const total = Math.round((rate * (LEAD_IN_MS + job.seconds * 1000)) / 1000)
  const latencies = new Float64Array(total)
  const statusCodes: Record<string, { count: number }> = {}
  let counted = 0
  let sent = 0
  /** the first request measured, and when it and the last request left */
  const firstMeasured = Math.round((rate * LEAD_IN_MS) / 1000)
  let measuredFrom = 0
  let lastSent = 0
  let answered = 0
  let errors = 0
  let non2xx = 0
  const start = performance.now()
  const done = () => answered + errors === total
  const send = (i: number) => {
    const at = performance.now()
    const measured = i >= firstMeasured
    if (i === firstMeasured) measuredFrom = at
    lastSent = at
    const req = request({ agent, host: hostname, port, path: nextPath(), headers: job.headers }, (res) => {
      res.resume()
      res.on('end', () => {
        if (measured) latencies[counted++] = performance.now() - at
        const code = res.statusCode ?? 0
        statusCodes[code] = { count: (statusCodes[code]?.count ?? 0) + 1 }
        if (code < 200 || code > 299) non2xx++
        answered++
      })
    })
    req.on('error', () => { errors++ })
    req.end()
  }
  await new Promise<void>((resolve) => {
    // timers fire about once a ms: each tick sends the requests that have come due since the last
    const tick = () => {
      const due = Math.min(total, Math.floor(((performance.now() - start) * rate) / 1000) + 1)
      while (sent < due) send(sent++)
      if (sent < total) setTimeout(tick, 1)
      else resolve()
    }
    tick()
  })
  const drainUntil = performance.now() + DRAIN_MS
  while (!done() && performance.now() < drainUntil) await new Promise((resolve) => setTimeout(resolve, 20))
  agent.destroy()
  const sorted = latencies.subarray(0, counted).sort()
  return {
    // the rate achieved: the measured answers over the time their requests took to leave
    rps: (counted * 1000) / (lastSent - measuredFrom + 1000 / rate),
    p50: hundredths(percentile(sorted, 50)),
    p99: hundredths(percentile(sorted, 99)),
    total: answered,
    non2xx,
    errors,
    timeouts: total - answered - errors,
    statusCodes
  }
}

const cpuBefore = process.cpuUsage()
const figures = job.rate ? await fixedRate(job.rate) : await fullSpeed()
const cpu = process.cpuUsage(cpuBefore)
process.stdout.write(JSON.stringify({
  ...figures,
  /** this process's CPU time over the run (user + system, µs): the load generator's own cost */
  cpuUs: cpu.user + cpu.system
}) + '\n')
process.exit(0)
