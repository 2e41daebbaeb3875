// Operator CLI (README.md, docs/data-files.md): npm run admin -- <group> <command> [options]
// Exit 0 on success; 1 when the operation fails (unknown slug, bad file...); 2 on bad usage.
// Errors are one line on stderr; --json prints one JSON document on stdout.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { parseArgs, type ParseArgsConfig } from 'node:util'
import Database from 'better-sqlite3'
import { generateDataset } from '../src/setup/data-dir.ts'
import { requestReload, requestSharedReload } from '../src/instances/instances.ts'
import { IMPORT_FORMATS, formatFromPath } from '../src/sites/import-formats.ts'
import { importSites } from '../src/sites/import.ts'
import { readSites, writeSitesFile } from '../src/sites/export.ts'
import { ConfigError, loadConfig, type Config } from '../src/config.ts'
import { Redis } from 'ioredis'
import { RedisPartnerStore } from '../src/partners/redis-store.ts'
import { withoutCredentials } from '../src/http/redact.ts'
import { SLUG_PATTERN } from '../src/schemas/common.ts'
import { DATASETS, datasetPath, readDatasetMeta, type DatasetName } from '../src/sites/dataset-file.ts'
import { ENVIRONMENTS, MAX_RESULTS_CEILING, STATUSES, TIERS, WINDOWS, type WindowName } from '../src/partners/tiers.ts'
import {
  PartnerStore, PartnerStoreError, controlPath, partnerView, type LimitOverride, type PartnerChanges
} from '../src/partners/store.ts'
import { exportDocument, readExportDocument } from '../src/partners/export-file.ts'

export class UsageError extends Error {}
class FailedError extends Error {}

type Options = Record<string, string | boolean | undefined>
interface Result { text: string, json: unknown, exitCode?: number }
interface Command {
  summary: string
  usage: string
  options: NonNullable<ParseArgsConfig['options']>
  positionals?: number
  run (ctx: { config: Config, options: Options, args: string[], json: boolean }): Result | Promise<Result>
}

const str = { type: 'string' } as const

function oneOf<T extends string> (name: string, value: string | boolean | undefined, allowed: readonly T[]): T | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'string' || !allowed.includes(value as T)) throw new UsageError(`--${name} must be one of ${allowed.join(', ')}`)
  return value as T
}

function onOff (name: string, value: string | boolean | undefined): boolean | undefined {
  const v = oneOf(name, value, ['on', 'off'])
  return v === undefined ? undefined : v === 'on'
}

function integer (name: string, value: string | boolean | undefined, min: number, max: number): number | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'string' || !/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new UsageError(`--${name} must be a whole number from ${min} to ${max}`)
  }
  return Number(value)
}

function limitOverride (name: string, value: string | boolean | undefined): LimitOverride | undefined {
  if (value === undefined) return undefined
  if (value === 'unlimited') return 'unlimited'
  if (value === 'tier') return null
  // 0 is refused: a window that admits nothing could never tell the partner an honest Retry-After;
  // `--status suspended` is how a partner is stopped.
  if (typeof value !== 'string' || !/^\d+$/.test(value) || Number(value) < 1 || Number(value) > 1_000_000_000) {
    throw new UsageError(`--${name} must be a whole number from 1, 'unlimited', or 'tier' (the tier's limit); to stop a partner, use --status suspended`)
  }
  return Number(value)
}

export function parseCategories (value: string | boolean | undefined): number[] | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'string' || !/^\d+(,\d+)*$/.test(value)) throw new UsageError('--categories must be a comma-separated list of category ids, e.g. 4,7')
  const list = value.split(',').map(Number)
  if (list.includes(1)) throw new UsageError('--categories: category 1 is reserved and never served')
  if (list.some((c) => c < 2 || c > 2147483647)) throw new UsageError('--categories: category ids start at 2')
  return [...new Set(list)].sort((a, b) => a - b)
}

