// The demo token with real processes: first starts that fail (the metrics port taken, then the API
// port) show no token and keep none the operator never saw; the next start that listens prints
// one, and it works.
import { createServer, type Server as NetServer } from 'node:net'
import t from 'tap'
import { tmpDataDir } from '../helper.ts'
import { startServer } from '../run.ts'

/** A port something else listens on, for the test's length. */
const takenPort = (t: { teardown (fn: () => unknown): void }) => new Promise<number>((resolve, reject) => {
  const blocker: NetServer = createServer()
  blocker.listen(0, '127.0.0.1', () => resolve((blocker.address() as { port: number }).port))
  blocker.on('error', reject)
  t.teardown(() => new Promise<void>((resolve) => blocker.close(() => resolve())))
})

const TOKEN = /^ {2}(lsp_[A-Za-z0-9_-]{43})$/m

t.test('a first start that fails shows no token; the next start that listens shows a working one', async (t) => {
  const dir = tmpDataDir(t)
  const env = { DATA_DIR: dir, NODE_ENV: 'development', SANDBOX_SITE_COUNT: '2000', PARTNER_REFRESH_MS: '5000' }
  const taken = await takenPort(t)

  const started = (env: Record<string, string>) => startServer(env).then(() => 'started', (err: Error) => err.message)
  const metricsTaken = await started({ ...env, METRICS_PORT: String(taken) })
  t.match(metricsTaken, /^server exited with 1:\n/, 'METRICS_PORT in use: exit 1')
  t.match(metricsTaken, /start-up failed: METRICS_PORT \d+ is in use/)
  t.notMatch(metricsTaken, /lsp_/, 'and no token shown')

  const portTaken = await started({ ...env, PORT: String(taken) })
  t.match(portTaken, /^server exited with 1:\n/, 'PORT in use: exit 1')
  t.notMatch(portTaken, /lsp_/, 'and no token shown')

  // PARTNER_REFRESH_MS at its longest: the token works at once, not after the directory's next look
  const server = await startServer(env)
  t.teardown(() => server.stop('SIGKILL'))
  // printed just after the listening line, maybe in the next chunk of output
  let token: string | undefined
  for (const deadline = Date.now() + 5000; !token && Date.now() < deadline;) {
    token = TOKEN.exec(server.output())?.[1]
    if (!token) await new Promise((resolve) => setTimeout(resolve, 20))
  }
  t.ok(token, 'the first start that listens shows the demo token')
  const answer = await fetch(`${server.url}/v1/sites?lat=51.507&lng=-0.128&api_key=${token}`)
  t.equal(answer.status, 200, 'and it works')
  t.equal(await server.stop('SIGTERM'), 0)

  const again = await startServer(env)
  t.teardown(() => again.stop('SIGKILL'))
  t.equal((await fetch(`${again.url}/v1/sites?lat=51.507&lng=-0.128&api_key=${token}`)).status, 200,
    'the token keeps working')
  t.notMatch(again.output(), /lsp_/, 'and a later start shows none (it would have before answering)')
  t.equal(await again.stop('SIGTERM'), 0)
})
