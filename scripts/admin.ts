// Operator CLI (README.md, docs/data-files.md): npm run admin -- <group> <command> [options]
// Exit 0 on success; 1 when the operation fails (unknown slug, bad file...); 2 on bad usage.
// Errors are one line on stderr; --json prints one JSON document on stdout. main() is the whole
// CLI, callable in-process (tests); this file runs it only when it is the program started.
import { existsSync, mkdirSync, readFileSync, realpathSync, statSync } from 'node:fs'
import { basename, dirname, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { Command, CommanderError, Help, Option } from 'commander'
import { generateReplacing } from '../src/setup/data-dir.ts'
import { requestReload } from '../src/instances/instances.ts'
import { requestSharedReload } from '../src/instances/shared-reloads.ts'
import { IMPORT_FORMATS, formatFromPath, readSites, writeSitesFile } from '../src/sites/export.ts'
import { withDatasetFile } from '../src/sites/dataset.ts'
import { replaceFile } from '../src/setup/replace-file.ts'
import { loadConfig, type Config } from '../src/config.ts'
import { RedisPartnerStore } from '../src/partners/redis-store.ts'
import { CATEGORY_MAX, CONTROL_CHARACTER, NAME_RULE, SLUG_PATTERN, SLUG_RULE, isName } from '../src/schemas/common.ts'
import { partnerUsage, partnersReport } from './admin-usage.ts'
import { unnamedCategories } from '../src/sites/categories.ts'
import { MAX_PARTNER_CATEGORIES, MAX_RADIUS_CAP_KM } from '../src/partners/row-schema.ts'
import { FailedError, UsageError, integer, withOpened, type Options, type Result } from './cli-errors.ts'
import { connectState } from './state-connection.ts'
import { DATASETS, MAX_PRECISION, datasetPath, type DatasetName } from '../src/sites/dataset-file.ts'
import {
  ENVIRONMENTS, MAX_LIMIT, MAX_RESULTS_CEILING, STATUSES, TIERS, WINDOWS, type WindowName
} from '../src/partners/tiers.ts'
import {
  PartnerStore, controlPath, partnerView, type LimitOverride, type PartnerChanges
} from '../src/partners/store.ts'
import { exportDocument, readExportDocument } from '../src/partners/export-file.ts'
import {
  describeDatasetFile, keptVersions, listVersions, rollbackDataset, versionsFolder, type Replaced
} from '../src/sites/versions.ts'
import {
  changesJson, changesLine, exampleLines, keptReport, refusalLine, rollbackReport, versionJson, versionsTable
} from './admin-versions.ts'

/** Where a command writes: a process's streams, or a test's collectors. */
interface Output { write (text: string): unknown, isTTY?: boolean, columns?: number }

/** What a command's body gets: options by their flag's name (`radius-cap`), arguments in order. */
interface Context { config: Config, options: Options, args: string[], json: boolean, stderr: Output }
type Body = (ctx: Context) => Result | Promise<Result>

const CREATE_STATUSES = ['active', 'pending'] as const

type OptionValue = string | boolean | undefined

function oneOf<T extends string> (name: string, value: OptionValue, allowed: readonly T[]): T | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'string' || !allowed.includes(value as T)) {
    throw new UsageError(`--${name} must be one of ${allowed.join(', ')}`)
  }
  return value as T
}

function onOff (name: string, value: OptionValue): boolean | undefined {
  const v = oneOf(name, value, ['on', 'off'])
  return v === undefined ? undefined : v === 'on'
}

function limitOverride (name: string, value: OptionValue): LimitOverride | undefined {
  if (value === undefined) return undefined
  if (value === 'unlimited') return 'unlimited'
  if (value === 'tier') return null
  // 0 is refused: a window that admits nothing could never tell the partner an honest Retry-After;
  // `--status suspended` is how a partner is stopped.
  return integer(name, value, 1, MAX_LIMIT,
    ", 'unlimited', or 'tier' (the tier's limit); to stop a partner, use --status suspended")
}

function parseCategories (value: OptionValue): number[] | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'string' || !/^\d+(,\d+)*$/.test(value)) {
    throw new UsageError('--categories must be a comma-separated list of category ids, e.g. 4,7')
  }
  const list = value.split(',').map(Number)
  if (list.includes(1)) throw new UsageError('--categories: category 1 is reserved and never served')
  if (list.some((c) => c < 2 || c > CATEGORY_MAX)) {
    throw new UsageError(`--categories: category ids are whole numbers from 2 to ${CATEGORY_MAX}`)
  }
  const ids = [...new Set(list)].sort((a, b) => a - b)
  if (ids.length > MAX_PARTNER_CATEGORIES) {
    throw new UsageError(`--categories: at most ${MAX_PARTNER_CATEGORIES} categories`)
  }
  return ids
}

/** --dataset, --file and --format (from the file's ending unless given) of import and export. */
function fileOptions (options: Options) {
  const dataset = oneOf('dataset', options.dataset, DATASETS)! // a mandatory option
  if (typeof options.file !== 'string' || options.file === '') throw new UsageError('--file is required')
  const file = options.file
  const format = oneOf('format', options.format, IMPORT_FORMATS) ?? formatFromPath(file)
  if (!format) throw new UsageError(`cannot tell the format from '${file}'; give --format csv|geojson|ndjson`)
  return { dataset, file, format }
}

