// The load generators' answer framing (bench/http.ts): every answer counted once with its
// status, however the bytes are split into reads, and nothing kept of a read buffer used again.
import t from 'tap'
import { AnswerFramer } from '../http.ts'

const answer = (status: number, body: string, extra = '') =>
  `HTTP/1.1 ${status} X\r\ncontent-type: text/plain\r\n${extra}` +
  `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
const stream = Buffer.from([
  answer(200, 'x'.repeat(19_000)),
  answer(404, ''),
  answer(429, '{"error":"rate_limited"}', 'retry-after: 7\r\n'),
  answer(200, '\r\n\r\n not a head \r\n\r\n'),
  answer(503, 'é'.repeat(300))
].join(''))
const statuses = [200, 404, 429, 200, 503]

/**
 * The statuses framed from `stream` given in reads of the sizes `sizes` cycles through, each read
 * copied into one buffer used again (then scribbled over).
 */
function frame (sizes: number[]): number[] {
  const seen: number[] = []
  const framer = new AnswerFramer((status) => seen.push(status))
  const buffer = Buffer.alloc(stream.length)
  for (let at = 0, k = 0; at < stream.length; k++) {
    const n = Math.min(sizes[k % sizes.length], stream.length - at)
    stream.copy(buffer, 0, at, at + n)
    framer.push(buffer.subarray(0, n))
    buffer.fill(0x41, 0, n) // what the next read would overwrite: the framer must not have kept it
    at += n
  }
  return seen
}

t.test('the whole stream in one read, and in reads of every size from 1 to 64 bytes', async (t) => {
  t.same(frame([stream.length]), statuses)
  for (let size = 1; size <= 64; size++) t.same(frame([size]), statuses, `reads of ${size} bytes`)
})

t.test('a read boundary at each of the first 200 bytes, then every 97th', async (t) => {
  for (let cut = 1; cut < stream.length; cut += cut < 200 ? 1 : 97) {
    t.same(frame([cut, stream.length]), statuses, `cut at ${cut}`)
  }
})

t.test('reads of mixed sizes, as a socket gives them', async (t) => {
  t.same(frame([3, 65536, 7, 1, 16384, 2]), statuses)
  t.same(frame([17, 4, 19_100, 5]), statuses)
})

t.test('an answer without Content-Length is an error, not a hang', async (t) => {
  const framer = new AnswerFramer(() => {})
  const unframed = Buffer.from('HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nhello')
  t.throws(() => framer.push(unframed), /without Content-Length/)
})
