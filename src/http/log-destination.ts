// Log lines go to stdout through sonic-boom, at most LOG_BUFFER_MB held (more are dropped and counted),
// with stdout non-blocking: a reader that stops can neither fill the heap nor hold the process at exit.
import sonicBoom from 'sonic-boom'
import type { Log } from '../log.ts'

export type LogDestination = ReturnType<typeof logDestination>

/** At exit, a writer that has not moved for this long has a reader that stopped. */
const STALLED_MS = 1000
// The wait before retrying a full pipe, the writer still for `stillMs`: short for a bursty reader, capped for one
// that stopped (whole ms: Node keeps a timer list per duration).
export const retryDelay = (stillMs: number) => Math.min(50, Math.max(1, Math.ceil(stillMs / 10)))

export function logDestination (options: { maxBytes: number }) {
  // EAGAIN (a full pipe) is an 'error', retried below; at exit, sonic-boom's flushSync retries it until exitBy.
  let exitBy = 0
  // process.stdout opens fd 1 as Node does: a pipe or socket becomes non-blocking
  const writer = new sonicBoom.SonicBoom({
    fd: process.stdout.fd,
    sync: false,
    maxLength: options.maxBytes,
    retryEAGAIN: () => performance.now() < exitBy
  })
  let dropped = 0
  let unreported = 0
  // idle: nothing held. movedAt: the writer's last finished write, or lines given while idle. failure: the last
  // write's error (a closed pipe, a full disk); lines stay held, and the next line tries again.
  let idle = true
  let movedAt = 0
  let failure: Error | undefined
  let retry: NodeJS.Timeout | undefined
  let dropReport: Pick<Log, 'warn'> | undefined
  const waiting: Array<() => void> = []
  const settle = () => { for (const resolve of waiting.splice(0)) resolve() }
  writer.on('drop', (text: string) => { // each line ends with a newline
    for (let at = text.indexOf('\n'); at !== -1; at = text.indexOf('\n', at + 1)) {
      dropped++
      unreported++
    }
  })
  writer.on('write', () => {
    movedAt = performance.now()
    failure = undefined
  })
  // 'drain': every line held has been written
  writer.on('drain', () => {
    idle = true
    if (unreported > 0 && dropReport) {
      const lines = unreported
      unreported = 0
      // its line (unless the level leaves it out) makes the writer busy again: a close waits for it
      dropReport.warn({ dropped_lines: lines }, `${lines} log lines were dropped: ` +
        'their reader did not keep up and more than LOG_BUFFER_MB were waiting')
    }
    if (idle) settle()
  })
  writer.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EAGAIN' || err.code === 'EBUSY') {
      // a write with nothing to add starts again with what is held
      retry ??= setTimeout(() => {
        retry = undefined
        writer.write('')
      }, retryDelay(performance.now() - movedAt))
      return
    }
    if (failure === undefined) process.emitWarning(`log lines not written: ${err.message}`, 'LogWarning')
    failure = err
    settle()
  })
  const held = () => 'log lines held at exit were not written: ' + (failure
    ? `the last write failed (${failure.message})`
    : `their reader had taken nothing for ${Math.round(performance.now() - movedAt)} ms`) + '\n'

  return {
    stream: {
      write (text: string) {
        if (!idle) {
          writer.write(text)
          return
        }
        idle = false
        movedAt = performance.now()
        const before = dropped
        writer.write(text)
        // a line over the bound, dropped while nothing was held, starts no write: this one ends in a drain,
        // which reports the drop and marks the writer idle (sonic-boom's 'drop' comes before any write)
        if (dropped !== before) writer.write('')
      }
    },
    get droppedLines () { return dropped },
    /** Once the writer has caught up after drops, a warning through `log` says how many were lost. */
    reportDropsTo (log: Pick<Log, 'warn'>) { dropReport = log },
    /** Resolves once every line held has been written, or once a write has failed. */
    settled (): Promise<void> {
      if (idle || failure) return Promise.resolve()
      return new Promise((resolve) => {
        waiting.push(resolve)
        writer.write('') // a write, so that a drain follows even if nothing is under way
      })
    },
    /** For 'exit': writes the lines held, synchronously, unless the writer is stalled or failed (stderr says so). */
    flushAtExit () {
      if (idle) return
      if (failure || performance.now() - movedAt > STALLED_MS) {
        process.stderr.write(held())
        return
      }
      exitBy = performance.now() + STALLED_MS
      try {
        writer.flushSync()
      } catch (err) {
        // EAGAIN: the reader took too little within STALLED_MS
        const code = (err as NodeJS.ErrnoException).code
        if (code !== 'EAGAIN' && code !== 'EBUSY') failure = err as Error
        process.stderr.write(held())
      }
    }
  }
}