function name (value: OptionValue): string | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'string' || !isName(value.trim())) throw new UsageError(`--name must be ${NAME_RULE}`)
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
    if (!match || Number(match[1]) < 8 || Number(match[1]) > CATEGORY_MAX || match[2].trim() !== match[2]) {
      throw new UsageError(`--category-name must be ID=NAME with an id from 8 to ${CATEGORY_MAX} and a name of ` +
        `1 to 64 characters, e.g. 8=Heliport (got ${JSON.stringify(value)})`)
    }
    names[Number(match[1])] = match[2]
  }
  return names
}

/**
 * The partners: in Redis when STATE_URL is set (every instance everywhere reads them there), else
 * in control.db, opened only to read for the commands that only read (`readonly`).
 */
function withStore<T> (
  config: Config,
  fn: (store: PartnerStore | RedisPartnerStore) => T | Promise<T>,
  { readonly = false } = {}
): Promise<T> {
  const open = async () => config.stateUrl
    ? new RedisPartnerStore(await connectState(config.stateUrl))
    : new PartnerStore(controlPath(config.dataDir), { readonly })
  return withOpened(config, open, fn)
}

/** Control characters escaped as JSON writes them: a name stored before they were refused forges no line. */
const CONTROL = new RegExp(CONTROL_CHARACTER.source, 'g')
const printable = (text: string) =>
  text.replace(CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)

function partnerText (view: ReturnType<typeof partnerView>): string {
  const lines = Object.entries(view).map(([key, value]) => {
    const shown = typeof value === 'object' && value !== null && !Array.isArray(value)
      ? Object.entries(value).map(([k, v]) => `${k}=${v ?? 'tier'}`).join(' ')
      : Array.isArray(value) ? value.join(',') : String(value)
    return `${key.padEnd(17)} ${printable(shown)}`
  })
  return lines.join('\n')
}

// Each command's body: what it does with the parsed options, as text and JSON. The program below
// (buildProgram) declares the options and arguments that commander parses for it.

async function partnersCreate ({ config, options }: Context): Promise<Result> {
  const slug = options.slug
  if (slug !== undefined && (typeof slug !== 'string' || !new RegExp(SLUG_PATTERN).test(slug))) {
    throw new UsageError(`--slug must be ${SLUG_RULE}`)
  }
  const input = {
    name: name(options.name)!, // a mandatory option
    slug: slug as string | undefined,
    tier: oneOf('tier', options.tier, TIERS),
    environment: oneOf('environment', options.environment, ENVIRONMENTS),
    status: oneOf('status', options.status, CREATE_STATUSES)
  }
  const { partner, token } = await withStore(config, (store) => store.create(input))
  const { id, slug: createdSlug, ...rest } = partnerView(partner)
  return {
    json: { id, slug: createdSlug, token, ...rest },
    text: `created partner ${partner.slug} (${partner.id})\ntoken (shown once, keep it secret): ${token}`
  }
}

async function partnersList ({ config }: Context): Promise<Result> {
  const views = await withStore(config, async (store) => (await store.list()).map(partnerView), { readonly: true })
  const header = `${'SLUG'.padEnd(24)} ${'STATUS'.padEnd(9)} ${'TIER'.padEnd(6)} ${'ENVIRONMENT'.padEnd(11)} ` +
    'CATEGORIES  NAME'
  const rows = views.map((v) => [
    v.slug.padEnd(24), v.status.padEnd(9), v.tier.padEnd(6), v.environment.padEnd(11),
    v.categories.join(',').padEnd(11), printable(v.name)
  ].join(' '))
  return { json: views, text: views.length === 0 ? 'no partners' : [header, ...rows].join('\n') }
}

async function partnersShow ({ config, args }: Context): Promise<Result> {
  const view = await withStore(config, async (store) => partnerView(await store.get(args[0])), { readonly: true })
  return { json: view, text: partnerText(view) }
}

/** Warnings for categories a partner's list holds but that are not served to it. */
function unservedCategories (view: { categories: number[], other_categories: boolean }): string[] {
  const warnings: string[] = []
  const others = view.categories.filter((c) => c >= 8)
  if (others.length > 0 && !view.other_categories) {
    warnings.push(`warning: categor${others.length === 1 ? 'y' : 'ies'} ${others.join(', ')} not served while ` +
      'other categories are off (--other-categories on serves them)')
  }
  return warnings
}