/** --dataset, --file and --format (from the file's ending unless given) of import and export. */
function fileOptions (options: Options) {
  const dataset = oneOf('dataset', options.dataset, DATASETS)
  if (!dataset) throw new UsageError('--dataset is required')
  const file = options.file
  if (typeof file !== 'string' || file === '') throw new UsageError('--file is required')
  const format = oneOf('format', options.format, IMPORT_FORMATS) ?? formatFromPath(file)
  if (!format) throw new UsageError(`cannot tell the format from '${file}'; give --format csv|geojson|ndjson`)
  return { dataset, file, format }
}

function name (value: string | boolean | undefined, required: boolean): string | undefined {
  if (value === undefined) {
    if (required) throw new UsageError('--name is required')
    return undefined
  }
  if (typeof value !== 'string' || value.trim() === '' || value.length > 200) throw new UsageError('--name must be 1 to 200 characters')
  return value.trim()
}

/**
 * --category-name 8=Heliport (repeatable): names of categories 8 and above, kept in the dataset
 * file (2 to 7 have fixed names); partners read them in GET /categories.
 */
function categoryNames (values: unknown): Record<number, string> | undefined {
  if (values === undefined) return undefined
  const names: Record<number, string> = {}
  for (const value of values as string[]) {
    const match = /^(\d+)=(.{1,64})$/.exec(value)
    if (!match || Number(match[1]) < 8 || Number(match[1]) > 2147483647 || match[2].trim() !== match[2]) {
      throw new UsageError(`--category-name must be ID=NAME with an id from 8 and a name of 1 to 64 characters, e.g. 8=Heliport (got ${JSON.stringify(value)})`)
    }
    names[Number(match[1])] = match[2]
  }
  return names
}

/** The partners: in Redis when STATE_URL is set (every instance everywhere reads them there), else in control.db. */
async function withStore<T> (config: Config, fn: (store: PartnerStore | RedisPartnerStore) => T | Promise<T>): Promise<T> {
  let store: PartnerStore | RedisPartnerStore
  if (config.stateUrl) {
    store = new RedisPartnerStore(await connectState(config.stateUrl))
  } else {
    store = new PartnerStore(controlPath(config.dataDir))
  }
  try {
    return await fn(store)
  } catch (err) {
    if (err instanceof PartnerStoreError) throw (err.reason === 'invalid' ? new UsageError(err.message) : new FailedError(err.message))
    if (config.stateUrl && !(err instanceof UsageError) && !(err instanceof FailedError)) throw sharedStateFailed(config, err)
    throw err
  } finally {
    store.close()
  }
}

function partnerText (view: ReturnType<typeof partnerView>): string {
  const lines = Object.entries(view).map(([key, value]) => {
    const shown = typeof value === 'object' && value !== null && !Array.isArray(value)
      ? Object.entries(value).map(([k, v]) => `${k}=${v ?? 'tier'}`).join(' ')
      : Array.isArray(value) ? value.join(',') : String(value)
    return `${key.padEnd(17)} ${shown}`
  })
  return lines.join('\n')
}

