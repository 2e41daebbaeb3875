// The one place the environment is read. Every variable is declared once, in EnvSchema, with its
// default; env-schema applies the defaults, converts and checks the values, and Config is derived
// from the schema. `.env.example` lists the same variables (a test keeps the two in step).
import { existsSync, readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { parseEnv } from 'node:util'
import { Type, type Static, type StringOptions } from '@sinclair/typebox'
import envSchema from 'env-schema'

const Int = (minimum: number, maximum: number, defaultValue: number, description: string) =>
  Type.Integer({ minimum, maximum, default: defaultValue, description })
const Text = (rules: StringOptions, defaultValue: string, description: string) =>
  Type.String({ ...rules, default: defaultValue, description })

export const EnvSchema = Type.Object({
  NODE_ENV: Type.Union([Type.Literal('development'), Type.Literal('production'), Type.Literal('test')], {
    default: 'development',
    description: 'development | production | test; outside production a demo partner is created on first boot'
  }),
  HOST: Text({ minLength: 1 }, '127.0.0.1', 'address the HTTP server binds to'),
  PORT: Int(0, 65535, 3000, 'HTTP port (0 picks a free port)'),
  METRICS_PORT: Int(0, 65535, 9464,
    'port of the Prometheus /metrics endpoint, always bound to 127.0.0.1 (0 picks a free port, logged)'),
  API_PREFIX: Text({ pattern: '^(/[A-Za-z0-9_.-]+)+$' }, '/v1', 'path prefix of the partner API'),
  DATA_DIR: Text({ minLength: 1 }, './data', 'folder of sandbox.db, production.db and control.db'),
  PILOT_APP_URL: Text({ pattern: '^https?://[^\\s/?#]+(/[^\\s?#]*)?$' }, 'https://helipaddy.com',
    'base URL of the pilot web app; helipaddy_link = PILOT_APP_URL/pad/<id>'),
  SUPPORT_CONTACT: Text({ maxLength: 200, pattern: '^[^\\u0000-\\u001f\\u007f]*$' }, '',
    'how partners reach support (an e-mail address or a URL), shown by GET /v1, /docs and the OpenAPI document'),
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((level) => Type.Literal(level)),
    { default: 'info', description: 'pino log level' }
  ),
  LOG_BUFFER_MB: Int(1, 1024, 16,
    'log lines waiting for stdout at most (MB); past it lines are dropped, counted and reported'),
  TRUST_PROXY: Text({ pattern: '^(true|false|\\d+|[0-9A-Fa-f.:/]+(,[0-9A-Fa-f.:/]+)*)$' }, 'false',
    'false, true, a hop count (the nearest N hops trusted whoever they are: only where the port is reached ' +
    'through the proxies alone), or comma-separated proxy addresses/CIDRs whose X-Forwarded-For is trusted'),
  CACHE_TTL_SECONDS: Int(0, 86400, 60, 'response cache lifetime; 0 disables the cache'),
  CACHE_MAX_ENTRIES: Int(1, 10_000_000, 10000, 'response cache size in entries'),
  CACHE_MAX_MB: Int(1, 100_000, 64, 'response cache size in MB of answer bodies'),
  FRAGMENTS_MAX_MB: Int(64, 1_000_000, 384,
    'records\' JSON kept in memory at most (MB, every dataset and record form); past it the ' +
    'oldest 8 MB not used since it last came up is forgotten and made again when asked for'),
  SANDBOX_SITE_COUNT: Int(0, 10_000_000, 20000, 'sites generated into a missing sandbox.db at first boot'),
  SANDBOX_SEED: Text({ minLength: 1, maxLength: 64 }, 'sandbox', 'seed of the generated sandbox dataset'),
  DATASET_KEEP: Int(1, 100, 3,
    'replaced dataset files kept per dataset (DATA_DIR/versions) by datasets import, generate and ' +
    'rollback; at least 1, so a rollback can always be undone'),
  INDEX_WORKER_MIN_MB: Int(0, 1_000_000, 16,
    'dataset files of at least this size are indexed in a worker thread and get an index snapshot ' +
    'for fast boots'),
  PARTNER_REFRESH_MS: Int(50, 5000, 1000,
    'how often control.db is checked for partner changes (changes apply within this time)'),
  STATE_URL: Text({ pattern: '^(|rediss?://\\S+)$' }, '',
    'redis://host:port/db: rate-limit windows and telemetry shared by several instances; empty: in process'),
  COUNTER_SAVE_MS: Int(100, 5000, 2000,
    'how often rate-limit counters are saved to control.db (a crash loses at most this much)'),
  USAGE_HISTORY_DAYS: Int(1, 3660, 90,
    'days of daily usage history kept per partner (partners usage --days, partners report)'),
  SHUTDOWN_TIMEOUT_MS: Int(100, 600000, 10000,
    'graceful close: longest wait for requests in flight, then for the log\'s last lines'),
  MAX_CONNECTIONS: Int(1, 1_000_000, 10000,
    'open HTTP connections at most; lowered at boot to fit the open-file limit; more are answered 503 and closed'),
  MAX_CONNECTIONS_PER_IP: Int(0, 1_000_000, 1000,
    'open HTTP connections at most from one client address (0: no cap per address); more are answered 503 and closed'),
  HEADERS_TIMEOUT_MS: Int(1000, 600000, 10000,
    'a request\'s headers must arrive within this time (a connection\'s first request: of its opening); ' +
    'then 408 and closed'),
  REQUEST_TIMEOUT_MS: Int(1000, 600000, 30000,
    'a whole request must arrive within this time; then 408 and closed (at least HEADERS_TIMEOUT_MS)'),
  KEEP_ALIVE_TIMEOUT_MS: Int(1000, 600000, 72000, 'an idle keep-alive connection is closed after this time')
})