async function partnersUpdate ({ config, options, args, stderr }: Context): Promise<Result> {
  const radius = options['radius-cap']
  const radiusOk = typeof radius === 'string' && /^\d+(\.\d+)?$/.test(radius) &&
    Number(radius) > 0 && Number(radius) <= MAX_RADIUS_CAP_KM
  if (radius !== undefined && !radiusOk) {
    throw new UsageError(`--radius-cap must be a number of km greater than 0 and at most ${MAX_RADIUS_CAP_KM}`)
  }
  const limitOverrides: Partial<Record<WindowName, LimitOverride>> = {}
  for (const w of WINDOWS) {
    const v = limitOverride(`limit-${w}`, options[`limit-${w}`])
    if (v !== undefined) limitOverrides[w] = v
  }
  const changes: PartnerChanges = {
    name: name(options.name),
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
  for (const key of Object.keys(changes) as (keyof PartnerChanges)[]) {
    if (changes[key] === undefined) delete changes[key]
  }
  if (Object.keys(changes).length === 1 && Object.keys(limitOverrides).length === 0) {
    throw new UsageError('nothing to change: give at least one option')
  }
  const view = await withStore(config, async (store) => partnerView(await store.update(args[0], changes)))
  if (changes.categories !== undefined || changes.otherCategories !== undefined) {
    for (const warning of unservedCategories(view)) stderr.write(`${warning}\n`)
  }
  return { json: view, text: partnerText(view) }
}

async function partnersRotate ({ config, args }: Context): Promise<Result> {
  const { partner, token } = await withStore(config, (store) => store.rotate(args[0]))
  return {
    json: { id: partner.id, slug: partner.slug, token },
    text: `new token for ${partner.slug} (shown once, keep it secret): ${token}`
  }
}

/** The path a file name stands for, links followed (as far as they exist). */
function canonical (path: string): string {
  try {
    return realpathSync(path)
  } catch {
    try {
      return resolve(realpathSync(dirname(path)), basename(path))
    } catch {
      return resolve(path) // no such directory: the write fails on its own
    }
  }
}

/**
 * Exports never replace a file the service reads: a dataset, its index snapshot, control.db or
 * their SQLite companions, by name or through a link (an export onto sandbox.db made it a CSV).
 */
function refuseServiceFile (config: Config, file: string): void {
  const datasets = DATASETS.map((dataset) => datasetPath(config.dataDir, dataset))
  const own = [...datasets.flatMap((path) => [path, `${path}.index`]), controlPath(config.dataDir)]
    .flatMap((path) => [path, `${path}-wal`, `${path}-shm`, `${path}-journal`])
  const target = canonical(file)
  const inode = (path: string) => {
    try {
      const { dev, ino } = statSync(path)
      return `${dev}:${ino}`
    } catch {
      return undefined
    }
  }
  const targetInode = inode(file)
  for (const path of own) {
    if (canonical(path) === target || (targetInode !== undefined && inode(path) === targetInode)) {
      throw new FailedError(`${file} is the service's own ${basename(path)}: export to another file`)
    }
  }
  // nor a kept version of a dataset (through a link either), nor anything else in their folder
  const versions = versionsFolder(config.dataDir)
  const kept = DATASETS.flatMap((dataset) => keptVersions(datasetPath(config.dataDir, dataset)))
  if (dirname(target) === canonical(versions) || kept.some((v) => targetInode !== undefined &&
    inode(v.path) === targetInode)) {
    throw new FailedError(`${file} is in ${versions}, the kept versions of the datasets: export to another file`)
  }
}

async function partnersExport ({ config, options }: Context): Promise<Result> {
  const rows = await withStore(config, (store) => store.exportRows(), { readonly: true })
  const document = JSON.stringify(exportDocument(rows), null, 2) + '\n'
  if (options.file !== undefined) {
    if (typeof options.file !== 'string' || options.file === '') throw new UsageError('--file must be a path')
    const file = options.file
    refuseServiceFile(config, file)
    await replaceFile(file, 0o600, async (out) => { out.write(document) })
    return { json: { exported: rows.length, file }, text: `exported ${rows.length} partners to ${file}` }
  }
  return { json: JSON.parse(document), text: document.trimEnd() }
}

async function partnersImport ({ config, options }: Context): Promise<Result> {
  if (typeof options.file !== 'string' || options.file === '') throw new UsageError('--file is required')
  const file = options.file
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    throw new FailedError(`cannot read ${file}: ${(err as Error).message}`)
  }
  const { rows } = readExportDocument(text, file) // every row checked before any is written (exit 1 otherwise)
  const { created, replaced } = await withStore(config, (store) => store.importRows(rows))
  return {
    json: { created, replaced },
    text: `imported ${rows.length} partners: ${created} created, ${replaced} replaced`
  }
}

async function datasetsGenerate ({ config, options, stderr }: Context): Promise<Result> {
  const dataset = oneOf('dataset', options.dataset, DATASETS)! // a mandatory option
  const count = integer('count', options.count, 0, 50_000_000) ?? config.sandboxSiteCount
  // the default seed follows the dataset: production never gets a copy of the sandbox's sites
  const seed = typeof options.seed === 'string'
    ? options.seed
    : dataset === 'sandbox' ? config.sandboxSeed : 'production'
  const shareText = options['europe-share']
  let europeShare: number | undefined
  if (shareText !== undefined) {
    europeShare = Number(shareText)
    if (typeof shareText !== 'string' || !/^(0(\.\d+)?|1(\.0+)?)$/.test(shareText)) {
      throw new UsageError('--europe-share must be a number from 0 to 1')
    }
  }
  const path = datasetPath(config.dataDir, dataset)
  const prefix = dataset === 'sandbox' ? 'sbx' : 'prd'
  const names = categoryNames(options['category-name'])
  const dryRun = options['dry-run'] === true
  const replaced = generateReplacing(path, { count, seed, prefix, europeShare, categoryNames: names },
    { keep: config.datasetKeep, dryRun })
  if (!replaced.ok) {
    return { exitCode: 1, json: refusedJson(dataset, replaced), text: refusalLine('generate', dataset, path, replaced) }
  }
  const { siteCount, builtAt, changes, unreadable } = replaced
  const summary = {
    dataset,
    path,
    site_count: siteCount,
    built_at: builtAt,
    seed,
    dry_run: dryRun,
    changes: changesJson(changes, unreadable)
  }
  if (dryRun) {
    const text = [`dry run: would write ${siteCount} sites to ${path} (seed ${seed})`, changesLine(changes, unreadable),
      ...exampleLines(changes), 'nothing written (dry run)']
    return { json: summary, text: text.join('\n') }
  }
  const kept = keptReport(dataset, config.datasetKeep, replaced)
  const text = [`wrote ${siteCount} sites to ${path} (seed ${seed})`, changesLine(changes, unreadable), ...kept.lines]
  return replacedResult({ config, options, stderr }, replaced, { ...summary, ...kept.json }, text)
}

