// The one place the environment is read. Every variable is declared here with its default;
// `.env.example` lists the same variables (a test keeps the two in step).
import { existsSync, readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { parseEnv } from 'node:util'
import { Type, type Static } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'

const Port = (defaultPort: number, description: string) =>
  Type.Integer({ minimum: 0, maximum: 65535, default: defaultPort, description })

export const EnvSchema = Type.Object({
  NODE_ENV: Type.Union([Type.Literal('development'), Type.Literal('production'), Type.Literal('test')], {
    default: 'development',
    description: 'development | production | test; outside production a demo partner is created on first boot'
  }),
  HOST: Type.String({ minLength: 1, default: '127.0.0.1', description: 'address the HTTP server binds to' }),
  PORT: Port(3000, 'HTTP port (0 picks a free port)'),
  METRICS_PORT: Port(9464, 'port of the Prometheus /metrics endpoint, always bound to 127.0.0.1 (0 picks a free port, logged)'),
  API_PREFIX: Type.String({ pattern: '^(/[A-Za-z0-9_.-]+)+$', default: '/v1', description: 'path prefix of the partner API' }),
  DATA_DIR: Type.String({ minLength: 1, default: './data', description: 'folder of sandbox.db, production.db and control.db' }),
  PILOT_APP_URL: Type.String({
    pattern: '^https?://[^\\s/?#]+(/[^\\s?#]*)?$',
    default: 'https://helipaddy.com',
    description: 'base URL of the pilot web app; helipaddy_link = PILOT_APP_URL/pad/<id>'
  }),
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((level) => Type.Literal(level)),
    { default: 'info', description: 'pino log level' }
  ),
  TRUST_PROXY: Type.String({
    pattern: '^(true|false|\\d+|[0-9A-Fa-f.:/]+(,[0-9A-Fa-f.:/]+)*)$',
    default: 'false',
    description: 'false, true, a hop count, or comma-separated proxy addresses/CIDRs whose X-Forwarded-For is trusted'
  }),
  CACHE_TTL_SECONDS: Type.Integer({ minimum: 0, maximum: 86400, default: 60, description: 'response cache lifetime; 0 disables the cache' }),
  CACHE_MAX_ENTRIES: Type.Integer({ minimum: 1, maximum: 10_000_000, default: 10000, description: 'response cache size in entries (it also remembers as many request URLs, of at most 512 characters, that lead to them)' }),
  CACHE_MAX_MB: Type.Integer({ minimum: 1, maximum: 100_000, default: 64, description: 'response cache size in MB of answer bodies' }),
  SANDBOX_SITE_COUNT: Type.Integer({ minimum: 0, maximum: 10_000_000, default: 20000, description: 'sites generated into a missing sandbox.db at first boot' }),
  SANDBOX_SEED: Type.String({ minLength: 1, maxLength: 64, default: 'sandbox', description: 'seed of the generated sandbox dataset' }),
  INDEX_WORKER_MIN_MB: Type.Integer({ minimum: 0, maximum: 1_000_000, default: 16, description: 'dataset files of at least this size are indexed in a worker thread and get an index snapshot for fast boots' }),
  PARTNER_REFRESH_MS: Type.Integer({ minimum: 50, maximum: 5000, default: 1000, description: 'how often control.db is checked for partner changes (changes apply within this time)' }),
  STATE_URL: Type.String({ pattern: '^(|rediss?://\\S+)$', default: '', description: 'redis://host:port/db: rate-limit windows and telemetry shared by several instances; empty: in process' }),
  COUNTER_SAVE_MS: Type.Integer({ minimum: 100, maximum: 5000, default: 2000, description: 'how often rate-limit counters are saved to control.db (a crash loses at most this much)' }),
  SHUTDOWN_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 600000, default: 10000, description: 'graceful close: longest wait for requests in flight' }),
  MAX_CONNECTIONS: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 10000, description: 'open HTTP connections at most; lowered at boot to fit the open-file limit; more are answered 503 and closed' }),
  MAX_CONNECTIONS_PER_IP: Type.Integer({ minimum: 0, maximum: 1_000_000, default: 1000, description: 'open HTTP connections at most from one client address (0: no cap per address); more are answered 503 and closed' }),
  HEADERS_TIMEOUT_MS: Type.Integer({ minimum: 1000, maximum: 600000, default: 10000, description: 'a request\'s headers must arrive within this time (a connection\'s first request: of its opening); then 408 and closed' }),
  REQUEST_TIMEOUT_MS: Type.Integer({ minimum: 1000, maximum: 600000, default: 30000, description: 'a whole request must arrive within this time; then 408 and closed (at least HEADERS_TIMEOUT_MS)' }),
  KEEP_ALIVE_TIMEOUT_MS: Type.Integer({ minimum: 1000, maximum: 600000, default: 72000, description: 'an idle keep-alive connection is closed after this time' })
})

export type Env = Static<typeof EnvSchema>

