// buildApp(config): the Fastify instance with infrastructure plugins first, then app plugins,
// then routes. server.ts listens on it; tests drive the very same instance with inject().
import { randomUUID } from 'node:crypto'
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyServerOptions } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { TObject } from '@sinclair/typebox'
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler'
import type { Config } from './config.ts'
import { lazyChildLogger } from './http/lazy-logger.ts'
import { capConnections, clientErrorHandler, expectationUnmet, httpRefusal } from './http/connections.ts'
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
import answers from '../plugins/answers.ts'
import records from '../plugins/records.ts'
import datasets from '../plugins/datasets.ts'
import partners from '../plugins/partners.ts'
import reload from '../plugins/reload.ts'
import usage from '../plugins/usage.ts'
import cache from '../plugins/cache.ts'

declare module 'fastify' {
  interface FastifyInstance {
    config: Config
  }
}

/**
 * TRUST_PROXY as a hop count: the nearest N hops are trusted, whoever they are (Fastify 5.12 no
 * longer trusts any for a number, for that reason; .env.example says when a count is safe).
 */
const hopsTrusted = (hops: number) => (_address: string, hop: number) => hop < hops

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/
const MAX_PARAM_LENGTH = 1 << 20

export interface BuildOptions {
  /** pino options or a logger; defaults to JSON lines at config.logLevel */
  logger?: FastifyServerOptions['logger']
  loggerInstance?: FastifyServerOptions['loggerInstance']
  /** where the default logger writes: the process's (src/server.ts), else one made on stdout */
  destination?: LogDestination
  /** the rate limiter's clock (tests inject one); Date.now by default */
  clock?: () => number
}

export function loggerOptions (config: Config) {
  return {
    level: config.logLevel,
    serializers: {
      req (request: { method: string, url: string, ip?: string, id?: string }) {
        return { method: request.method, url: redactUrl(request.url), remoteAddress: request.ip }
      }
    }
  }
}

/**
 * Fastify's own response serialisers, each compiled on first use instead of at boot: every status a route answers has
 * a schema (the OpenAPI document's source), but most answers are sent as bytes, so most serialisers are never used.
 */
function lazySerializers (...args: Parameters<ReturnType<typeof SerializerSelector>>) {
  const compile = SerializerSelector()(...args)
  return (route: Parameters<typeof compile>[0]) => {
    let serialize: ReturnType<typeof compile> | undefined
    return (data: unknown) => (serialize ??= compile(route))(data)
  }
}