/** The JSON of an import or generate refused once its file was valid. */
const refusedJson = (dataset: string, refused: Extract<Replaced, { ok: false }>) =>
  ({ ok: false, dataset, refusal: refused.refusal, changes: changesJson(refused.changes) })

/**
 * A command that replaced a dataset file: its lines, then the reload (--reload) or how to ask for
 * one. Warnings (a kept version that could not be pruned) go to stderr.
 */
async function replacedResult (
  { config, options, stderr }: Pick<Context, 'config' | 'options' | 'stderr'>,
  done: { warnings: string[] },
  json: object,
  lines: string[],
  what = 'them'
): Promise<Result> {
  for (const warning of done.warnings) stderr.write(`warning: ${warning}\n`)
  if (!options.reload) return { json, text: [...lines, `run 'datasets reload' to serve ${what}`].join('\n') }
  const reloaded = await reloadAll(config)
  const text = [...lines, reloaded.text].join('\n')
  return { exitCode: reloaded.exitCode, json: { ...json, reload: reloaded.json }, text }
}

async function datasetsImport ({ config, options, stderr }: Context): Promise<Result> {
  const { dataset, file, format } = fileOptions(options)
  const precision = integer('precision', options.precision, 0, MAX_PRECISION) ?? 3
  if (!existsSync(file)) throw new FailedError(`no file at ${file}`)
  const target = datasetPath(config.dataDir, dataset)
  const progress = stderr.isTTY ? progressBar(stderr, dataset) : undefined
  const started = performance.now()
  const names = categoryNames(options['category-name'])
  const dryRun = options['dry-run'] === true
  // loaded here: the file parsers cost every other command's start-up for nothing
  const { importSites } = await import('../src/sites/import.ts')
  const result = await importSites({
    file,
    format,
    target,
    precision,
    categoryNames: names,
    onProgress: progress?.update,
    replace: { keep: config.datasetKeep, dryRun, guard: true, force: options.force === true }
  })
  progress?.done()
  if (progress && options.reload && result.ok && !dryRun) {
    stderr.write(`${dataset}: imported; waiting for the running service to load the new file...\n`)
  }
  const seconds = Math.round(performance.now() - started) / 1000
  const replaced = result.replaced
  if (replaced === undefined) { // invalid rows: the file was not compared
    const { errorCount, errors } = result
    const more = errorCount > errors.length ? [`... and ${errorCount - errors.length} more invalid rows`] : []
    const refused = `error: import refused: ${errorCount} invalid row${errorCount === 1 ? '' : 's'}; ` +
      `${target} is unchanged`
    return {
      exitCode: 1,
      json: { ok: false, dataset, file, rows: result.rows, error_count: errorCount, errors },
      text: [...errors, ...more, refused].join('\n')
    }
  }
  if (!replaced.ok) {
    const reason = refusalLine('import', dataset, target, replaced)
    // a dry run asked what would change: it is shown before the reason
    const shown = dryRun ? [changesLine(replaced.changes), ...exampleLines(replaced.changes)] : []
    return { exitCode: 1, json: { ...refusedJson(dataset, replaced), file }, text: [...shown, reason].join('\n') }
  }
  const done = replaced
  const summary = {
    ok: true,
    dataset,
    file,
    format,
    precision,
    site_count: done.siteCount,
    built_at: done.builtAt,
    seconds,
    dry_run: dryRun,
    changes: changesJson(done.changes, done.unreadable)
  }
  const unnamed = dryRun ? [] : withDatasetFile(target, unnamedCategories)
  if (unnamed.length > 0) {
    stderr.write(`warning: categor${unnamed.length === 1 ? 'y' : 'ies'} ${unnamed.join(', ')} without a name: ` +
      `partners see 'Category ${unnamed[0]}'; name ${unnamed.length === 1 ? 'it' : 'them'} with ` +
      `--category-name ${unnamed[0]}=NAME\n`)
  }
  if (dryRun) {
    const text = [`dry run: the ${done.siteCount} sites of ${file} are valid ` +
      `(coordinates rounded to ${precision} decimals)`, changesLine(done.changes, done.unreadable),
    ...exampleLines(done.changes), 'nothing written (dry run)']
    return { json: summary, text: text.join('\n') }
  }
  const kept = keptReport(dataset, config.datasetKeep, done)
  const text = [`imported ${done.siteCount} sites into ${target} in ${seconds} s ` +
    `(coordinates rounded to ${precision} decimals)`, changesLine(done.changes, done.unreadable), ...kept.lines]
  return replacedResult({ config, options, stderr }, done, { ...summary, ...kept.json }, text)
}

async function datasetsExport ({ config, options }: Context): Promise<Result> {
  const { dataset, file, format } = fileOptions(options)
  const source = datasetPath(config.dataDir, dataset)
  if (!existsSync(source)) throw new FailedError(`no dataset file at ${source}`)
  refuseServiceFile(config, file)
  const count = await writeSitesFile(file, format, readSites(source))
  return { json: { dataset, file, format, site_count: count }, text: `wrote ${count} sites of ${dataset} to ${file}` }
}

function datasetsReload ({ config, options }: Context): Promise<Result> {
  if (!options.all) return reloadAll(config)
  if (!config.stateUrl) {
    throw new UsageError('--all asks the instances sharing STATE_URL; set STATE_URL ' +
      '(without it, datasets reload reaches every instance of this DATA_DIR)')
  }
  return reloadShared(config)
}

