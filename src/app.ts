// buildApp(config): infrastructure plugins, then app plugins, then routes; server.ts listens on it, tests inject().
import { randomUUID } from 'node:crypto'
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyServerOptions } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { TObject } from '@sinclair/typebox'
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler'
import type { Config } from './config.ts'
import { lazyChildLogger } from './http/lazy-logger.ts'
import { capConnections, clientErrorHandler, httpRefusal, unmetExpectations } from './http/connections.ts'
import { logDestination, type LogDestination } from './http/log-destination.ts'
import { ApiError } from './errors.ts'
import { TOKEN_PREFIX } from './partners/tokens.ts'
import { compileQuery } from './http/query.ts'
import { redactUrl } from './http/redact.ts'
import partnerApi from './routes/partner-api.ts'
import healthRoutes from './routes/health.ts'
import indexRoutes from './routes/index.ts'
import docsRoutes from './routes/docs.ts'
import errors, { noRoute } from '../plugins/errors.ts'
import accessLog from '../plugins/access-log.ts'
import health from '../plugins/health.ts'
import sharedState from '../plugins/shared-state.ts'
import metrics from '../plugins/metrics.ts'
import openapi from '../plugins/openapi.ts'
import records from '../plugins/records.ts'
import datasets from '../plugins/datasets.ts'
import partners from '../plugins/partners.ts'
import reload from '../plugins/reload.ts'
import usage from '../plugins/usage.ts'
import cache from '../plugins/cache.ts'

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/

/** `destination`: where the default logger writes (src/server.ts's); `clock`: the rate limiter's (tests inject one). */
export interface BuildOptions {
  logger?: FastifyServerOptions['logger'], destination?: LogDestination, clock?: () => number
}

export function loggerOptions (config: Config) {
  return {
    level: config.logLevel,
    serializers: {
      req (request: { method: string, url: string, ip?: string }) {
        return { method: request.method, url: redactUrl(request.url), remoteAddress: request.ip }
      }
    }
  }
}

// Response serialisers compiled on first use: every status has a schema (for OpenAPI), most are never used.
function lazySerializers (...args: Parameters<ReturnType<typeof SerializerSelector>>) {
  const compile = SerializerSelector()(...args)
  return (route: Parameters<typeof compile>[0]) => {
    let serialize: ReturnType<typeof compile> | undefined
    return (data: unknown) => (serialize ??= compile(route))(data)
  }
}

