// Entry point: configuration, first-boot files, the app, listen; SIGHUP reloads the datasets,
// SIGTERM/SIGINT, an uncaught exception or an unhandled rejection close gracefully.
import closeWithGrace from 'close-with-grace'
import { buildApp } from './app.ts'
import { createDemoPartner, prepareDataDir } from './setup/data-dir.ts'
import { ConfigError, loadConfig } from './config.ts'
import { holdTickShape } from './http/tick-shape.ts'
import { logDestination } from './http/log-destination.ts'

async function main () {
  holdTickShape() // before any quiet spell: see src/http/tick-shape.ts
  // A SIGHUP before the app can reload (a boot takes seconds, and its log lines carry the pid)
  // must not end the process, as Node's default does: it is kept, and the reload runs once ready.
  let reloadAsked = false
  const askedEarly = () => { reloadAsked = true }
  process.on('SIGHUP', askedEarly)
  const config = loadConfig() // a ConfigError is said as it is (below)
  // The log's lines still held are written at exit, unless their reader has stopped (src/http/log-destination.ts).
  const destination = logDestination({ maxBytes: config.logBufferMb * 1024 * 1024 })
  process.on('exit', destination.flushAtExit)
  const prepared = prepareDataDir(config)
  const app = await buildApp(config, { destination })
  for (const path of prepared.created) app.log.info({ path }, 'created missing data file')

  // Requests in flight, then the log's last lines, within SHUTDOWN_TIMEOUT_MS; exit 0 after a clean close on a
  // signal, else 1. A forced exit saves the counters before close-with-grace's process.exit: synchronously to
  // control.db, or with STATE_URL a history flush only started, so the counts since the last one may be lost.
  let closing = false
  const forced = (msg: string, fields: object = {}) => {
    app.log.error(fields, msg)
    app.saveCounters()
  }
  closeWithGrace({
    delay: config.shutdownTimeoutMs,
    skip: ['SIGHUP'], // SIGHUP reloads the datasets
    logger: { error: (err: unknown) => app.log.error({ err }, 'close failed') },
    onTimeout: () => forced('graceful close timed out; exiting'),
    onSecondSignal: (signal) => forced('second signal while closing; exiting', { signal }),
    onSecondError: (err) => forced('error while closing; exiting', { err })
  }, async ({ signal, err }) => {
    closing = true
    if (err) app.log.fatal({ err }, 'uncaught error; closing')
    else app.log.info({ signal }, 'closing')
    await app.close()
    await destination.settled()
  })
  const reload = () => {
    if (!closing) app.reloadDatasets('SIGHUP').catch((err) => app.log.error({ err }, 'reload failed'))
  }
  process.off('SIGHUP', askedEarly).on('SIGHUP', reload)
  if (reloadAsked) reload()

  // before the partner port: METRICS_PORT in use fails the start (the app closes it: plugins/metrics.ts)
  await app.listenMetrics()
  const address = await app.listen({ host: config.host, port: config.port })
  // Only now: a start that failed before listening has shown no token, and the next one shows it.
  let demoToken: string | undefined
  try {
    demoToken = createDemoPartner(app.partners.store, config)
  } catch (err) {
    app.log.error({ error: (err as Error).message },
      'the demo partner could not be created now; the next start creates it')
  }
  if (demoToken) {
    // served from the first request, not from the directory's next look at control.db
    app.controlDb.attempt('partners', () => app.partners.refresh())
    process.stdout.write([
      '',
      'Demo partner created (slug "demo"). Its token is shown this once; keep it:',
      `  ${demoToken}`,
      'First request:',
      `  curl '${address}${config.apiPrefix}/sites?lat=51.507&lng=-0.128&api_key=${demoToken}'`,
      ''
    ].join('\n') + '\n')
  }
}

main().catch((err) => {
  const message = err instanceof Error ? err.message : String(err)
  process.stderr.write(err instanceof ConfigError ? `${message}\n` : `start-up failed: ${message}\n`)
  process.exit(1)
})