/** Exit 1 when a dataset file cannot be read (the service would refuse it); a missing one is a state, reported. */
function datasetsInfo ({ config }: Context): Result {
  const infos = DATASETS.map((dataset) => datasetInfo(config, dataset))
  const lines = infos.map((i) => i.error
    ? `${i.dataset.padEnd(11)} ${i.error}`
    : `${i.dataset.padEnd(11)} ${String(i.site_count).padStart(9)} sites  built_at ${i.built_at}  ` +
      `precision ${i.precision}  source ${i.source}`)
  const unreadable = infos.filter((i) => i.error !== undefined && i.error !== 'missing')
  if (unreadable.length === 0) return { json: infos, text: lines.join('\n') }
  lines.push(`error: ${unreadable.map((i) => i.path).join(' and ')} cannot be read; the service would refuse ` +
    `${unreadable.length === 1 ? 'it' : 'them'} (import or generate the dataset again, or restore it from a backup)`)
  return { exitCode: 1, json: infos, text: lines.join('\n') }
}

async function datasetsRollback ({ config, options, stderr }: Context): Promise<Result> {
  const dataset = oneOf('dataset', options.dataset, DATASETS)! // a mandatory option
  if (options.to !== undefined && (typeof options.to !== 'string' || options.to === '')) {
    throw new UsageError('--to must be a version as datasets versions lists it')
  }
  const path = datasetPath(config.dataDir, dataset)
  const done = rollbackDataset(path, { keep: config.datasetKeep, to: options.to as string | undefined })
  const { lines, json } = rollbackReport(dataset, path, config.datasetKeep, done)
  return replacedResult({ config, options, stderr }, done, json, lines, 'it')
}

/** Exit 1 when a listed file cannot be read; a missing current file is a state, reported (as by info). */
function datasetsVersions ({ config, options }: Context): Result {
  const dataset = oneOf('dataset', options.dataset, DATASETS)
  const rows = (dataset ? [dataset] : DATASETS).flatMap((name) =>
    listVersions(datasetPath(config.dataDir, name)).map((info) => ({ dataset: name, info })))
  const json = rows.map(({ dataset, info }) => versionJson(dataset, info))
  const text = versionsTable(rows)
  const unreadable = rows.filter(({ info }) => info.error !== undefined && info.error !== 'missing')
  if (unreadable.length === 0) return { json, text }
  return {
    exitCode: 1,
    json,
    text: `${text}\nerror: ${unreadable.map(({ info }) => info.path).join(' and ')} cannot be read`
  }
}

type ReloadAsked = Awaited<ReturnType<typeof requestReload>>

