// A terminating signal, an uncaught exception or an unhandled rejection closes the app, within timeoutMs
// for requests in flight and the log's last lines; exit 0 after a clean close on a signal, else 1.
import closeWithGrace from 'close-with-grace'
import type { FastifyInstance } from 'fastify'

/** `afterClose` is awaited once the app has closed, within the same timeout (the log's last lines written). */
export function closeOnSignals (app: FastifyInstance, options: { timeoutMs: number, afterClose: () => Promise<void> }) {
  let closing = false
  // A forced exit saves the counters before close-with-grace's process.exit: synchronously to control.db,
  // or with STATE_URL a history flush only started, so the counts since the last one may be lost.
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
    await options.afterClose()
  })
  return { closing: () => closing }
}
