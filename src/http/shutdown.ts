// Graceful close with close-with-grace: a terminating signal (SIGTERM, SIGINT...), an uncaught
// exception or an unhandled rejection closes the app, waiting at most timeoutMs for requests in
// flight and then for the log's last lines. Exit 0 after a clean close on a signal; 1 after an
// error, a failed close or the timeout.
import closeWithGrace from 'close-with-grace'
import type { FastifyInstance } from 'fastify'

export interface ShutdownOptions {
  timeoutMs: number
  /** awaited once the app has closed, within the same timeout (the log's last lines written) */
  afterClose?: () => Promise<void>
}

export function closeOnSignals (app: FastifyInstance, options: ShutdownOptions): { closing: () => boolean } {
  let closing = false
  // A forced exit saves what it can, as close-with-grace calls process.exit right after: without
  // STATE_URL all the requests answered so far counted (saved to control.db synchronously; never
  // throws). With STATE_URL the windows and telemetry are in Redis already, but the history flush is
  // only started, not awaited: its counts since the last flush (a second's; more while Redis is
  // away) may be lost.
  const forced = (msg: string, fields: object = {}) => {
    app.log.error(fields, msg)
    app.saveCounters()
  }
  closeWithGrace({
    delay: options.timeoutMs,
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
    await options.afterClose?.()
  })
  return { closing: () => closing }
}
