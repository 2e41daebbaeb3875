// The access line: the JSON line pino's logger.info(fields, 'request') would write, made by hand, cheaper than pino's
// general serialisation, for a plain pino logger writing to one stream; any other logger gets logger.info.
import pino from 'pino'
import type { FastifyBaseLogger } from 'fastify'
import { jsonString } from './json-text.ts'
import { outageReporter } from '../health/outage.ts'

const { streamSym, chindingsSym, timeSym, messageKeySym, needsMetadataGsym, mixinSym } = pino.symbols
const INFO = 30
/** Lines held for one write at most (characters): a turn of the event loop rarely holds more. */
const MAX_PENDING = 64 * 1024

/** Writes one request's line. */
type WriteLine = (
  reqId: string, method: string, url: string, ip: string, status: number, ms: number,
  partner: string | undefined, cache: string | undefined
) => void
/** `flush` writes the lines still held (the service calls it when it closes and when the process exits). */
type AccessWriter = WriteLine & { flush: () => void }

/** What logger.info writes for these fields. */
export function viaLogger (log: FastifyBaseLogger): AccessWriter {
  const write: WriteLine = (reqId, method, url, ip, status, ms, partner, cache) =>
    log.info({ reqId, method, url, ip, status, ms, partner, cache }, 'request')
  return Object.assign(write, { flush: () => {} })
}

/** The hand-made line when the logger is a plain pino logger writing to one stream, else viaLogger. */
export function accessWriter (log: FastifyBaseLogger): AccessWriter {
  const logger = log as unknown as Record<symbol, unknown> & { levelVal: number }
  const stream = logger[streamSym] as { write?: (line: string) => unknown } | undefined
  const time = logger[timeSym] as () => string
  const bindings = logger[chindingsSym]
  if (typeof stream?.write !== 'function' || typeof time !== 'function' || typeof bindings !== 'string' ||
    logger[messageKeySym] !== 'msg' || (stream as Record<symbol, unknown>)[needsMetadataGsym] || logger[mixinSym]) {
    return viaLogger(log)
  }
  // The lines of an event loop's turn go to the stream in one write (setImmediate): one hand-off, one string a turn.
  // Only a SIGKILL within the turn loses them: the service flushes when it closes and when the process exits.
  let pending = ''
  let scheduled = false
  // A failing destination must not take the service down from a timer: lines dropped, warned once per outage.
  const report = outageReporter(
    (err) => process.emitWarning(`access log lines dropped: ${(err as Error).message}`, 'AccessLogWarning'),
    () => {}
  )
  const flush = () => {
    scheduled = false
    if (pending === '') return
    const lines = pending
    pending = ''
    try {
      stream.write!(lines)
      report()
    } catch (err) {
      report(err)
    }
  }
  const write: WriteLine = (reqId, method, url, ip, status, ms, partner, cache) => {
    if (logger.levelVal > INFO) return
    pending += `{"level":30${time()}${bindings},"reqId":${jsonString(reqId)},"method":${jsonString(method)},` +
      `"url":${jsonString(url)},"ip":${jsonString(ip)},"status":${status},"ms":${ms}` +
      `${partner === undefined ? '' : `,"partner":${jsonString(partner)}`}` +
      `${cache === undefined ? '' : `,"cache":${jsonString(cache)}`},"msg":"request"}\n`
    if (pending.length >= MAX_PENDING) flush()
    else if (!scheduled) {
      scheduled = true
      setImmediate(flush)
    }
  }
  return Object.assign(write, { flush })
}
