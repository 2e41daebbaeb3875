// HTTP/1.1 over raw keep-alive sockets for the load generators (scripts/bench-load.ts at a fixed
// rate, scripts/bench-instructions.ts under callgrind): requests are bytes made once, answers are
// only framed. Node's HTTP client costs about as much CPU per request as the service does.

/** Each path's GET request, with the Host header and the given ones, as bytes. */
export function requestBytes (base: string, paths: string[], headers: Record<string, string> = {}): Buffer[] {
  const { host } = new URL(base)
  const lines = Object.entries({ host, ...headers }).map(([k, v]) => `${k}: ${v}\r\n`).join('')
  return paths.map((path) => Buffer.from(`GET ${path} HTTP/1.1\r\n${lines}\r\n`, 'latin1'))
}

const EMPTY = Buffer.alloc(0)

/**
 * Splits a connection's bytes into answers (every answer these processes get has a
 * Content-Length) and calls back with each one's status once its body has arrived.
 */
export class AnswerFramer {
  private pending = EMPTY
  /** bytes of body still to come; -1 while in the head */
  private need = -1
  private status = 0

  constructor (private readonly onAnswer: (status: number) => void) {}

  push (chunk: Buffer) {
    let data = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk
    for (;;) {
      if (this.need < 0) {
        const end = data.indexOf('\r\n\r\n')
        if (end < 0) break
        const head = data.toString('latin1', 0, end)
        const length = /\r\ncontent-length: *(\d+)/i.exec(head)
        if (length === null) throw new Error(`an answer without Content-Length: ${head.slice(0, 200)}`)
        this.status = Number(head.slice(9, 12))
        this.need = Number(length[1])
        data = data.subarray(end + 4)
      }
      if (data.length < this.need) break
      data = data.subarray(this.need)
      this.need = -1
      this.onAnswer(this.status)
    }
    // a copy: the rest must not keep the whole chunk it came in alive
    this.pending = data.length > 0 ? Buffer.from(data) : EMPTY
  }
}