type Env = Static<typeof EnvSchema>

/** SHUTDOWN_TIMEOUT_MS → shutdownTimeoutMs */
type CamelCase<S extends string> = S extends `${infer Head}_${infer Tail}`
  ? `${Lowercase<Head>}${Capitalize<CamelCase<Tail>>}`
  : Lowercase<S>
const camelCase = (key: string) => key.toLowerCase().replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())

/** Each variable by its camelCase name; DATA_DIR resolved, PILOT_APP_URL without trailing slash, TRUST_PROXY parsed. */
export type Config = Omit<{ [K in keyof Env as CamelCase<K>]: Env[K] }, 'trustProxy'> &
  { trustProxy: boolean | number | string[] }

export class ConfigError extends Error {
  constructor (readonly variable: string, message: string) {
    super(message)
    this.name = 'ConfigError'
  }
}

export const ENV_KEYS = Object.keys(EnvSchema.properties) as (keyof Env)[]

export function loadConfig (
  env: Record<string, string | undefined> = process.env,
  options: { envFile?: boolean, cwd?: string } = {}
): Config {
  const cwd = options.cwd ?? process.cwd()
  // `.env` when present (unless envFile is false); real variables win over the file
  const dotEnv = resolve(cwd, '.env')
  const fileVars = options.envFile !== false && existsSync(dotEnv) ? parseEnv(readFileSync(dotEnv, 'utf8')) : {}
  const raw: Record<string, string> = {}
  for (const key of ENV_KEYS) {
    const value = env[key] ?? fileVars[key]
    if (value !== undefined && value !== '') raw[key] = value // empty: unset, the default applies
    // digits only: the schema's coercion would also take 1e3, 0x10 or " 1"
    const integer = EnvSchema.properties[key].type === 'integer'
    if (raw[key] !== undefined && integer && !/^\d+$/.test(raw[key])) throw invalid(key, raw[key])
  }
  let e: Env
  try {
    e = envSchema<Env>({ schema: EnvSchema, data: raw, env: false })
  } catch (err) {
    const errors = (err as { errors?: { instancePath: string }[] }).errors
    const key = errors?.[0]?.instancePath.slice(1) as keyof Env | undefined
    if (key === undefined || !(key in raw)) throw err
    throw invalid(key, raw[key])
  }
  // Node refuses to start a server whose headers may take longer than the whole request.
  if (e.HEADERS_TIMEOUT_MS > e.REQUEST_TIMEOUT_MS) {
    throw new ConfigError('HEADERS_TIMEOUT_MS', 'invalid configuration: ' +
      `HEADERS_TIMEOUT_MS=${e.HEADERS_TIMEOUT_MS} is more than REQUEST_TIMEOUT_MS=${e.REQUEST_TIMEOUT_MS}`)
  }
  const trust = e.TRUST_PROXY
  const config = Object.fromEntries(ENV_KEYS.map((key) => [camelCase(key), e[key]])) as Record<string, unknown>
  return {
    ...config as Omit<Config, 'trustProxy'>,
    dataDir: resolve(cwd, e.DATA_DIR),
    pilotAppUrl: e.PILOT_APP_URL.replace(/\/+$/, ''),
    trustProxy: /^(true|false)$/.test(trust) ? trust === 'true' : /^\d+$/.test(trust) ? Number(trust) : trust.split(',')
  }
}

function invalid (key: keyof Env, got: string): ConfigError {
  const description = EnvSchema.properties[key]?.description ?? ''
  const shown = got.length > 40 ? `${got.slice(0, 40)}…` : got
  return new ConfigError(key, `invalid configuration: ${key}=${JSON.stringify(shown)} is not valid (${description})`)
}