/** What each instance answered, as text and JSON; exit 1 unless every one reloaded. */
function reloadReport ({ instances, results }: ReloadAsked, where: string): Result {
  if (instances.length === 0) {
    return {
      exitCode: 1,
      json: { ok: false, instances: [] },
      text: `error: no running service: no instance has reported ${where} within the last 10 s`
    }
  }
  const rows = instances.map((instance) => {
    const outcome = results.get(instance.id)
    const base = { instance: instance.id, pid: instance.pid, address: instance.address }
    if (typeof outcome === 'string' || outcome === undefined) {
      return { ...base, ok: false, error: outcome ?? 'no answer', datasets: [] }
    }
    return { ...base, ...outcome }
  })
  const ok = rows.every((r) => r.ok)
  const lines = rows.flatMap((r) => [
    `${r.instance} (${r.address ?? 'not listening'}): ` +
      (r.ok ? 'reloaded' : `reload refused: ${'error' in r ? r.error : ''}`),
    ...r.datasets.map((d) => `  ${d.dataset.padEnd(11)} ${String(d.site_count).padStart(9)} sites  ` +
      `built_at ${d.built_at}${r.ok ? '' : '  (still served)'}`)
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

async function reloadShared (config: Config): Promise<Result> {
  const redis = await connectState(config.stateUrl)
  return withOpened(config, () => ({ close: () => redis.disconnect() }), async () =>
    reloadReport(await requestSharedReload(redis, { timeoutMs: 120_000 }), 'in the shared state'))
}

/** A one-line progress bar on stderr, for terminals only. */
function progressBar (stderr: Output, label: string) {
  let last = 0
  const draw = (bytes: number, total: number, rows: number) => {
    const share = total === 0 ? 1 : Math.min(1, bytes / total)
    const width = 30
    const filled = Math.round(share * width)
    const bar = `${'#'.repeat(filled)}${'.'.repeat(width - filled)}`
    stderr.write(`\r${label} [${bar}] ${(share * 100).toFixed(0).padStart(3)}%  ${rows.toLocaleString('en')} rows`)
  }
  return {
    update (bytes: number, total: number, rows: number) {
      const now = Date.now()
      if (now - last < 100 && bytes < total) return
      last = now
      draw(bytes, total, rows)
    },
    done () {
      stderr.write('\n')
    }
  }
}

function datasetInfo (config: Config, dataset: DatasetName) {
  const path = datasetPath(config.dataDir, dataset)
  const { sizeBytes, meta, error } = describeDatasetFile(path)
  if (meta === undefined) return { dataset, path, error }
  return {
    dataset,
    path,
    site_count: Number(meta.site_count),
    built_at: meta.built_at,
    source: meta.source,
    precision: Number(meta.precision),
    schema_version: meta.schema_version,
    size_bytes: sizeBytes,
    kept_versions: keptVersions(path).length
  }
}

// The program: groups and their commands, each command's options and arguments. Commander parses
// them, checks the fixed choices and writes the help; every error becomes one `error: ...` line.

/** Commander's codes for help it has written, on request: exit 0. */
const HELP_SHOWN = new Set(['commander.helpDisplayed', 'commander.help', 'commander.version'])

/**
 * A choice the contract fixes, listed in the help. It is checked before the command runs (with
 * the CLI's own message), not while parsing: --help wins over a bad value, as over any option.
 */
const choice = (flags: string, description: string, values: readonly string[]) =>
  new Option(flags, description).choices(values).argParser((value: string) => value)

function checkChoices (cmd: Command) {
  for (const o of cmd.options) {
    const value: unknown = cmd.getOptionValue(o.attributeName())
    if (o.argChoices && value !== undefined) oneOf(o.name(), value as string, o.argChoices)
  }
}

const required = (flags: string, description: string) => new Option(flags, description).makeOptionMandatory()

/** An option given once per value (--category-name 8=A --category-name 9=B). */
const repeatable = (flags: string, description: string) =>
  new Option(flags, description).argParser((value: string, previous?: string[]) => [...(previous ?? []), value])

const CATEGORY_NAME = 'the name of a category from 8, kept in the dataset file (repeatable), e.g. 8=Heliport'
const RELOAD = "then make the running service load it (as 'datasets reload')"
const DRY_RUN = 'check everything and show what would change (sites added, removed, changed), writing nothing'

/** `partners update` as the operator types it, without the program's name. */
const commandPath = (cmd: Command): string =>
  cmd.parent?.parent ? `${commandPath(cmd.parent)} ${cmd.name()}` : cmd.name()
const isCommand = (cmd: Command) => Boolean(cmd.parent?.parent)

/** `SLUG [options]`, `--dataset sandbox|production --file PATH [options]`: arguments and required options. */
function synopsis (cmd: Command): string {
  const own = cmd.options.filter((o) => o.long !== '--json')
  return [
    ...cmd.registeredArguments.map((a) => a.name()),
    ...own.filter((o) => o.mandatory)
      .map((o) => `${o.long} ${o.argChoices?.join('|') ?? o.flags.replace(/^.*<(.*)>$/, '$1')}`),
    ...own.some((o) => !o.mandatory) ? ['[options]'] : []
  ].join(' ')
}

/** Commander's error as this CLI's one line (its own wording where the CLI had one before). */
function reason (cmd: Command, err: CommanderError): string {
  const tooMany = err.code === 'commander.excessArguments'
  if (err.code === 'commander.missingArgument' || (tooMany && cmd.registeredArguments.length > 0)) {
    return `usage: ${commandPath(cmd)} ${synopsis(cmd)}`
  }
  if (err.code === 'commander.excessArguments') return `unexpected argument '${cmd.args[0]}'`
  if (err.code === 'commander.missingMandatoryOptionValue') {
    const missing = cmd.options.find((o) => o.mandatory && cmd.getOptionValue(o.attributeName()) === undefined)
    if (missing) return `${missing.long} is required`
  }
  return err.message.replace(/^error: /, '').replace(/\s*\n\s*/g, ' ')
}

type Declare = (group: Command, name: string, description: string, body: Body) => Command

/**
 * The groups and their commands: each command's body, and the options and arguments commander
 * parses for it (--json and --help are added to every command). A new command is a body and a
 * few lines here.
 */
function declareCommands (program: Command, command: Declare) {
  const partners = program.command('partners')
    .description('the partners: their tokens, tiers, limits and categories ' +
      '(control.db, or Redis when STATE_URL is set)')
  command(partners, 'create', 'create a partner and print its token (shown once)', partnersCreate)
    .addOption(required('--name <NAME>', 'the partner\'s name, 1 to 200 characters'))
    .option('--slug <SLUG>', 'its slug in URLs and commands (default: from the name)')
    .addOption(choice('--tier <TIER>', 'its tier (default: demo)', TIERS))
    .addOption(choice('--environment <ENV>', 'the dataset it is served (default: sandbox)', ENVIRONMENTS))
    .addOption(choice('--status <STATUS>', 'default: active', CREATE_STATUSES))
  command(partners, 'list', 'list partners', partnersList)
  command(partners, 'show', 'show one partner', partnersShow)
    .argument('SLUG', 'the partner\'s slug')
  command(partners, 'update',
    'change a partner; the running service applies it within PARTNER_REFRESH_MS (1 s by default)', partnersUpdate)
    .argument('SLUG', 'the partner\'s slug')
    .option('--name <NAME>', 'its name, 1 to 200 characters')
    .addOption(choice('--tier <TIER>', 'its tier', TIERS))
    .addOption(choice('--environment <ENV>', 'the dataset it is served', ENVIRONMENTS))
    .addOption(choice('--status <STATUS>', 'pending and suspended stop its token (403)', STATUSES))
    .option('--categories <IDS>', 'the categories it may ask for, e.g. 4,7')
    .addOption(choice('--other-categories <on|off>', 'categories 8 and above in its allow-list served',
      ['on', 'off']))
    .addOption(choice('--site-by-id <on|off>', 'GET /sites/{id} open to it', ['on', 'off']))
    .option('--radius-cap <KM>', 'the largest search radius, in km')
    .option('--max-results <N>', `the most sites an answer holds, 1 to ${MAX_RESULTS_CEILING}`)
    .option('--limit-minute <N|unlimited|tier>', 'requests a minute: a number from 1, unlimited, or the tier\'s limit')
    .option('--limit-hour <N|unlimited|tier>', 'requests an hour, as --limit-minute')
    .option('--limit-day <N|unlimited|tier>', 'requests a day, as --limit-minute')
  command(partners, 'rotate',
    'issue a new token; the old one stops working within PARTNER_REFRESH_MS (1 s by default)', partnersRotate)
    .argument('SLUG', 'the partner\'s slug')
  command(partners, 'usage', "a partner's windows, rows and telemetry as its GET /usage?expand=telemetry shows them, " +
    'and its daily history, oldest first; from control.db as of the last counter save (COUNTER_SAVE_MS), ' +
    'or from Redis when STATE_URL is set', partnerUsage)
    .argument('SLUG', 'the partner\'s slug')
    .option('--days <N>', 'the days of history shown, 1 to USAGE_HISTORY_DAYS (default: 7)')
  command(partners, 'report', 'a line per partner over the last N days: requests a day, busiest minute, ' +
    '429 and error shares, and for sandbox partners the go-live verdict (the conditions that fail: docs/operations.md)',
  partnersReport)
    .option('--days <N>', 'the days looked at, 1 to USAGE_HISTORY_DAYS (default: 7)')
  command(partners, 'export', 'write every partner (token digests, never tokens) as JSON, from control.db, ' +
    'or from Redis when STATE_URL is set', partnersExport)
    .option('--file <PATH>', 'write to this file (mode 600) instead of stdout')
  command(partners, 'import', 'add or replace partners (by slug) from a partners export, into control.db, ' +
    'or into Redis when STATE_URL is set', partnersImport)
    .addOption(required('--file <PATH>', 'a file written by partners export'))

  const datasets = program.command('datasets')
    .description('the site datasets (sandbox.db, production.db in DATA_DIR) and the service serving them')
  command(datasets, 'generate', 'write a dataset of deterministic dummy sites near real towns; the file it ' +
    'replaces is kept (datasets versions)', datasetsGenerate)
    .addOption(choice('--dataset <DATASET>', 'the dataset to write', DATASETS).makeOptionMandatory())
    .option('--count <N>', 'how many sites (default: SANDBOX_SITE_COUNT)')
    .option('--seed <SEED>',
      'the same seed writes the same sites (default: SANDBOX_SEED for sandbox, production for production)')
    .option('--europe-share <0..1>', 'the share of sites in Europe')
    .addOption(repeatable('--category-name <ID=NAME>', CATEGORY_NAME))
    .option('--dry-run', DRY_RUN)
    .option('--reload', RELOAD)
  command(datasets, 'import', 'replace a dataset with the sites of a CSV, GeoJSON or NDJSON file, all or nothing; ' +
    'the file it replaces is kept (datasets versions)', datasetsImport)
    .addOption(choice('--dataset <DATASET>', 'the dataset to replace', DATASETS).makeOptionMandatory())
    .addOption(required('--file <PATH>', 'the file to read'))
    .addOption(choice('--format <FORMAT>', 'the file\'s format (default: from its ending)', IMPORT_FORMATS))
    .option('--precision <DIGITS>', 'decimals the coordinates are rounded to, 0 to 10 (default: 3)')
    .addOption(repeatable('--category-name <ID=NAME>', CATEGORY_NAME))
    .option('--dry-run', DRY_RUN)
    .option('--force', 'import a file that removes more than half of the dataset\'s sites (refused without it)')
    .option('--reload', RELOAD)
  command(datasets, 'export',
    'write the sites of a dataset file (as stored, obscured) to a CSV, GeoJSON or NDJSON file', datasetsExport)
    .addOption(choice('--dataset <DATASET>', 'the dataset to read', DATASETS).makeOptionMandatory())
    .addOption(required('--file <PATH>', 'the file to write'))
    .addOption(choice('--format <FORMAT>', 'the file\'s format (default: from its ending)', IMPORT_FORMATS))
  command(datasets, 'reload', 'make every running service instance load the dataset files anew ' +
    '(--all: every instance sharing STATE_URL, on any machine)', datasetsReload)
    .option('--all', 'every instance sharing STATE_URL, not only those of this DATA_DIR')
  command(datasets, 'info', 'show each dataset file: site count, built_at, source, precision', datasetsInfo)
  command(datasets, 'versions', 'list each dataset file and its kept versions (the files replaced by import, ' +
    'generate and rollback, the newest DATASET_KEEP): sites, built_at, size, when replaced, source', datasetsVersions)
    .addOption(choice('--dataset <DATASET>', 'only this dataset', DATASETS))
  command(datasets, 'rollback', 'put a kept version back in place of the dataset file (by default the newest: ' +
    'the file the last import, generate or rollback replaced), keeping the file it replaces: a second rollback ' +
    'undoes the first', datasetsRollback)
    .addOption(choice('--dataset <DATASET>', 'the dataset to roll back', DATASETS).makeOptionMandatory())
    .option('--to <VERSION>', 'the kept version to put back, as datasets versions lists it (default: the newest)')
    .option('--reload', RELOAD)
}

interface MainOptions {
  /** Where configuration is read from (with `.env`, as the service does): by default the process's environment. */
  env?: Record<string, string | undefined>
  stdout?: Output
  stderr?: Output
  /** How the operator runs the CLI, as the help shows it. */
  name?: string
}

/**
 * The CLI, built anew for each call: `argv` without node and the script, e.g.
 * ['partners', 'show', 'acme', '--json']. Resolves to the exit code: 0 done, 1 failed, 2 bad usage.
 */
export async function main (argv: string[], io: MainOptions = {}): Promise<number> {
  const { env = process.env, stdout = process.stdout, stderr = process.stderr, name = 'npm run admin --' } = io
  let exitCode = 0

  /** A group (or the program) run without a command: its help, as a usage error. */
  const withoutCommand = (_options: unknown, cmd: Command) => {
    if (cmd.args.length > 0) {
      const known = cmd.commands.map((c) => c.name()).filter((n) => n !== 'help').join(', ')
      const named = cmd.parent ? `${cmd.name()} ${cmd.args[0]}` : cmd.args.slice(0, 2).join(' ')
      throw new UsageError(`unknown command '${named}' (known: ${known}); see --help`)
    }
    cmd.outputHelp()
    exitCode = 2
  }

  const command = (group: Command, commandName: string, description: string, body: Body) =>
    group.command(commandName).description(description).action(async (...params: unknown[]) => {
      const cmd = params.at(-1) as Command
      const options: Options = {}
      for (const o of cmd.options) options[o.name()] = cmd.getOptionValue(o.attributeName())
      const json = options.json === true
      // --file names a path from where the operator ran the command: npm runs a script in the package's folder,
      // and names the one it was started from in INIT_CWD
      if (typeof options.file === 'string' && options.file !== '') {
        options.file = resolve(env.INIT_CWD ?? process.cwd(), options.file)
      }
      const config = loadConfig(env)
      mkdirSync(config.dataDir, { recursive: true }) // as the service does: a new DATA_DIR is made, not an error
      const result = await body({ config, options, args: cmd.processedArgs as string[], json, stderr })
      if (json) stdout.write(JSON.stringify(result.json, null, 2) + '\n')
      // a failure's text goes to stderr; with --json, its last line (the one-line reason) does
      const reasonLine = () => result.text.slice(result.text.lastIndexOf('\n') + 1)
      if (result.exitCode) stderr.write((json ? reasonLine() : result.text) + '\n')
      else if (!json) stdout.write(result.text + '\n')
      exitCode = result.exitCode ?? 0
    })

  const program = new Command(name)
    .usage('<group> <command> [options]')
    .description('Operator CLI of the Landing-Site Partner API. Configuration (DATA_DIR, STATE_URL...) ' +
      'comes from the environment and .env, as for the service.')
    .configureOutput({
      writeOut: (text) => stdout.write(text),
      writeErr: (text) => stderr.write(text),
      outputError: () => {}, // main writes the one error line
      getOutHelpWidth: () => (stdout.isTTY && stdout.columns) || 80,
      getErrHelpWidth: () => (stderr.isTTY && stderr.columns) || 80,
      getOutHasColors: () => false,
      getErrHasColors: () => false
    })
    .configureHelp({
      styleTitle: (title) => title.toLowerCase(),
      commandUsage: (cmd) => {
        const path = cmd.parent ? [commandPath(cmd)] : []
        return [name, ...path, isCommand(cmd) ? synopsis(cmd) : cmd.usage()].join(' ').trimEnd()
      },
      subcommandTerm: (cmd) =>
        isCommand(cmd) ? `${commandPath(cmd)} ${synopsis(cmd)}`.trimEnd() : Help.prototype.subcommandTerm(cmd),
      formatItem (this: Help, term, termWidth, description, helper) {
        // a term too wide for a column beside it (a command with its arguments): its description below it
        const width = this.helpWidth ?? 80
        if (!description || width - termWidth - 4 >= this.minWidthToWrap) {
          return Help.prototype.formatItem.call(this, term, termWidth, description, helper)
        }
        return `  ${term}\n${helper.boxWrap(description, width - 6).replace(/^/gm, '      ')}`
      }
    })

  declareCommands(program, command)
  // set once the commands exist: commander copies these settings to commands made after them
  program.helpCommand(true).allowExcessArguments().action(withoutCommand)
    .hook('preAction', (_program, cmd) => checkChoices(cmd))

  const groups = program.commands.filter((c) => c.name() !== 'help')
  for (const group of groups) {
    group.usage('<command> [options]').helpCommand(false).allowExcessArguments().action(withoutCommand)
    for (const cmd of group.commands) cmd.option('--json', 'print one JSON document on stdout instead of text')
  }
  // every command's line, so that one --help shows them all
  program.addHelpText('after', () => [
    '', 'commands (each takes --help for its options, and --json):',
    ...groups.flatMap((group) => group.commands.map((cmd) => `  ${commandPath(cmd)} ${synopsis(cmd)}`.trimEnd()))
  ].join('\n'))
  const refuse = (cmd: Command) => cmd.exitOverride((err) => {
    throw HELP_SHOWN.has(err.code) ? err : new UsageError(reason(cmd, err))
  })
  for (const cmd of [program, ...groups, ...groups.flatMap((c) => c.commands)]) refuse(cmd)

  try {
    await program.parseAsync(argv, { from: 'user' })
    return exitCode
  } catch (err) {
    if (err instanceof CommanderError && HELP_SHOWN.has(err.code)) return 0
    stderr.write(`error: ${(err as Error).message.split('\n')[0]}\n`)
    return err instanceof UsageError ? 2 : 1
  }
}

// Run as a program (npm run admin runs dist/scripts/admin.js); imported (lsp-admin.js, tests), it only exports main.
if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  process.exitCode = await main(process.argv.slice(2))
}
