// The load generator, in a process of its own: autocannon on one target, cycling through the
// given paths; prints the figures as one JSON line.
import { readFileSync } from 'node:fs'
import autocannon from 'autocannon'

interface Job {
  base: string, paths: string[], connections: number, seconds: number, headers?: Record<string, string>
  /** requests per second across all connections (autocannon's overallRate): a fixed-rate run */
  overallRate?: number
}
const job = JSON.parse(readFileSync(process.argv[2], 'utf8')) as Job
let next = 0

const cpuBefore = process.cpuUsage()
const result = await autocannon({
  url: job.base,
  connections: job.connections,
  duration: job.seconds,
  headers: job.headers,
  ...(job.overallRate === undefined ? {} : { overallRate: job.overallRate }),
  requests: [{
    method: 'GET',
    setupRequest: (request) => ({ ...request, path: job.paths[next++ % job.paths.length] })
  }]
})
const cpu = process.cpuUsage(cpuBefore)
process.stdout.write(JSON.stringify({
  rps: result.requests.average,
  p50: result.latency.p50,
  p99: result.latency.p99,
  total: result.requests.total,
  non2xx: result.non2xx,
  errors: result.errors,
  timeouts: result.timeouts,
  /** this process's CPU time over the run (user + system, µs): the load generator's own cost */
  cpuUs: cpu.user + cpu.system,
  statusCodes: (result as unknown as { statusCodeStats: Record<string, { count: number }> }).statusCodeStats
}) + '\n')