export async function buildApp (config: Config, options: BuildOptions = {}): Promise<FastifyInstance> {
  const destination = options.logger === undefined
    ? options.destination ?? logDestination({ maxBytes: config.logBufferMb * 1024 * 1024 })
    : undefined
  const { trustProxy } = config
  const app = Fastify({
    logger: options.logger ?? { ...loggerOptions(config), stream: destination!.stream },
    // A hop count trusts the nearest N hops whoever they are (Fastify 5.12 no longer does for a number).
    trustProxy: typeof trustProxy === 'number' ? (_address: string, hop: number) => hop < trustProxy : trustProxy,
    // An id holding a token (ours by its prefix, or any partner's) is replaced: no token reaches a log line.
    genReqId: (req): string => {
      const given = req.headers['x-request-id']
      return typeof given === 'string' && REQUEST_ID.test(given) && !given.includes(TOKEN_PREFIX) &&
        app.partners.byToken(given) === undefined
        ? given
        : randomUUID()
    },
    // Slow or idle connections must not hold their capped slots: checked far more often than Node's default.
    keepAliveTimeout: config.keepAliveTimeoutMs,
    requestTimeout: config.requestTimeoutMs,
    // Closes a connection on which nothing moves (a client not reading its answer); after the request's 408.
    connectionTimeout: config.requestTimeoutMs + 2000,
    http: {
      headersTimeout: config.headersTimeoutMs,
      connectionsCheckingInterval: 1000,
      // Node's own answer to a request without Host has an empty body: the onRequest hook answers it
      requireHostHeader: false
    },
    clientErrorHandler,
    // Past the router's bound a URL is refused before any hook: a site id is checked by its route, after the token.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 1 << 20 },
    // one access line per request (plugins/access-log.ts) instead of Fastify's two
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: lazyChildLogger,
    // A URL the router cannot decode: Fastify's own answer would quote the URL, token and all.
    frameworkErrors: (error, request, reply) => {
      request.log.info({ code: error.code }, 'request refused by the framework')
      ;(reply as unknown as FastifyReply).header('x-request-id', request.id).header('cache-control', 'no-store')
        .code(400).send(new ApiError('rest_bad_request').toBody())
    },
    // Closing: idle connections close at once; a request in flight is answered in full, not with Fastify's 503 body.
    forceCloseConnections: 'idle',
    return503OnClosing: false,
    // Indexing a dataset without a current snapshot at boot can outlast Fastify's default time per plugin.
    pluginTimeout: 300_000,
    schemaController: { compilersFactory: { buildSerializer: lazySerializers } }
  }).withTypeProvider<TypeBoxTypeProvider>()

  // Fastify's HEAD route ends its onSend hooks with a body dropper, before those added later: it goes, so a HEAD
  // runs its GET's hooks in full (same ETag, encoding and usage record). Node sends no body for a HEAD.
  app.addHook('onRoute', (route) => {
    if (route.method === 'HEAD' && route.onSend !== undefined) route.onSend = [route.onSend].flat().slice(0, -1)
  })
  destination?.reportDropsTo(app.log)
  // on the server itself: whatever listens on this app refuses the connections past the caps
  capConnections(app.server, { maxConnections: config.maxConnections, maxPerAddress: config.maxConnectionsPerIp },
    app.log)
  // An Expect other than 100-continue: Node's own 417 is empty. The request goes through Fastify, marked.
  app.server.on('checkExpectation', (req, res) => {
    unmetExpectations.add(req)
    app.routing(req, res)
  })
  app.setValidatorCompiler(({ schema, httpPart }) => {
    if (httpPart !== 'querystring' && httpPart !== 'params') throw new Error(`no validator for ${httpPart}`)
    return compileQuery(schema as TObject)
  })
  await app.register(errors)
  // Requests HTTP/1.1 does not allow (no Host; an Expect Node cannot meet): the API's body, the connection closed.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id)
    const status = httpRefusal(request.raw)
    if (status === 0) return done()
    reply.header('connection', 'close')
    done(new ApiError('rest_bad_request', {}, status))
  })
  await app.register(health)
  await app.register(sharedState, { stateUrl: config.stateUrl || undefined })
  await app.register(datasets, { dataDir: config.dataDir, workerMinMb: config.indexWorkerMinMb })
  await app.register(records, { pilotAppUrl: config.pilotAppUrl, maxMb: config.fragmentsMaxMb })
  await app.register(partners, { dataDir: config.dataDir, refreshMs: config.partnerRefreshMs })
  await app.register(cache, {
    ttlSeconds: config.cacheTtlSeconds,
    maxEntries: config.cacheMaxEntries,
    maxMb: config.cacheMaxMb,
    pilotAppUrl: config.pilotAppUrl
  })
  await app.register(metrics, { log: destination, port: config.metricsPort })
  await app.register(reload, { pollMs: config.partnerRefreshMs })
  await app.register(usage, {
    clock: options.clock, saveMs: config.counterSaveMs, historyDays: config.usageHistoryDays
  })
  await app.register(openapi, { supportContact: config.supportContact })
  // the operators' probes, outside the access log's context
  await app.register(healthRoutes)
  // every other request, unknown paths included, gets an access line
  await app.register(async function logged (app) {
    await app.register(accessLog)
    // Set here, without a prefix, it replaces the root's 404 handler and runs this context's hooks (the root's, then
    // the access line's): root hooks must be added before this context.
    app.setNotFoundHandler(noRoute)
    // the partner routes and their pipeline, in a context of their own
    await app.register(partnerApi, { prefix: config.apiPrefix })
    await app.register(indexRoutes, { apiPrefix: config.apiPrefix, supportContact: config.supportContact })
    await app.register(docsRoutes, { apiPrefix: config.apiPrefix })
  })
  await app.ready()
  return app
}
