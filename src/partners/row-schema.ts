// A partner as a partners export holds it, one TypeBox schema per field, each with the rule an
// operator reads when a value breaks it (`x-expected`). Two shapes share the fields: a control.db
// row (export version 1, and the rows kept in Redis) and an export entry of version 2, which is
// `partners show --json` plus the token digest.
import { Type, type Static, type TObject, type TSchema } from '@sinclair/typebox'
import { Errors, ValueErrorType } from '@sinclair/typebox/errors'
import { CATEGORY_MAX, NAME_RULE, SLUG_PATTERN, SLUG_RULE, isName } from '../schemas/common.ts'
import { ENVIRONMENTS, MAX_LIMIT, MAX_RESULTS_CEILING, STATUSES, TIERS } from './tiers.ts'

/** At most this many categories in a partner's list (there are a few dozen in use). */
export const MAX_PARTNER_CATEGORIES = 256
/** Half the Earth's circumference: no radius is larger. */
export const MAX_RADIUS_CAP_KM = 20037
const RADIUS_RULE = `a number of km greater than 0 and at most ${MAX_RADIUS_CAP_KM}`
const CATEGORIES_RULE = `at most ${MAX_PARTNER_CATEGORIES} distinct category ids up to ${CATEGORY_MAX}`

const oneOf = (values: readonly string[]) =>
  Type.Union(values.map((v) => Type.Literal(v)), { 'x-expected': `one of ${values.join(', ')}` })

// Category 0 and 1 are accepted, as the first builds' CLI did: the service never serves them.
/** As toISOString writes it, as every build has written these two. */
const time = Type.String({
  pattern: '^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d(\\.\\d+)?Z$',
  'x-expected': 'a UTC time such as 2026-01-31T12:00:00.000Z'
})

/** The fields both shapes begin with, in this order. */
const identity = {
  id: Type.String({ pattern: '^ptn_[0-9a-f]{12}$', 'x-expected': 'ptn_ and 12 hex digits' }),
  slug: Type.String({ pattern: SLUG_PATTERN, 'x-expected': SLUG_RULE }),
  name: Type.String({ minLength: 1, maxLength: 200, 'x-expected': '1 to 200 characters' }),
  status: oneOf(STATUSES),
  tier: oneOf(TIERS),
  environment: oneOf(ENVIRONMENTS)
}

/** The other fields both shapes write alike. */
const common = {
  radius_cap_km: Type.Number({ exclusiveMinimum: 0, 'x-expected': 'a number of km greater than 0' }),
  max_results: Type.Integer({
    minimum: 1, maximum: MAX_RESULTS_CEILING, 'x-expected': `a whole number from 1 to ${MAX_RESULTS_CEILING}`
  }),
  token_sha256: Type.String({ pattern: '^[0-9a-f]{64}$', 'x-expected': '64 hex digits (the SHA-256 of the token)' }),
  created_at: time,
  updated_at: time
}

const switchColumn = Type.Union([Type.Literal(0), Type.Literal(1)], { 'x-expected': '0 or 1' })
const limitColumn = Type.Union([Type.Null(), Type.Literal('unlimited'), Type.String({ pattern: '^[1-9]\\d*$' })],
  { 'x-expected': `null (the tier's limit), "unlimited", or a whole number from 1 to ${MAX_LIMIT} written as text` })

/** control.db's columns: a version 1 export's rows, and Redis's. */
export const PartnerRowSchema = Type.Object({
  ...identity,
  categories: Type.String({
    pattern: '^(\\d+(,\\d+)*)?$', 'x-expected': `category ids up to ${CATEGORY_MAX} separated by commas, e.g. 4,7`
  }),
  other_categories: switchColumn,
  site_by_id: switchColumn,
  radius_cap_km: common.radius_cap_km,
  max_results: common.max_results,
  limit_minute: limitColumn,
  limit_hour: limitColumn,
  limit_day: limitColumn,
  token_sha256: common.token_sha256,
  created_at: common.created_at,
  updated_at: common.updated_at
}, { additionalProperties: false })

const wholeFrom1 = Type.Integer({ minimum: 1, maximum: MAX_LIMIT })
const override = Type.Union([wholeFrom1, Type.Literal('unlimited'), Type.Null()],
  { 'x-expected': `a whole number from 1 to ${MAX_LIMIT}, "unlimited", or null (the tier's limit)` })
const limit = Type.Union([wholeFrom1, Type.Literal('unlimited')],
  { 'x-expected': `a whole number from 1 to ${MAX_LIMIT} or "unlimited"` })
const windows = <T extends TSchema>(schema: T) => Type.Object({ minute: schema, hour: schema, day: schema },
  { additionalProperties: false, 'x-expected': 'an object of minute, hour and day' })

