// GET /metrics on METRICS_PORT, bound to 127.0.0.1 only: the Prometheus text of the app's
// registry, apart from the partner port (no token there, so never reachable from outside).
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Registry } from 'prom-client'
import { ApiError } from '../errors.ts'

export interface MetricsServer {
  url: string
  /** Stops listening and ends every connection, kept-alive scrapes included: a scrape cannot hold a close. */
  close (): Promise<void>
}

export function startMetricsServer (registry: Registry, port: number): Promise<MetricsServer> {
  const server = createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0]
    if (request.method !== 'GET' || path !== '/metrics') {
      response.writeHead(404, { 'content-type': 'application/json; charset=utf-8' })
      response.end(new ApiError('rest_no_route').toJson())
      return
    }
    registry.metrics().then((text) => {
      response.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' })
      response.end(text)
    }, (err: Error) => {
      response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' })
      response.end(`metrics failed: ${err.message}\n`)
    })
  })
  return new Promise((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      reject(new Error(err.code === 'EADDRINUSE'
        ? `METRICS_PORT ${port} is in use on 127.0.0.1; choose another (0 picks a free one)`
        : err.message))
    })
    server.listen(port, '127.0.0.1', () => {
      server.keepAliveTimeout = 5_000
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`
      const close = () => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()))
        server.closeAllConnections()
        return closed
      }
      resolve({ url, close })
    })
  })
}
