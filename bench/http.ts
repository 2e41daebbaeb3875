// HTTP/1.1 over raw keep-alive sockets for the load generators (bench/load.ts at a fixed rate,
// bench/instructions.ts under callgrind): requests are bytes made once, answers are only framed,
// so that the generator's own CPU does not take the cores the service is measured on.

/** Each path's GET request, with the Host header and the given ones, as bytes. */
export function requestBytes (base: string, paths: string[], headers: Record<string, string> = {}): Buffer[] {
  const { host } = new URL(base)
  const lines = Object.entries({ host, ...headers }).map(([k, v]) => `${k}: ${v}\r\n`).join('')
  return paths.map((path) => Buffer.from(`GET ${path} HTTP/1.1\r\n${lines}\r\n`, 'latin1'))
}

const EMPTY = Buffer.alloc(0)

/**
 * Splits a connection's bytes into answers (every answer these processes get has a
 * Content-Length) and calls back with each one's status once its body has arrived. Bodies are
 * counted, not kept; only a head split across reads is copied (joined with the rest of the read it
 * ends in): `push` may be given a read buffer that is used again for the next read, and the
 * generator allocates next to nothing per answer (its collector's pauses would take the service's
 * cores and show in the latency it measures).
 */
export class AnswerFramer {
  /** the start of a head that has not fully arrived */
  private pending = EMPTY
  /** bytes of body still to come; -1 while in the head */
  private need = -1
  private status = 0

  constructor (private readonly onAnswer: (status: number) => void) {}

  push (chunk: Buffer) {
    let data = chunk
    let at = 0
    for (;;) {
      if (this.need < 0) {
        if (at === data.length) return
        if (this.pending.length > 0) {
          data = Buffer.concat([this.pending, data.subarray(at)])
          at = 0
          this.pending = EMPTY
        }
        const end = data.indexOf('\r\n\r\n', at)
        if (end < 0) {
          // a copy: the read buffer is used again
          this.pending = Buffer.from(data.subarray(at))
          return
        }
        const head = data.toString('latin1', at, end)
        const length = /\r\ncontent-length: *(\d+)/i.exec(head)
        if (length === null) throw new Error(`an answer without Content-Length: ${head.slice(0, 200)}`)
        this.status = Number(head.slice(9, 12))
        this.need = Number(length[1])
        at = end + 4
      }
      const available = data.length - at
      if (available < this.need) {
        this.need -= available
        return
      }
      at += this.need
      this.need = -1
      this.onAnswer(this.status)
    }
  }
}
