// The load generator, in a process of its own: on one target, cycling through the given paths;
// prints the figures as one JSON line. Without a rate, autocannon at full speed. With a rate, an
// open loop: requests fall due at that rate whatever the answers do, each answer timed to a
// hundredth of a ms from when its request was due, and from when the generator released it.
// (autocannon's rate option spends each connection's budget for a second back to back at the
// start of the second, which saturates the target, and its percentiles are whole ms.)
import { readFileSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import autocannon from 'autocannon'
import { AnswerFramer, requestBytes } from './http.ts'

interface Job {
  base: string, paths: string[], connections: number, seconds: number, headers?: Record<string, string>, rate?: number
}
const job = JSON.parse(readFileSync(process.argv[2], 'utf8')) as Job
let next = 0
const nextPath = () => job.paths[next++ % job.paths.length]

/** Nearest-rank percentile of sorted values. */
const percentile = (sorted: Float64Array, p: number) =>
  sorted.length === 0 ? 0 : sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]
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
/** A connection's read buffer: a few answers of 19 kB a read. */
const READ_BYTES = 64 * 1024
/** How long answers still due after the last request are waited for, then counted as timeouts. */
const DRAIN_MS = 10_000

/**
 * Open loop over raw keep-alive sockets: each request is due at its time whatever the answers do;
 * a due request goes out on the connection free the longest (waiting for one counts in its
 * latency), so every connection carries requests: the service answers a connection that has sent
 * nothing for HEADERS_TIMEOUT_MS (10 s) with a 408 and closes it, as slow clients must not hold
 * their slots. Its latency runs from when it was due to the end of its answer's body. Requests
 * are bytes made once and answers are only framed (status line, Content-Length, body length):
 * with Node's HTTP client, the generator's own work on the shared cores became the latency measured.
 */
async function fixedRate (rate: number) {
  const { hostname, port } = new URL(job.base)
  const total = Math.round((rate * (LEAD_IN_MS + job.seconds * 1000)) / 1000)
  const latencies = new Float64Array(total)
  // the same answers timed from the timer tick that released their request: without the lag of
  // the generator's own timer (a tick about every ms, less often under load), with any wait for
  // a free connection
  const fromSend = new Float64Array(total)
  const sentAt = new Float64Array(total)
  const statusCodes: Record<string, { count: number }> = {}
  const requests = requestBytes(job.base, job.paths, job.headers)
  const firstMeasured = Math.round((rate * LEAD_IN_MS) / 1000)
  let counted = 0
  let answered = 0
  let errors = 0
  let unsolicited = 0
  let non2xx = 0
  let closed = 0 // connections ended by the server (or an error) during the run
  let sent = 0
  let measuredFrom = 0
  let lastDue = 0
  const start = performance.now()
  const dueAt = (i: number) => start + (i * 1000) / rate
  const free: Conn[] = []
  const waiting: number[] = [] // due requests with no free connection yet

  interface Conn { socket: Socket, busy: number, open: boolean }
  const send = (conn: Conn, i: number) => {
    conn.busy = i
    conn.socket.write(requests[i % requests.length])
  }
  const finish = (conn: Conn, code: number) => {
    const i = conn.busy
    if (i < 0) { // an answer to no request (the server closing the connection): not counted as one
      unsolicited++
      return
    }
    if (i >= firstMeasured) {
      const now = performance.now()
      fromSend[counted] = now - sentAt[i]
      latencies[counted++] = now - dueAt(i)
    }
    statusCodes[code] = { count: (statusCodes[code]?.count ?? 0) + 1 }
    if (code < 200 || code > 299) non2xx++
    answered++
    conn.busy = -1
    if (!conn.open) return // ended by the server after this answer
    const next = waiting.shift()
    if (next !== undefined) send(conn, next)
    else free.push(conn)
  }
  const conns: Conn[] = []
  // every connection is in `conns` before any can end, and each ends once: the open ones are the rest
  const anyOpen = () => closed < conns.length
  await Promise.all(Array.from({ length: job.connections }, () => new Promise<void>((resolve) => {
    const framer = new AnswerFramer((code) => finish(conn, code))
    // one read buffer per connection, used again for every read: a read makes only a view of it
    const reads = Buffer.allocUnsafe(READ_BYTES)
    const onread = {
      buffer: reads,
      callback: (bytes: number) => { framer.push(reads.subarray(0, bytes)); return true }
    }
    const socket = connect({ host: hostname, port: Number(port), noDelay: true, onread })
    const conn: Conn = { socket, busy: -1, open: true }
    conns.push(conn)
    // from the server's end (or an error) on, nothing more is sent on it; its 'close' follows
    const ended = () => {
      if (!conn.open) return
      conn.open = false
      closed++
      const at = free.indexOf(conn)
      if (at >= 0) free.splice(at, 1)
      if (!anyOpen()) {
        errors += waiting.length // never to be sent: no connection is left
        waiting.length = 0
      }
    }
    socket.on('end', ended)
    socket.on('error', ended)
    socket.on('close', () => {
      ended()
      if (conn.busy >= 0) errors++
      conn.busy = -1
      resolve() // a connection refused outright must not hang the run
    })
    socket.once('connect', () => resolve())
  })))
  free.push(...conns.filter((c) => c.open))
  await new Promise<void>((resolve) => {
    // timers fire about once a ms: each tick sends the requests that have come due since the last
    const tick = () => {
      const now = performance.now()
      const due = Math.min(total, Math.floor(((now - start) * rate) / 1000) + 1)
      while (sent < due) {
        const i = sent++
        sentAt[i] = now
        if (i === firstMeasured) measuredFrom = dueAt(i)
        lastDue = dueAt(i)
        const conn = free.shift()
        if (conn) send(conn, i)
        else if (anyOpen()) waiting.push(i)
        else errors++ // no connection left to send it on
      }
      if (sent < total) setTimeout(tick, 1)
      else resolve()
    }
    tick()
  })
  const drainUntil = performance.now() + DRAIN_MS
  const done = () => answered + errors === total
  while (!done() && performance.now() < drainUntil) await new Promise((resolve) => setTimeout(resolve, 20))
  const closedByServer = closed // before the destroys below end the rest
  for (const conn of conns) conn.socket.destroy()
  const sorted = latencies.subarray(0, counted).sort()
  const sortedFromSend = fromSend.subarray(0, counted).sort()
  return {
    // the rate achieved: the measured answers over the time their requests were due in
    rps: (counted * 1000) / (lastDue - measuredFrom + 1000 / rate),
    p50: hundredths(percentile(sorted, 50)),
    p99: hundredths(percentile(sorted, 99)),
    p50FromSend: hundredths(percentile(sortedFromSend, 50)),
    p99FromSend: hundredths(percentile(sortedFromSend, 99)),
    total: answered,
    non2xx,
    errors,
    timeouts: total - answered - errors,
    statusCodes,
    unsolicited,
    closed: closedByServer
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