/** A version 2 entry: the fields of `partners show --json`, in its order, and the token digest. */
export const PartnerEntrySchema = Type.Object({
  ...identity,
  categories: Type.Array(Type.Integer({ minimum: 0, maximum: CATEGORY_MAX }),
    { 'x-expected': `a list of category ids (whole numbers up to ${CATEGORY_MAX}), e.g. [4, 7]` }),
  other_categories: Type.Boolean({ 'x-expected': 'true or false' }),
  site_by_id: Type.Boolean({ 'x-expected': 'true or false' }),
  radius_cap_km: common.radius_cap_km,
  max_results: common.max_results,
  // what tier and limit_overrides gave when exported; an import sets those two, not this
  limits: windows(limit),
  limit_overrides: windows(override),
  created_at: common.created_at,
  updated_at: common.updated_at,
  token_sha256: common.token_sha256
}, { additionalProperties: false })

const LIMIT_COLUMNS = ['limit_minute', 'limit_hour', 'limit_day'] as const

/**
 * What is wrong with a control.db row (a version 1 export's, or Redis's): its schema, then the
 * bounds its text columns hold numbers to, which a pattern cannot state. Without them, a row an
 * export writes could be one its import refuses (a limit of 1e21 is written 1e+21 in version 2).
 */
export function rowProblem (value: unknown): string | undefined {
  const problem = firstProblem(PartnerRowSchema, value)
  if (problem !== undefined) return problem
  const row = value as Static<typeof PartnerRowSchema>
  if (row.categories !== '' && row.categories.split(',').some((id) => Number(id) > CATEGORY_MAX)) {
    return `categories must be ${PartnerRowSchema.properties.categories['x-expected']}`
  }
  const over = LIMIT_COLUMNS.find((column) => /^\d+$/.test(row[column] ?? '') && Number(row[column]) > MAX_LIMIT)
  return over === undefined ? undefined : `${over} must be ${limitColumn['x-expected']}`
}

/**
 * What a new or imported partner may not hold, though rows written before these bounds may (they
 * are served and put back into an emptied Redis as they are): control characters in its name, a
 * radius cap past half the Earth's circumference, categories repeated or too many.
 */
export function boundsProblem (row: { name: string, radius_cap_km: number, categories: string }): string | undefined {
  if (!isName(row.name)) return `name must be ${NAME_RULE}`
  if (row.radius_cap_km > MAX_RADIUS_CAP_KM) return `radius_cap_km must be ${RADIUS_RULE}`
  const ids = row.categories === '' ? [] : row.categories.split(',')
  if (ids.length > MAX_PARTNER_CATEGORIES || new Set(ids.map(Number)).size < ids.length) {
    return `categories must be ${CATEGORIES_RULE}`
  }
  return undefined
}

/** The schema at a JSON pointer's segments, through object properties and array items. */
function schemaAt (root: TSchema, segments: string[]): TSchema | undefined {
  let schema: TSchema | undefined = root
  for (const segment of segments) {
    if (schema?.type === 'object') schema = (schema as TObject).properties[segment]
    else if (schema?.type === 'array') schema = schema.items as TSchema
    else return undefined
  }
  return schema
}

const unescape = (segment: string) => segment.replace(/~1/g, '/').replace(/~0/g, '~')

/**
 * What is wrong with `value` as `schema` sees it, in the operator's words, naming the field
 * (`max_results must be a whole number from 1 to 10000`); undefined when it passes. Only the first
 * problem: the operator mends it and imports again. Not compiled: a few rows an import, and every
 * CLI command would pay for the compiler at start-up.
 */
export function firstProblem (schema: TObject, value: unknown): string | undefined {
  const error = Errors(schema, value).First()
  if (error === undefined) return undefined
  if (error.path === '') return 'not an object'
  const segments = error.path.split('/').slice(1).map(unescape)
  if (error.type === ValueErrorType.ObjectAdditionalProperties) {
    // refused, not dropped: a misspelt field would otherwise vanish without a word
    const known = Object.keys((error.schema as TObject).properties ?? {}).join(', ')
    return `unknown field ${segments.join('.')}; the fields are ${known}`
  }
  // an array item's rule is its list's: name the list
  let at = segments
  while (at.length > 0 && schemaAt(schema, at)?.['x-expected'] === undefined) at = at.slice(0, -1)
  const field = (at.length > 0 ? at : segments).join('.')
  if (error.type === ValueErrorType.ObjectRequiredProperty) return `${field} is missing`
  const expected = schemaAt(schema, at)?.['x-expected'] as string | undefined
  return expected === undefined ? `${field}: ${error.message}` : `${field} must be ${expected}`
}

/** How a message names a partner: its slug when it has a text one, else its place in the file. */
export function partnerLabel (value: unknown, index?: number): string {
  const slug = (value as { slug?: unknown } | null)?.slug
  if (typeof slug === 'string') return `partner ${JSON.stringify(slug)}`
  return index === undefined ? 'a partner without a slug' : `partner #${index + 1}`
}