const COMMANDS: Record<string, Record<string, Command>> = {
  partners: {
    create: {
      summary: 'create a partner and print its token (shown once)',
      usage: 'partners create --name NAME [--slug SLUG] [--tier demo|growth|scale] [--environment sandbox|production] [--status active|pending]',
      options: { name: str, slug: str, tier: str, environment: str, status: str },
      async run ({ config, options }) {
        const slug = options.slug
        if (slug !== undefined && (typeof slug !== 'string' || !new RegExp(SLUG_PATTERN).test(slug))) {
          throw new UsageError('--slug must be 1 to 64 lowercase letters, digits and inner hyphens')
        }
        const input = {
          name: name(options.name, true)!,
          slug: slug as string | undefined,
          tier: oneOf('tier', options.tier, TIERS),
          environment: oneOf('environment', options.environment, ENVIRONMENTS),
          status: oneOf('status', options.status, ['active', 'pending'] as const)
        }
        const { partner, token } = await withStore(config, (store) => store.create(input))
        const { id, slug: createdSlug, ...rest } = partnerView(partner)
        return {
          json: { id, slug: createdSlug, token, ...rest },
          text: `created partner ${partner.slug} (${partner.id})\ntoken (shown once, keep it secret): ${token}`
        }
      }
    },
    list: {
      summary: 'list partners',
      usage: 'partners list',
      options: {},
      async run ({ config }) {
        const views = await withStore(config, async (store) => (await store.list()).map(partnerView))
        const header = `${'SLUG'.padEnd(24)} ${'STATUS'.padEnd(9)} ${'TIER'.padEnd(6)} ${'ENVIRONMENT'.padEnd(11)} CATEGORIES  NAME`
        const rows = views.map((v) => `${v.slug.padEnd(24)} ${v.status.padEnd(9)} ${v.tier.padEnd(6)} ${v.environment.padEnd(11)} ${v.categories.join(',').padEnd(11)} ${v.name}`)
        return { json: views, text: views.length === 0 ? 'no partners' : [header, ...rows].join('\n') }
      }
    },
    show: {
      summary: 'show one partner',
      usage: 'partners show SLUG',
      options: {},
      positionals: 1,
      async run ({ config, args }) {
        const view = await withStore(config, async (store) => partnerView(await store.get(args[0])))
        return { json: view, text: partnerText(view) }
      }
    },
    update: {
      summary: 'change a partner; the running service applies it within PARTNER_REFRESH_MS (1 s by default)',
      usage: 'partners update SLUG [--name N] [--tier T] [--environment E] [--status S] [--categories 4,7,...] ' +
        '[--other-categories on|off] [--site-by-id on|off] [--radius-cap KM] [--max-results N] ' +
        '[--limit-minute N|unlimited|tier] [--limit-hour N|unlimited|tier] [--limit-day N|unlimited|tier]',
      options: {
        name: str, tier: str, environment: str, status: str, categories: str, 'other-categories': str, 'site-by-id': str,
        'radius-cap': str, 'max-results': str, 'limit-minute': str, 'limit-hour': str, 'limit-day': str
      },
      positionals: 1,
      async run ({ config, options, args }) {
        const radius = options['radius-cap']
        if (radius !== undefined && (typeof radius !== 'string' || !/^\d+(\.\d+)?$/.test(radius) || Number(radius) <= 0 || Number(radius) > 20038)) {
          throw new UsageError('--radius-cap must be a number of km greater than 0 and at most 20038')
        }
        const limitOverrides: Partial<Record<WindowName, LimitOverride>> = {}
        for (const w of WINDOWS) {
          const v = limitOverride(`limit-${w}`, options[`limit-${w}`])
          if (v !== undefined) limitOverrides[w] = v
        }
        const changes: PartnerChanges = {
          name: name(options.name, false),
          tier: oneOf('tier', options.tier, TIERS),
          environment: oneOf('environment', options.environment, ENVIRONMENTS),
          status: oneOf('status', options.status, STATUSES),
          categories: parseCategories(options.categories),
          otherCategories: onOff('other-categories', options['other-categories']),
          siteById: onOff('site-by-id', options['site-by-id']),
          radiusCapKm: radius === undefined ? undefined : Number(radius),
          maxResults: integer('max-results', options['max-results'], 1, MAX_RESULTS_CEILING),
          limitOverrides
        }
        for (const key of Object.keys(changes) as (keyof PartnerChanges)[]) if (changes[key] === undefined) delete changes[key]
        if (Object.keys(changes).length === 1 && Object.keys(limitOverrides).length === 0) throw new UsageError('nothing to change: give at least one option')
        const view = await withStore(config, async (store) => partnerView(await store.update(args[0], changes)))
        return { json: view, text: partnerText(view) }
      }
    },
    rotate: {
      summary: 'issue a new token; the old one stops working within PARTNER_REFRESH_MS (1 s by default)',
      usage: 'partners rotate SLUG',
      options: {},
      positionals: 1,
      async run ({ config, args }) {
        const { partner, token } = await withStore(config, (store) => store.rotate(args[0]))
        return { json: { id: partner.id, slug: partner.slug, token }, text: `new token for ${partner.slug} (shown once, keep it secret): ${token}` }
      }
    },
    export: {
      summary: 'write every partner (token digests, never tokens) as JSON, from control.db, or from Redis when STATE_URL is set',
      usage: 'partners export [--file PATH]',
      options: { file: str },
      async run ({ config, options }) {
        const rows = await withStore(config, (store) => store.exportRows())
        const document = JSON.stringify(exportDocument(rows), null, 2) + '\n'
        const file = options.file
        if (file !== undefined) {
          if (typeof file !== 'string' || file === '') throw new UsageError('--file must be a path')
          writeFileSync(file, document, { mode: 0o600 })
          return { json: { exported: rows.length, file }, text: `exported ${rows.length} partners to ${file}` }
        }
        return { json: JSON.parse(document), text: document.trimEnd() }
      }
    },
    import: {
      summary: 'add or replace partners (by slug) from a partners export, into control.db, or into Redis when STATE_URL is set',
      usage: 'partners import --file PATH',
      options: { file: str },
      async run ({ config, options }) {
        const file = options.file
        if (typeof file !== 'string' || file === '') throw new UsageError('--file is required')
        let text: string
        try {
          text = readFileSync(file, 'utf8')
        } catch (err) {
          throw new FailedError(`cannot read ${file}: ${(err as Error).message}`)
        }
        const { rows } = readExportDocument(text, file) // every row checked before any is written (exit 1 otherwise)
        const { created, replaced } = await withStore(config, (store) => store.importRows(rows))
        return { json: { created, replaced }, text: `imported ${rows.length} partners: ${created} created, ${replaced} replaced` }
      }
    }
  },
  datasets: {
    generate: {
      summary: 'write a dataset of deterministic dummy sites near real towns',
      usage: 'datasets generate --dataset sandbox|production [--count N] [--seed S] [--europe-share 0..1] [--category-name 8=NAME ...] [--reload]',
      options: { dataset: str, count: str, seed: str, 'europe-share': str, 'category-name': { type: 'string', multiple: true }, reload: { type: 'boolean' } },
      async run ({ config, options }) {
        const dataset = oneOf('dataset', options.dataset, DATASETS)
        if (!dataset) throw new UsageError('--dataset is required')
        const count = integer('count', options.count, 0, 50_000_000) ?? config.sandboxSiteCount
        // the default seed follows the dataset: production never gets a copy of the sandbox's sites
        const seed = typeof options.seed === 'string' ? options.seed : dataset === 'sandbox' ? config.sandboxSeed : 'production'
        const shareText = options['europe-share']
        let europeShare: number | undefined
        if (shareText !== undefined) {
          europeShare = Number(shareText)
          if (typeof shareText !== 'string' || !/^(0(\.\d+)?|1(\.0+)?)$/.test(shareText)) throw new UsageError('--europe-share must be a number from 0 to 1')
        }
        const path = datasetPath(config.dataDir, dataset)
        const prefix = dataset === 'sandbox' ? 'sbx' : 'prd'
        const { siteCount, builtAt } = generateDataset(path, { count, seed, prefix, europeShare, categoryNames: categoryNames(options['category-name']) })
        const summary = { dataset, path, site_count: siteCount, built_at: builtAt, seed }
        const text = `wrote ${siteCount} sites to ${path} (seed ${seed})`
        if (!options.reload) return { json: summary, text: `${text}; run 'datasets reload' to serve them` }
        const reloaded = await reloadAll(config)
        return { exitCode: reloaded.exitCode, json: { ...summary, reload: reloaded.json }, text: `${text}\n${reloaded.text}` }
      }
    },
    import: {
      summary: 'replace a dataset with the sites of a CSV, GeoJSON or NDJSON file, all or nothing',
      usage: 'datasets import --dataset sandbox|production --file PATH [--format csv|geojson|ndjson] [--precision DIGITS] [--category-name 8=NAME ...] [--reload]',
      options: { dataset: str, file: str, format: str, precision: str, reload: { type: 'boolean' }, 'category-name': { type: 'string', multiple: true } },
      async run ({ config, options }) {
        const { dataset, file, format } = fileOptions(options)
        const precision = integer('precision', options.precision, 0, 10) ?? 3
        if (!existsSync(file)) throw new FailedError(`no file at ${file}`)
        const target = datasetPath(config.dataDir, dataset)
        const progress = process.stderr.isTTY ? progressBar(dataset) : undefined
        const started = performance.now()
        const names = categoryNames(options['category-name'])
        const result = await importSites({ file, format, target, precision, categoryNames: names, onProgress: progress?.update })
        progress?.done()
        if (progress && options.reload && result.ok) process.stderr.write(`${dataset}: imported; waiting for the running service to load the new file...\n`)
        const seconds = Math.round(performance.now() - started) / 1000
        if (!result.ok) {
          const more = result.errorCount > result.errors.length ? [`... and ${result.errorCount - result.errors.length} more invalid rows`] : []
          return {
            exitCode: 1,
            json: { ok: false, dataset, file, rows: result.rows, error_count: result.errorCount, errors: result.errors },
            text: [...result.errors, ...more, `error: import refused: ${result.errorCount} invalid row${result.errorCount === 1 ? '' : 's'}; ${target} is unchanged`].join('\n')
          }
        }
        const summary = { ok: true, dataset, file, format, precision, site_count: result.siteCount, built_at: result.builtAt, seconds }
        const text = `imported ${result.siteCount} sites into ${target} in ${seconds} s (coordinates rounded to ${precision} decimals)`
        if (!options.reload) return { json: summary, text: `${text}\nrun 'datasets reload' to serve them` }
        const reloaded = await reloadAll(config)
        return { exitCode: reloaded.exitCode, json: { ...summary, reload: reloaded.json }, text: `${text}\n${reloaded.text}` }
      }
    },
    export: {
      summary: 'write the sites of a dataset file (as stored, obscured) to a CSV, GeoJSON or NDJSON file',
      usage: 'datasets export --dataset sandbox|production --file PATH [--format csv|geojson|ndjson]',
      options: { dataset: str, file: str, format: str },
      async run ({ config, options }) {
        const { dataset, file, format } = fileOptions(options)
        const source = datasetPath(config.dataDir, dataset)
        if (!existsSync(source)) throw new FailedError(`no dataset file at ${source}`)
        const count = await writeSitesFile(file, format, readSites(source))
        return { json: { dataset, file, format, site_count: count }, text: `wrote ${count} sites of ${dataset} to ${file}` }
      }
    },
    reload: {
      summary: 'make every running service instance load the dataset files anew (--all: every instance sharing STATE_URL, on any machine)',
      usage: 'datasets reload [--all]',
      options: { all: { type: 'boolean' } },
      run: ({ config, options }) => {
        if (!options.all) return reloadAll(config)
        if (!config.stateUrl) throw new UsageError('--all asks the instances sharing STATE_URL; set STATE_URL (without it, datasets reload reaches every instance of this DATA_DIR)')
        return reloadShared(config)
      }
    },
    info: {
      summary: 'show each dataset file: site count, built_at, source, precision',
      usage: 'datasets info',
      options: {},
      run ({ config }) {
        const infos = DATASETS.map((dataset) => datasetInfo(config, dataset))
        const text = infos.map((i) => i.error
          ? `${i.dataset.padEnd(11)} ${i.error}`
          : `${i.dataset.padEnd(11)} ${String(i.site_count).padStart(9)} sites  built_at ${i.built_at}  precision ${i.precision}  source ${i.source}`).join('\n')
        return { json: infos, text }
      }
    }
  }
}