export interface Config {
  nodeEnv: Env['NODE_ENV']
  host: string
  port: number
  apiPrefix: string
  dataDir: string
  pilotAppUrl: string
  logLevel: string
  trustProxy: boolean | number | string[]
  cacheTtlSeconds: number
  cacheMaxEntries: number
  cacheMaxMb: number
  sandboxSiteCount: number
  sandboxSeed: string
  indexWorkerMinMb: number
  partnerRefreshMs: number
  counterSaveMs: number
  /** '' when the state is in process */
  stateUrl: string
  shutdownTimeoutMs: number
  metricsPort: number
  maxConnections: number
  /** 0: no cap per client address */
  maxConnectionsPerIp: number
  headersTimeoutMs: number
  requestTimeoutMs: number
  keepAliveTimeoutMs: number
}

export class ConfigError extends Error {
  constructor (readonly variable: string, message: string) {
    super(message)
    this.name = 'ConfigError'
  }
}

export const ENV_KEYS = Object.keys(EnvSchema.properties) as (keyof Env)[]

/** Reads `.env` (when present) under the given environment; real variables win over the file. */
export function readEnvFile (path: string): Record<string, string> {
  if (!existsSync(path)) return {}
  return parseEnv(readFileSync(path, 'utf8')) as Record<string, string>
}

export function loadConfig (
  env: Record<string, string | undefined> = process.env,
  options: { envFile?: string | false, cwd?: string } = {}
): Config {
  const cwd = options.cwd ?? process.cwd()
  const fileVars = options.envFile === false ? {} : readEnvFile(resolve(cwd, options.envFile ?? '.env'))
  const raw: Record<string, unknown> = {}
  for (const key of ENV_KEYS) {
    const value = env[key] ?? fileVars[key]
    if (value !== undefined && value !== '') raw[key] = value
  }
  const withDefaults = Value.Default(EnvSchema, raw)
  for (const key of ENV_KEYS) {
    const property = EnvSchema.properties[key]
    if (typeof raw[key] !== 'string') continue
    const text = raw[key] as string
    if (property.type === 'integer') {
      if (!/^\d+$/.test(text)) throw invalid(key, text)
      ;(withDefaults as Record<string, unknown>)[key] = Number(text)
    }
  }
  const firstError = Value.Errors(EnvSchema, withDefaults).First()
  if (firstError) {
    const key = firstError.path.replace(/^\//, '') as keyof Env
    throw invalid(key, String((withDefaults as Record<string, unknown>)[key]))
  }
  const e = withDefaults as Env
  // Node refuses to start a server whose headers may take longer than the whole request.
  if (e.HEADERS_TIMEOUT_MS > e.REQUEST_TIMEOUT_MS) {
    throw new ConfigError('HEADERS_TIMEOUT_MS', `invalid configuration: HEADERS_TIMEOUT_MS=${e.HEADERS_TIMEOUT_MS} is more than REQUEST_TIMEOUT_MS=${e.REQUEST_TIMEOUT_MS}`)
  }
  return {
    nodeEnv: e.NODE_ENV,
    host: e.HOST,
    port: e.PORT,
    metricsPort: e.METRICS_PORT,
    apiPrefix: e.API_PREFIX,
    dataDir: resolve(cwd, e.DATA_DIR),
    pilotAppUrl: e.PILOT_APP_URL.replace(/\/+$/, ''),
    logLevel: e.LOG_LEVEL,
    trustProxy: parseTrustProxy(e.TRUST_PROXY),
    cacheTtlSeconds: e.CACHE_TTL_SECONDS,
    cacheMaxEntries: e.CACHE_MAX_ENTRIES,
    cacheMaxMb: e.CACHE_MAX_MB,
    sandboxSiteCount: e.SANDBOX_SITE_COUNT,
    sandboxSeed: e.SANDBOX_SEED,
    indexWorkerMinMb: e.INDEX_WORKER_MIN_MB,
    partnerRefreshMs: e.PARTNER_REFRESH_MS,
    counterSaveMs: e.COUNTER_SAVE_MS,
    stateUrl: e.STATE_URL,
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    maxConnections: e.MAX_CONNECTIONS,
    maxConnectionsPerIp: e.MAX_CONNECTIONS_PER_IP,
    headersTimeoutMs: e.HEADERS_TIMEOUT_MS,
    requestTimeoutMs: e.REQUEST_TIMEOUT_MS,
    keepAliveTimeoutMs: e.KEEP_ALIVE_TIMEOUT_MS
  }
}

function invalid (key: keyof Env, got: string): ConfigError {
  const description = EnvSchema.properties[key]?.description ?? ''
  const shown = got.length > 40 ? `${got.slice(0, 40)}…` : got
  return new ConfigError(key, `invalid configuration: ${key}=${JSON.stringify(shown)} is not valid (${description})`)
}

function parseTrustProxy (value: string): boolean | number | string[] {
  if (value === 'true') return true
  if (value === 'false') return false
  if (/^\d+$/.test(value)) return Number(value)
  return value.split(',')
}
