// Latencies of a real instance while something else happens (partner changes, for issue 50), and
// the waits and metrics the tests around them need.
import http from 'node:http'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { metricsUrlOf, parseMetrics, type Server } from './run.ts'

export { sleep }

/** Waits until `check` holds; the milliseconds it took. */
export async function until (
  what: string, check: () => boolean | Promise<boolean>, timeoutMs = 10_000
): Promise<number> {
  const start = Date.now()
  for (;;) {
    if (await check()) return Date.now() - start
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`)
    await sleep(20)
  }
}

/** Partner rows the instance has read from its store since it started (its metric). */
export async function rowsRead (server: Server): Promise<number> {
  const metrics = parseMetrics(await (await fetch(metricsUrlOf(server))).text())
  return metrics.get('lsp_partner_rows_read_total') ?? NaN
}

/**
 * Latencies (ms) of GET /v1/usage answered 200, sent every 2 ms until `done` settles whatever the
 * answers' pace (a stalled event loop delays every request sent meanwhile, as it does a real
 * client's); and the statuses of the other answers.
 */
export async function latencies (
  server: Server, token: string, done: Promise<unknown>
): Promise<{ times: number[], others: number[] }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 })
  const url = `${server.url}/v1/usage`
  const times: number[] = []
  const others: number[] = []
  const sent: Promise<void>[] = []
  const one = () => new Promise<void>((resolve, reject) => {
    const start = performance.now()
    http.get(url, { agent, headers: { authorization: `Bearer ${token}` } }, (res) => {
      res.resume()
      res.on('end', () => {
        if (res.statusCode === 200) times.push(performance.now() - start)
        else others.push(res.statusCode!)
        resolve()
      })
    }).on('error', reject)
  })
  const state = { over: false }
  done.finally(() => { state.over = true }).catch(() => {}) // the caller awaits `done`: it sees the error
  while (!state.over) {
    sent.push(one())
    await sleep(2)
  }
  await Promise.all(sent)
  agent.destroy()
  return { times, others }
}

export const p99 = (values: number[]) => [...values].sort((a, b) => a - b)[Math.ceil(values.length * 0.99) - 1]

/**
 * /v1/usage latencies of each server, all at once: at rest for 4 s, during `burst`, at rest for
 * 4 s again (the machine's other work changes over a run); after 1 s of warming up. `others`: the
 * statuses of the answers other than 200 over all of it.
 */
export async function burstLatencies (servers: Server[], token: string, burst: () => Promise<unknown>) {
  const each = async (done: () => Promise<unknown>) => {
    const over = done()
    const measured = await Promise.all(servers.map((server) => latencies(server, token, over)))
    await over // a burst that failed fails the test
    return measured
  }
  const phases = [await each(() => sleep(1000)), await each(() => sleep(4000)), await each(burst),
    await each(() => sleep(4000))]
  return servers.map((_, i) => {
    const [, before, during, after] = phases.map((phase) => phase[i])
    return {
      rest: [...before.times, ...after.times],
      during: during.times,
      others: phases.flatMap((phase) => phase[i].others)
    }
  })
}

/** The p99s of burstLatencies' figures for one server, as a sentence. */
export const burstP99s = ({ rest, during }: { rest: number[], during: number[] }) =>
  `p99 at rest ${p99(rest).toFixed(1)} ms (${rest.length} requests), ` +
  `during the burst ${p99(during).toFixed(1)} ms (${during.length} requests)`