type ReloadAsked = Awaited<ReturnType<typeof requestReload>>

/** What each instance answered, as text and JSON; exit 1 unless every one reloaded. */
function reloadReport ({ instances, results }: ReloadAsked, where: string): Result {
  if (instances.length === 0) {
    return { exitCode: 1, json: { ok: false, instances: [] }, text: `error: no running service: no instance has reported ${where} within the last 10 s` }
  }
  const rows = instances.map((instance) => {
    const outcome = results.get(instance.id)
    const base = { instance: instance.id, pid: instance.pid, address: instance.address }
    if (typeof outcome === 'string' || outcome === undefined) return { ...base, ok: false, error: outcome ?? 'no answer', datasets: [] }
    return { ...base, ...outcome }
  })
  const ok = rows.every((r) => r.ok)
  const lines = rows.flatMap((r) => [
    `${r.instance} (${r.address ?? 'not listening'}): ${r.ok ? 'reloaded' : `reload refused: ${'error' in r ? r.error : ''}`}`,
    ...r.datasets.map((d) => `  ${d.dataset.padEnd(11)} ${String(d.site_count).padStart(9)} sites  built_at ${d.built_at}${r.ok ? '' : '  (still served)'}`)
  ])
  if (!ok) lines.push('error: the reload was refused; the instances above keep serving their old datasets')
  return { exitCode: ok ? 0 : 1, json: { ok, instances: rows }, text: lines.join('\n') }
}

