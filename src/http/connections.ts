// What the HTTP server answers below Fastify (connections over the caps, requests its parser refuses), as raw
// HTTP with the API's error body; also which requests HTTP/1.1 does not allow, for Fastify's first hook.
import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { STATUS_CODES, type IncomingMessage, type Server } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import { ApiError } from '../errors.ts'
import { JSON_TYPE } from '../answers/records.ts'

/** Requests whose Expect Node cannot meet (its 'checkExpectation' event), to be refused 417. */
export const unmetExpectations = new WeakSet<IncomingMessage>()

/** The status of a request HTTP/1.1 does not allow (400 without Host, 417 for an unmet Expect), or 0. */
export function httpRefusal (req: IncomingMessage): number {
  if (req.headers.host === undefined && req.httpVersion === '1.1') return 400
  return unmetExpectations.has(req) ? 417 : 0
}

/** Open files kept for everything but client connections: data files, Redis, metrics, workers, stdio. */
export const FILES_RESERVED = 256
/** A refusal episode ends after this long without a refusal; its start and end are logged. */
const QUIET_MS = 10_000

/** The process's limit of open files (Node raises the soft limit to the hard one); undefined when unknown. */
export function openFileLimit (): number | undefined {
  try {
    const match = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))
    return match ? Number(match[1]) : undefined
  } catch {
    return undefined // not Linux
  }
}

interface ConnectionCaps { maxConnections: number, maxPerAddress: number } // maxPerAddress 0: no cap per address

/** The caps, lowered to leave FILES_RESERVED of the open-file limit, the one per address in proportion. */
export function connectionCaps (configured: ConnectionCaps, fileLimit = openFileLimit()): ConnectionCaps {
  const room = fileLimit === undefined ? Infinity : Math.max(1, fileLimit - FILES_RESERVED)
  if (configured.maxConnections <= room) return configured
  const share = Math.ceil(configured.maxPerAddress * room / configured.maxConnections)
  return { maxConnections: room, maxPerAddress: Math.min(configured.maxPerAddress, share) }
}

/** A whole HTTP response that closes the connection, with a fresh request id. */
function rawResponse (error: ApiError, requestId: string = randomUUID()): string {
  const body = error.toJson()
  return `HTTP/1.1 ${error.statusCode} ${STATUS_CODES[error.statusCode]}\r\n` +
    `Content-Type: ${JSON_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nCache-Control: no-store\r\n` +
    `X-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`
}

const PARSER_STATUS: Record<string, number> =
  { HPE_HEADER_OVERFLOW: 431, HPE_CHUNK_EXTENSIONS_OVERFLOW: 413, ERR_HTTP_REQUEST_TIMEOUT: 408 }

/** Fastify's `clientErrorHandler`: a request Node's parser refuses gets the API's error body and a request id. */
export function clientErrorHandler (this: FastifyInstance, err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return
  const status = PARSER_STATUS[err.code ?? ''] ?? 400
  const requestId = randomUUID()
  // As Node's own handler: never an answer over one already begun on this connection.
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent: boolean } | null })._httpMessage
  if (socket.writable && inFlight?.headersSent !== true) {
    socket.write(rawResponse(new ApiError('rest_bad_request', {}, status), requestId))
  }
  // Only the code: the error's message and raw packet may quote the request, token and all.
  if (status === 408) this.log.debug({ reqId: requestId, code: err.code }, 'connection timed out')
  else {
    this.log.info({ reqId: requestId, code: err.code, status, remoteAddress: socket.remoteAddress },
      'request refused by the HTTP parser')
  }
  socket.destroy()
}

// Caps the server's open connections (connectionCaps), in all and per address: one over a cap is answered 503 and
// closed before the HTTP server sees it; an episode's first refusal is logged, and its end with the count refused.
export function capConnections (server: Server, configured: ConnectionCaps, log: FastifyBaseLogger): void {
  const fileLimit = openFileLimit()
  const caps = connectionCaps(configured, fileLimit)
  if (caps.maxConnections < configured.maxConnections) {
    log.warn({ configured, ...caps, fileLimit },
      'MAX_CONNECTIONS lowered to fit the open-file limit, MAX_CONNECTIONS_PER_IP in proportion')
  }
  // The HTTP server's own 'connection' listener (the documented way to hand it one) is called for those admitted.
  const [serve, ...others] = server.listeners('connection') as ((socket: Socket) => void)[]
  if (serve === undefined || others.length > 0) throw new Error('capConnections: expected one connection listener')
  server.removeListener('connection', serve)

  let open = 0
  const byAddress = new Map<string, number>()
  let episode: { refused: number, since: number, timer: NodeJS.Timeout } | undefined
  const endEpisode = () => { // by the episode's timer, cleared when the server closes
    const seconds = Math.round((Date.now() - episode!.since) / 1000)
    log.info({ refused: episode!.refused, seconds }, 'connections accepted again')
    episode = undefined
  }

  const refuse = (socket: Socket, cap: 'total' | 'per address', address: string) => {
    socket.on('error', () => {}) // a peer gone already: nothing to report
    if (socket.writable) socket.write(rawResponse(new ApiError('svc_partner_api_too_many_connections')))
    socket.destroy()
    if (episode === undefined) {
      log.warn({ cap, address, open, maxConnections: caps.maxConnections, maxPerAddress: caps.maxPerAddress },
        'connections refused: too many open')
      episode = { refused: 0, since: Date.now(), timer: setTimeout(endEpisode, QUIET_MS).unref() }
    } else {
      episode.timer.refresh()
    }
    episode.refused++
  }

  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress
    if (address === undefined) return socket.destroy() // closed before it was taken
    const fromAddress = byAddress.get(address) ?? 0
    if (open >= caps.maxConnections) return refuse(socket, 'total', address)
    if (caps.maxPerAddress > 0 && fromAddress >= caps.maxPerAddress) return refuse(socket, 'per address', address)
    open++
    byAddress.set(address, fromAddress + 1)
    socket.once('close', () => {
      open--
      const left = byAddress.get(address)! - 1
      if (left === 0) byAddress.delete(address)
      else byAddress.set(address, left)
    })
    serve.call(server, socket)
  })
  server.once('close', () => clearTimeout(episode?.timer))
}
