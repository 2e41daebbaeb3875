// Where the service's log lines go: pino's asynchronous writer (sonic-boom) on stdout, holding at
// most LOG_BUFFER_MB of lines not yet written. Without a bound, a reader that stopped (a stalled
// log collector, a pipe nobody drains) made the service keep every line in its heap, 75 MB more
// every 10 s at 27,000 requests a second, until V8's heap limit ended the process. Past the bound,
// lines are dropped and counted (the metrics); once the writer has caught up, one warning line
// in the log says how many are missing.
import pino from 'pino'

export interface DropReport {
  warn (fields: object, message: string): void
}

export interface LogDestination {
  /** the logger's stream */
  readonly stream: ReturnType<typeof pino.destination>
  /** lines dropped since the start */
  readonly droppedLines: number
  /** Once the writer has caught up after drops, a warning through `log` says how many lines were lost. */
  reportDropsTo (log: DropReport): void
}

/** Lines in `text` (each ends with a newline). */
function lineCount (text: string): number {
  let lines = 0
  for (let at = text.indexOf('\n'); at !== -1; at = text.indexOf('\n', at + 1)) lines++
  return lines
}

export function logDestination (options: { maxBytes: number, fd?: number }): LogDestination {
  const stream = pino.destination({ dest: options.fd ?? 1, sync: false, maxLength: options.maxBytes })
  let dropped = 0
  let unreported = 0
  stream.on('drop', (text: string) => {
    const lines = lineCount(text)
    dropped += lines
    unreported += lines
  })
  return {
    stream,
    get droppedLines () { return dropped },
    reportDropsTo (log) {
      // 'drain': every line held has been written
      stream.on('drain', () => {
        if (unreported === 0) return
        const lines = unreported
        unreported = 0
        log.warn({ dropped_lines: lines }, `${lines} log lines were dropped: their reader did not keep up and more than LOG_BUFFER_MB were waiting`)
      })
    }
  }
}
