// Query-string validation by the route's TypeBox schema rather than Fastify's Ajv: partners get the
// documented codes (docs/errors.md), in order: missing → invalid coordinates → ambiguous 0,0 → malformed.
import type { TObject, TSchema } from '@sinclair/typebox'
import { ApiError } from '../errors.ts'
import { DECIMAL, PARSERS, type Parsed } from './area-params.ts'

type QueryValidator = (query: unknown) => { value: Record<string, unknown> } | { error: ApiError }

/** The validated values in one string, in schema order with defaults: the response cache keys on it. */
const CANONICAL = Symbol('canonical parameters')
export const canonicalOf = (value: unknown): string => (value as { [CANONICAL]?: string })[CANONICAL] ?? ''

const INTEGER = /^[+-]?\d+$/
const MAX_SHOWN = 64
/** A parameter's rule, read once from its schema. */
function ruleOf (name: string, schema: TSchema, required: boolean) {
  const kind = schema.type as 'number' | 'integer' | 'boolean' | 'string'
  const parser = schema['x-parse'] as string | undefined
  if (!['number', 'integer', 'boolean', 'string'].includes(kind)) {
    throw new Error(`query parameter ${name}: unsupported type ${String(kind)}`)
  }
  if (parser !== undefined && !PARSERS[parser]) throw new Error(`query parameter ${name}: unknown x-parse ${parser}`)
  return {
    name,
    kind,
    required,
    /** `name=`: this parameter's start in the canonical string */
    prefix: `${name}=`,
    /** `name=default&`, made once */
    defaultPiece: schema.default === undefined ? '' : `${name}=${String(schema.default)}&`,
    defaultValue: schema.default as unknown,
    minimum: schema.minimum as number | undefined,
    maximum: schema.maximum as number | undefined,
    exclusiveMinimum: schema.exclusiveMinimum as number | undefined,
    maxLength: schema.maxLength as number | undefined,
    pattern: schema.pattern ? new RegExp(schema.pattern) : undefined,
    values: Array.isArray(schema.enum) ? schema.enum as string[] : undefined,
    /** what a valid value looks like, for the error (`x-format`) */
    format: typeof schema['x-format'] === 'string' ? schema['x-format'] as string : undefined,
    coordinate: schema['x-coordinate'] !== undefined,
    /** reads a value made of several coordinates (`x-parse`: src/http/area-params.ts) */
    parse: parser === undefined ? undefined : PARSERS[parser]
  }
}
type ParamRule = ReturnType<typeof ruleOf>

/** A reason in words, for `data.params` of rest_invalid_param. */
function describe (rule: ParamRule): string {
  switch (rule.kind) {
    case 'boolean': return `${rule.name} must be true, false, 1 or 0`
    case 'string':
      if (rule.values) return `${rule.name} must be ${rule.values.join(' or ')}`
      return rule.format ? `${rule.name} must be ${rule.format}` : `${rule.name} does not have the required format`
    default: {
      const what = rule.kind === 'integer' ? 'an integer' : 'a number'
      if (rule.exclusiveMinimum === 0) return `${rule.name} must be ${what} greater than 0`
      if (rule.minimum !== undefined && rule.maximum !== undefined) {
        return `${rule.name} must be ${what} from ${rule.minimum} to ${rule.maximum}`
      }
      if (rule.minimum !== undefined) return `${rule.name} must be ${what} from ${rule.minimum}`
      return `${rule.name} must be ${what}`
    }
  }
}

/** undefined when the text is not a valid value of the rule. */
function parseValue (rule: ParamRule, text: string): unknown {
  switch (rule.kind) {
    case 'boolean':
      if (text === 'true' || text === '1') return true
      if (text === 'false' || text === '0') return false
      return undefined
    case 'string':
      if (rule.maxLength !== undefined && text.length > rule.maxLength) return undefined
      if (rule.pattern && !rule.pattern.test(text)) return undefined
      if (rule.values && !rule.values.includes(text)) return undefined
      return text
    default: {
      if (text.length > MAX_SHOWN || !(rule.kind === 'integer' ? INTEGER : DECIMAL).test(text)) return undefined
      const n = Number(text)
      if (!Number.isFinite(n)) return undefined
      if (rule.kind === 'integer' && !Number.isSafeInteger(n)) return undefined
      if (rule.minimum !== undefined && n < rule.minimum) return undefined
      if (rule.maximum !== undefined && n > rule.maximum) return undefined
      if (rule.exclusiveMinimum !== undefined && n <= rule.exclusiveMinimum) return undefined
      return n === 0 ? 0 : n // -0 → 0
    }
  }
}

export function compileQuery (schema: TObject): QueryValidator {
  const required = new Set(schema.required ?? [])
  // As with Ajv's useDefaults, a property with a default is filled in, never missing.
  const rules = Object.entries(schema.properties)
    .map(([name, s]) => ruleOf(name, s, required.has(name) && s.default === undefined))
  const coordinates = rules.filter((r) => r.coordinate)

  return (query) => {
    const input = (query ?? {}) as Record<string, unknown>
    const value: Record<string | symbol, unknown> = {}
    const missing: string[] = []
    let badCoordinates: Record<string, string> | undefined
    let malformed: Record<string, string> | undefined
    let ambiguous = false
    let canonical = '' // made in the same pass, in schema order

    for (const rule of rules) {
      const raw = input[rule.name]
      if (raw === undefined) {
        if (rule.required) missing.push(rule.name)
        else if (rule.defaultValue !== undefined) {
          value[rule.name] = rule.defaultValue
          canonical += rule.defaultPiece
        }
        continue
      }
      if (rule.parse !== undefined) {
        const result: Parsed = typeof raw === 'string'
          ? rule.parse(raw)
          : { malformed: `${rule.name} was given more than once` }
        if ('value' in result) {
          value[rule.name] = result.value
          canonical += rule.prefix + result.text + '&'
        } else if ('coordinates' in result) (badCoordinates ??= {})[rule.name] = result.coordinates
        else if ('ambiguous' in result) ambiguous = true
        else (malformed ??= {})[rule.name] = result.malformed
        continue
      }
      const parsed = typeof raw === 'string' ? parseValue(rule, raw) : undefined
      if (parsed === undefined) {
        const reason = Array.isArray(raw) ? `${rule.name} was given more than once` : describe(rule)
        if (rule.coordinate) (badCoordinates ??= {})[rule.name] = reason
        else (malformed ??= {})[rule.name] = reason
        continue
      }
      value[rule.name] = parsed
      canonical += rule.prefix + String(parsed) + '&'
    }

    if (missing.length > 0) return { error: new ApiError('rest_missing_callback_param', { params: missing }) }
    if (badCoordinates) {
      return { error: new ApiError('svc_partner_api_invalid_coordinates', { params: badCoordinates }) }
    }
    if (ambiguous || (coordinates.length > 0 && coordinates.every((r) => value[r.name] === 0))) {
      return { error: new ApiError('svc_partner_api_ambiguous_coordinates') }
    }
    if (malformed) return { error: new ApiError('rest_invalid_param', { params: malformed }) }
    // A symbol key: left out of Object.keys, JSON and for...in, without defineProperty (a slow dictionary).
    value[CANONICAL] = canonical
    return { value }
  }
}