async function reloadAll (config: Config): Promise<Result> {
  const store = new PartnerStore(controlPath(config.dataDir))
  try {
    return reloadReport(await requestReload(store.db, { timeoutMs: 120_000 }), 'in control.db')
  } finally {
    store.close()
  }
}

/** How long the CLI waits for Redis to connect, and for each command, before it gives up. */
const REDIS_TIMEOUT_MS = 5_000

/**
 * A connection to the shared state for one command: it fails, with the reason, when Redis is away
 * or does not answer (a Redis that hangs accepts connections and answers nothing).
 */
async function connectState (url: string): Promise<Redis> {
  const redis = new Redis(url, {
    lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: REDIS_TIMEOUT_MS, commandTimeout: REDIS_TIMEOUT_MS, retryStrategy: () => null
  })
  redis.on('error', () => {})
  let timer: NodeJS.Timeout | undefined
  try {
    // the ready check (INFO) is not bound by either timeout: the connection as a whole is
    await Promise.race([
      redis.connect(),
      new Promise((_resolve, reject) => { timer = setTimeout(() => reject(new Error(`no answer within ${REDIS_TIMEOUT_MS / 1000} s`)), REDIS_TIMEOUT_MS) })
    ])
  } catch (err) {
    redis.disconnect()
    throw new FailedError(`cannot reach the shared state at STATE_URL (${withoutCredentials(url)}): ${(err as Error).message}`)
  } finally {
    clearTimeout(timer)
  }
  return redis
}

