// A partner as a partners export holds it, one TypeBox schema per field, each with the rule an
// operator reads when a value breaks it (`x-expected`): a control.db row (export version 1, and the
// rows kept in Redis), or a version 2 entry, which is `partners show --json` plus the token digest.
import { Type, type Static, type TObject, type TSchema } from '@sinclair/typebox'
import { Errors, ValueErrorType } from '@sinclair/typebox/errors'
import { CATEGORY_MAX, NAME_RULE, SLUG_PATTERN, SLUG_RULE, isName } from '../schemas/common.ts'
import { ENVIRONMENTS, MAX_LIMIT, MAX_RESULTS_CEILING, STATUSES, TIERS } from './tiers.ts'

export const MAX_PARTNER_CATEGORIES = 256
/** Half the Earth's circumference: no radius is larger. */
export const MAX_RADIUS_CAP_KM = 20037

const oneOf = <T extends string>(values: readonly T[]) =>
  Type.Union(values.map((v) => Type.Literal(v)), { 'x-expected': `one of ${values.join(', ')}` })
const switchColumn = Type.Union([Type.Literal(0), Type.Literal(1)], { 'x-expected': '0 or 1' })
const limitColumn = Type.Union([Type.Null(), Type.Literal('unlimited'), Type.String({ pattern: '^[1-9]\\d*$' })],
  { 'x-expected': `null (the tier's limit), "unlimited", or a whole number from 1 to ${MAX_LIMIT} written as text` })
const time = Type.String({ // as toISOString writes it
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
const radiusCapKm = Type.Number({ exclusiveMinimum: 0, 'x-expected': 'a number of km greater than 0' })
const maxResults = Type.Integer({
  minimum: 1, maximum: MAX_RESULTS_CEILING, 'x-expected': `a whole number from 1 to ${MAX_RESULTS_CEILING}`
})
const digest = Type.String({ pattern: '^[0-9a-f]{64}$', 'x-expected': '64 hex digits (the SHA-256 of the token)' })

/** control.db's columns: a version 1 export's rows, and Redis's. */
export const PartnerRowSchema = Type.Object({
  ...identity,
  // category 0 and 1 are accepted, as the first builds' CLI did: the service never serves them
  categories: Type.String({
    pattern: '^(\\d+(,\\d+)*)?$', 'x-expected': `category ids up to ${CATEGORY_MAX} separated by commas, e.g. 4,7`
  }),
  other_categories: switchColumn,
  site_by_id: switchColumn,
  radius_cap_km: radiusCapKm,
  max_results: maxResults,
  limit_minute: limitColumn,
  limit_hour: limitColumn,
  limit_day: limitColumn,
  token_sha256: digest,
  created_at: time,
  updated_at: time
}, { additionalProperties: false })

const wholeFrom1 = Type.Integer({ minimum: 1, maximum: MAX_LIMIT })
const windows = <T extends TSchema>(schema: T) => Type.Object({ minute: schema, hour: schema, day: schema },
  { additionalProperties: false, 'x-expected': 'an object of minute, hour and day' })
const categoryIds = `a list of category ids (whole numbers up to ${CATEGORY_MAX}), e.g. [4, 7]`

/** A version 2 entry: the fields of `partners show --json`, in its order, and the token digest. */
export const PartnerEntrySchema = Type.Object({
  ...identity,
  // an item's rule is its list's, for the message to name the list
  categories: Type.Array(Type.Integer({ minimum: 0, maximum: CATEGORY_MAX, 'x-expected': categoryIds }),
    { 'x-expected': categoryIds }),
  other_categories: Type.Boolean({ 'x-expected': 'true or false' }),
  site_by_id: Type.Boolean({ 'x-expected': 'true or false' }),
  radius_cap_km: radiusCapKm,
  max_results: maxResults,
  // what tier and limit_overrides gave when exported; an import sets those two, not this
  limits: windows(Type.Union([wholeFrom1, Type.Literal('unlimited')],
    { 'x-expected': `a whole number from 1 to ${MAX_LIMIT} or "unlimited"` })),
  limit_overrides: windows(Type.Union([wholeFrom1, Type.Literal('unlimited'), Type.Null()],
    { 'x-expected': `a whole number from 1 to ${MAX_LIMIT}, "unlimited", or null (the tier's limit)` })),
  created_at: time,
  updated_at: time,
  token_sha256: digest
}, { additionalProperties: false })

export type PartnerRow = Static<typeof PartnerRowSchema>

/**
 * What is wrong with a control.db row: its schema, then the bounds its text columns hold numbers
 * to, which a pattern cannot state (else a row an export writes could be one its import refuses).
 */
export function rowProblem (value: unknown): string | undefined {
  const problem = firstProblem(PartnerRowSchema, value)
  if (problem !== undefined) return problem
  const row = value as PartnerRow
  if (row.categories !== '' && row.categories.split(',').some((id) => Number(id) > CATEGORY_MAX)) {
    return `categories must be ${PartnerRowSchema.properties.categories['x-expected']}`
  }
  const over = (['limit_minute', 'limit_hour', 'limit_day'] as const)
    .find((column) => /^\d+$/.test(row[column] ?? '') && Number(row[column]) > MAX_LIMIT)
  return over === undefined ? undefined : `${over} must be ${limitColumn['x-expected']}`
}

/**
 * What a new or imported partner may not hold, though rows written before these bounds may (they
 * are served, and put back into an emptied Redis, as they are).
 */
export function boundsProblem (row: PartnerRow): string | undefined {
  if (!isName(row.name)) return `name must be ${NAME_RULE}`
  if (row.radius_cap_km > MAX_RADIUS_CAP_KM) {
    return `radius_cap_km must be a number of km greater than 0 and at most ${MAX_RADIUS_CAP_KM}`
  }
  const ids = row.categories === '' ? [] : row.categories.split(',')
  if (ids.length > MAX_PARTNER_CATEGORIES || new Set(ids.map(Number)).size < ids.length) {
    return `categories must be at most ${MAX_PARTNER_CATEGORIES} distinct category ids up to ${CATEGORY_MAX}`
  }
  return undefined
}

/**
 * The first thing wrong with `value` in the operator's words, naming the field (`max_results must
 * be a whole number from 1 to 10000`); undefined when it passes. Not compiled: a few rows an import,
 * and every CLI command would pay for the compiler at start-up.
 */
export function firstProblem (schema: TObject, value: unknown): string | undefined {
  const error = Errors(schema, value).First()
  if (error === undefined) return undefined
  if (error.path === '') return 'not an object'
  const segments = error.path.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
  if (error.type === ValueErrorType.ObjectAdditionalProperties) {
    // refused, not dropped: a misspelt field would otherwise vanish without a word
    const known = Object.keys((error.schema as TObject).properties).join(', ')
    return `unknown field ${segments.join('.')}; the fields are ${known}`
  }
  const field = segments.filter((s) => !/^\d+$/.test(s)).join('.') // a list's item: the list
  if (error.type === ValueErrorType.ObjectRequiredProperty) return `${field} is missing`
  const expected = error.schema['x-expected'] as string | undefined
  return expected === undefined ? `${field}: ${error.message}` : `${field} must be ${expected}`
}

/** How a message names a partner: its slug when it has a text one, else its place in the file. */
export function partnerLabel (value: unknown, index?: number): string {
  const slug = (value as { slug?: unknown } | null)?.slug
  if (typeof slug === 'string') return `partner ${JSON.stringify(slug)}`
  return index === undefined ? 'a partner without a slug' : `partner #${index + 1}`
}