export async function buildApp (config: Config, options: BuildOptions = {}): Promise<FastifyInstance> {
  // stdout, holding LOG_BUFFER_MB of lines at most (src/http/log-destination.ts), unless a logger is given
  const destination = options.loggerInstance === undefined && options.logger === undefined
    ? options.destination ?? logDestination({ maxBytes: config.logBufferMb * 1024 * 1024 })
    : undefined
  const app = Fastify({
    ...(options.loggerInstance
      ? { loggerInstance: options.loggerInstance }
      : { logger: options.logger ?? { ...loggerOptions(config), stream: destination!.stream } }),
    trustProxy: typeof config.trustProxy === 'number' ? hopsTrusted(config.trustProxy) : config.trustProxy,
    // A caller's id is logged and echoed: one that holds a token (ours by its prefix, or any
    // partner's, whatever its shape) is replaced, so that no token reaches a log line.
    genReqId: (req): string => {
      const given = req.headers['x-request-id']
      return typeof given === 'string' && REQUEST_ID.test(given) && !given.includes(TOKEN_PREFIX) &&
        app.partners.byToken(given) === undefined
        ? given
        : randomUUID()
    },
    // Slow or idle connections must not hold their slots (src/http/connections.ts caps them). Node checks these
    // timeouts every connectionsCheckingInterval, whose default would let a connection overstay them long.
    keepAliveTimeout: config.keepAliveTimeoutMs,
    requestTimeout: config.requestTimeoutMs,
    // A connection on which nothing moves (a client that stopped reading its answer) is closed: no timeout above covers
    // the answer's way out. Longer than the request's, so that one that sends nothing still gets its 408 first.
    connectionTimeout: config.requestTimeoutMs + 2000,
    http: {
      headersTimeout: config.headersTimeoutMs,
      connectionsCheckingInterval: 1000,
      // Node's own answer to a request without Host has an empty body: the onRequest hook answers it.
      requireHostHeader: false
    },
    // Requests Node's HTTP parser refuses get the API's error body and a request id too.
    clientErrorHandler,
    // The router's own bound on a path parameter's length is lifted (past it a URL is refused before any hook): a site
    // id is checked by its route, after the token (the request head's size bounds it).
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PARAM_LENGTH },
    // one access line per request (plugins/access-log.ts) instead of Fastify's two
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: lazyChildLogger,
    // A URL the router cannot decode: Fastify's own answer would quote the URL, token and all.
    frameworkErrors: (error, request, reply) => {
      request.log.info({ code: error.code }, 'request refused by the framework')
      ;(reply as unknown as FastifyReply).header('x-request-id', request.id).header('cache-control', 'no-store')
        .code(400).send(new ApiError('rest_bad_request').toBody())
    },
    // Closing: idle keep-alive connections are closed at once; a request already on a connection is answered in full
    // (Connection: close), not refused with Fastify's 503 body, which is not the API's error shape.
    forceCloseConnections: 'idle',
    return503OnClosing: false,
    // A dataset file without a current index snapshot is verified and indexed at boot, in a worker, which can take
    // longer than Fastify's default time per plugin.
    pluginTimeout: 300_000,
    schemaController: { compilersFactory: { buildSerializer: lazySerializers } }
  }).withTypeProvider<TypeBoxTypeProvider>()

  app.decorate('config', config)
  // The HEAD route Fastify makes for a GET ends its onSend hooks with one that drops the body, before
  // any hook a plugin adds later (compress, the partner pipeline). It goes, so that a HEAD runs its GET's
  // hooks in full (same ETag, encoding and usage record); Node sends no body for a HEAD.
  app.addHook('onRoute', (route) => {
    if (route.method === 'HEAD' && route.onSend !== undefined) route.onSend = [route.onSend].flat().slice(0, -1)
  })
  destination?.reportDropsTo(app.log)
  // MAX_CONNECTIONS and MAX_CONNECTIONS_PER_IP, on the server itself: whatever listens on this app
  // (src/server.ts, tests) refuses the connections past them (inject() opens none).
  capConnections(
    app.server, { maxConnections: config.maxConnections, maxPerAddress: config.maxConnectionsPerIp }, app.log
  )
  // An Expect other than 100-continue: Node's own 417 has an empty body and no request id. The
  // request goes through Fastify instead, marked, and the onRequest hook below refuses it.
  app.server.on('checkExpectation', (req, res) => {
    expectationUnmet(req)
    app.routing(req, res)
  })
  app.setValidatorCompiler(({ schema, httpPart }) => {
    if (httpPart !== 'querystring' && httpPart !== 'params') throw new Error(`no validator for ${httpPart}`)
    return compileQuery(schema as TObject)
  })
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id)
    done()
  })
  await app.register(errors)
  // Requests HTTP/1.1 does not allow (without Host; with an Expect Node cannot meet): refused with
  // the API's body, and the connection closed, as after the requests the parser refuses.
  app.addHook('onRequest', (request, reply, done) => {
    const status = httpRefusal(request.raw)
    if (status === 0) return done()
    reply.header('connection', 'close')
    done(new ApiError('rest_bad_request', {}, undefined, status))
  })
  await app.register(health)
  await app.register(sharedState, { stateUrl: config.stateUrl || undefined })
  await app.register(datasets, { dataDir: config.dataDir, workerMinMb: config.indexWorkerMinMb })
  await app.register(answers)
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
    await app.register(accessLog, { knownFormat: options.loggerInstance === undefined })
    // Set here, without a prefix, it replaces the root's 404 handler and runs this context's hooks
    // (the root's, then the access line's): root hooks must be added before this context.
    app.setNotFoundHandler(noRoute)
    // the partner routes and their pipeline, in a context of their own
    await app.register(partnerApi, { prefix: config.apiPrefix })
    await app.register(indexRoutes, { apiPrefix: config.apiPrefix, supportContact: config.supportContact })
    await app.register(docsRoutes, { apiPrefix: config.apiPrefix })
  })
  await app.ready()
  return app
}