/** A Redis command that failed or timed out, as the operator reads it. */
const sharedStateFailed = (config: Config, err: unknown) =>
  new FailedError(`the shared state at STATE_URL (${withoutCredentials(config.stateUrl)}) did not answer: ${(err as Error).message}`)

async function reloadShared (config: Config): Promise<Result> {
  const redis = await connectState(config.stateUrl)
  try {
    return reloadReport(await requestSharedReload(redis, { timeoutMs: 120_000 }), 'in the shared state')
  } catch (err) {
    throw sharedStateFailed(config, err)
  } finally {
    redis.disconnect()
  }
}

/** A one-line progress bar on stderr, for terminals only. */
function progressBar (label: string) {
  let last = 0
  const draw = (bytes: number, total: number, rows: number) => {
    const share = total === 0 ? 1 : Math.min(1, bytes / total)
    const width = 30
    const filled = Math.round(share * width)
    process.stderr.write(`\r${label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${(share * 100).toFixed(0).padStart(3)}%  ${rows.toLocaleString('en')} rows`)
  }
  return {
    update (bytes: number, total: number, rows: number) {
      const now = Date.now()
      if (now - last < 100 && bytes < total) return
      last = now
      draw(bytes, total, rows)
    },
    done () {
      process.stderr.write('\n')
    }
  }
}

