import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseEnv } from 'node:util'
import t from 'tap'
import { ConfigError, ENV_KEYS, EnvSchema, loadConfig } from '../../src/config.ts'
import { REPO_ROOT, tmpDataDir } from '../helper.ts'

t.test('.env.example lists every variable with its default, and nothing else', async (t) => {
  const example = parseEnv(readFileSync(join(REPO_ROOT, '.env.example'), 'utf8')) as Record<string, string>
  t.same(Object.keys(example).sort(), [...ENV_KEYS].sort())
  for (const key of ENV_KEYS) t.equal(example[key], String(EnvSchema.properties[key].default), key)
})

t.test('defaults', async (t) => {
  const config = loadConfig({}, { envFile: false, cwd: '/srv/app' })
  t.same(config, {
    nodeEnv: 'development', host: '127.0.0.1', port: 3000, metricsPort: 9464, apiPrefix: '/v1',
    dataDir: '/srv/app/data', pilotAppUrl: 'https://helipaddy.com', supportContact: '', logLevel: 'info',
    logBufferMb: 16, trustProxy: false, cacheTtlSeconds: 60,
    cacheMaxEntries: 10000, cacheMaxMb: 64, fragmentsMaxMb: 384, sandboxSiteCount: 20000, sandboxSeed: 'sandbox',
    datasetKeep: 3, indexWorkerMinMb: 16, partnerRefreshMs: 1000, counterSaveMs: 2000, stateUrl: '',
    usageHistoryDays: 90,
    shutdownTimeoutMs: 10000, maxConnections: 10000, maxConnectionsPerIp: 1000, headersTimeoutMs: 10000,
    requestTimeoutMs: 30000, keepAliveTimeoutMs: 72000
  })
})

t.test('values are converted; TRUST_PROXY forms; trailing slash of PILOT_APP_URL dropped', async (t) => {
  const c = loadConfig(
    { PORT: '8080', TRUST_PROXY: '2', PILOT_APP_URL: 'https://pilot.example/app/', NODE_ENV: 'production' },
    { envFile: false })
  t.equal(c.port, 8080)
  t.equal(c.trustProxy, 2)
  t.equal(c.pilotAppUrl, 'https://pilot.example/app')
  t.equal(c.nodeEnv, 'production')
  t.same(loadConfig({ TRUST_PROXY: '10.0.0.0/8,127.0.0.1' }, { envFile: false }).trustProxy,
    ['10.0.0.0/8', '127.0.0.1'])
  t.equal(loadConfig({ TRUST_PROXY: 'true' }, { envFile: false }).trustProxy, true)
})

t.test('a bad value stops start-up naming the variable', async (t) => {
  const bad: Record<string, string> = {
    PORT: 'abc', NODE_ENV: 'staging', API_PREFIX: 'v1', PILOT_APP_URL: 'ftp://x', LOG_LEVEL: 'loud',
    TRUST_PROXY: 'maybe', CACHE_TTL_SECONDS: '-1', CACHE_MAX_ENTRIES: '0', PARTNER_REFRESH_MS: '10',
    SANDBOX_SITE_COUNT: '1.5', SHUTDOWN_TIMEOUT_MS: '1e3'
  }
  for (const [key, value] of Object.entries(bad)) {
    let caught: unknown
    try { loadConfig({ [key]: value }, { envFile: false }) } catch (err) { caught = err }
    t.ok(caught instanceof ConfigError, `${key}=${value} throws ConfigError`)
    t.equal((caught as ConfigError).variable, key)
    t.equal((caught as ConfigError).message.split('=')[0], `invalid configuration: ${key}`)
  }
  t.throws(() => loadConfig({ PORT: '70000' }, { envFile: false }), /^invalid configuration: PORT="70000"/)
  const more = {
    MAX_CONNECTIONS: '0', MAX_CONNECTIONS_PER_IP: '-1', HEADERS_TIMEOUT_MS: '999', KEEP_ALIVE_TIMEOUT_MS: '0',
    DATASET_KEEP: '0'
  }
  for (const [key, value] of Object.entries(more)) {
    t.throws(() => loadConfig({ [key]: value }, { envFile: false }), { name: 'ConfigError', variable: key },
      `${key}=${value}`)
  }
})

t.test('the headers may not be given longer than the whole request', async (t) => {
  t.throws(() => loadConfig({ HEADERS_TIMEOUT_MS: '40000' }, { envFile: false }),
    {
      name: 'ConfigError',
      variable: 'HEADERS_TIMEOUT_MS',
      message: 'invalid configuration: HEADERS_TIMEOUT_MS=40000 is more than REQUEST_TIMEOUT_MS=30000'
    })
  t.equal(loadConfig({ HEADERS_TIMEOUT_MS: '30000' }, { envFile: false }).headersTimeoutMs, 30000)
  t.equal(loadConfig({ MAX_CONNECTIONS_PER_IP: '0' }, { envFile: false }).maxConnectionsPerIp, 0)
})

t.test('DATASET_KEEP: 1 to 100 replaced files kept', async (t) => {
  t.equal(loadConfig({ DATASET_KEEP: '1' }, { envFile: false }).datasetKeep, 1)
  t.equal(loadConfig({ DATASET_KEEP: '100' }, { envFile: false }).datasetKeep, 100)
  for (const value of ['0', '101', 'all']) {
    t.throws(() => loadConfig({ DATASET_KEEP: value }, { envFile: false }), {
      name: 'ConfigError',
      variable: 'DATASET_KEEP',
      message: `invalid configuration: DATASET_KEEP=${JSON.stringify(value)} is not valid (replaced dataset files ` +
        'kept per dataset (DATA_DIR/versions) by datasets import, generate and rollback; at least 1, so a ' +
        'rollback can always be undone)'
    }, `DATASET_KEEP=${value}`)
  }
})

t.test('.env is read, and the environment wins over it', async (t) => {
  const dir = tmpDataDir(t)
  writeFileSync(join(dir, '.env'), 'PORT=4000\nHOST=0.0.0.0\n')
  const c = loadConfig({ HOST: '127.0.0.2' }, { cwd: dir })
  t.equal(c.port, 4000)
  t.equal(c.host, '127.0.0.2')
})

t.test('an empty variable takes the default; whole numbers are digits only; ' +
  'a bad value in .env is named too', async (t) => {
  t.equal(loadConfig({ PORT: '', NODE_ENV: '' }, { envFile: false }).port, 3000)
  for (const value of ['0x10', ' 80', '8e1', '+80']) {
    const message =
      `invalid configuration: PORT=${JSON.stringify(value)} is not valid (HTTP port (0 picks a free port))`
    t.throws(() => loadConfig({ PORT: value }, { envFile: false }), { name: 'ConfigError', variable: 'PORT', message })
  }
  const dir = tmpDataDir(t)
  writeFileSync(join(dir, '.env'), 'LOG_LEVEL=loud\n')
  t.throws(() => loadConfig({}, { cwd: dir }), {
    name: 'ConfigError',
    variable: 'LOG_LEVEL',
    message: 'invalid configuration: LOG_LEVEL="loud" is not valid (pino log level)'
  })
  t.equal(loadConfig({ LOG_LEVEL: 'warn' }, { cwd: dir }).logLevel, 'warn',
    'the environment wins over a bad value in .env')
})