function datasetInfo (config: Config, dataset: DatasetName) {
  const path = datasetPath(config.dataDir, dataset)
  if (!existsSync(path)) return { dataset, path, error: 'missing' }
  try {
    const db = new Database(path, { readonly: true, fileMustExist: true })
    try {
      const meta = readDatasetMeta(db)
      return { dataset, path, site_count: Number(meta.site_count), built_at: meta.built_at, source: meta.source, precision: Number(meta.precision), schema_version: meta.schema_version }
    } finally {
      db.close()
    }
  } catch (err) {
    return { dataset, path, error: `unreadable: ${(err as Error).message}` }
  }
}

function helpText (): string {
  const lines = ['usage: npm run admin -- <group> <command> [options] [--json]', '']
  for (const commands of Object.values(COMMANDS)) {
    for (const command of Object.values(commands)) lines.push(`  ${command.usage}`)
    lines.push('')
  }
  lines.push('Every command takes --help and --json. Configuration (DATA_DIR...) comes from the environment and .env.')
  return lines.join('\n')
}

export async function main (argv: string[]): Promise<number> {
  const [group, commandName, ...rest] = argv
  if (group === undefined || group === '--help' || group === '-h' || group === 'help') {
    process.stdout.write(helpText() + '\n')
    return group === undefined ? 2 : 0
  }
  if (COMMANDS[group] && (commandName === undefined || commandName === '--help' || commandName === '-h')) {
    // a group's own help: its commands, each with what it does
    const lines = [`usage: npm run admin -- ${group} <command> [options] [--json]`, '']
    for (const c of Object.values(COMMANDS[group])) lines.push(`  ${c.usage}`, `      ${c.summary}`)
    process.stdout.write(lines.join('\n') + '\n')
    return commandName === undefined ? 2 : 0
  }
  const command = COMMANDS[group]?.[commandName]
  if (!command) {
    const known = COMMANDS[group] ? Object.keys(COMMANDS[group]).join(', ') : Object.keys(COMMANDS).join(', ')
    process.stderr.write(`error: unknown command '${[group, commandName].filter(Boolean).join(' ')}' (known: ${known}); see --help\n`)
    return 2
  }
  let json = false
  try {
    const { values, positionals } = parseArgs({
      args: rest,
      options: { ...command.options, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true
    })
    json = values.json === true
    if (values.help) {
      process.stdout.write(`usage: npm run admin -- ${command.usage} [--json]\n${command.summary}\n`)
      return 0
    }
    const expected = command.positionals ?? 0
    if (positionals.length !== expected) {
      throw new UsageError(expected === 0 ? `unexpected argument '${positionals[0]}'` : `usage: ${command.usage}`)
    }
    const config = loadConfig()
    mkdirSync(config.dataDir, { recursive: true }) // as the service does: a new DATA_DIR is made, not an error
    const result = await command.run({ config, options: values as Options, args: positionals, json })
    if (result.exitCode && !json) {
      process.stderr.write(result.text + '\n')
    } else {
      process.stdout.write((json ? JSON.stringify(result.json, null, 2) : result.text) + '\n')
    }
    return result.exitCode ?? 0
  } catch (err) {
    const message = (err as Error).message.split('\n')[0]
    if (err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`error: ${message}\n`)
      return 2
    }
    if (err instanceof FailedError || err instanceof ConfigError) {
      process.stderr.write(`error: ${message}\n`)
      return 1
    }
    process.stderr.write(`error: ${message}\n`)
    return 1
  }
}

process.exitCode = await main(process.argv.slice(2))
