// Shared schema pieces: src/http/query.ts parses each query parameter by its schema, so the schema both
// documents and validates it.
import { Type, type SchemaOptions, type TSchema } from '@sinclair/typebox'

export const SITE_ID_PATTERN = '^[A-Za-z0-9_-]{1,64}$'
export const TAG_PATTERN = '^~[a-z0-9-]{1,63}$'
export const SLUG_PATTERN = '^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$'
/** SLUG_PATTERN in the operator's words */
export const SLUG_RULE = '1 to 64 lowercase letters, digits and inner hyphens'

/** Unicode's control characters (\p{Cc}), spelt out: a non-Unicode pattern, cheaper on a million names. */
// eslint-disable-next-line no-control-regex -- control characters are what it looks for
export const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/
const MAX_NAME_LENGTH = 200
export const NAME_RULE = `1 to ${MAX_NAME_LENGTH} characters without control characters`
/** A site's or a partner's name, as imports and the CLI accept it (NAME_RULE), not blank. */
export const isName = (name: unknown): name is string =>
  typeof name === 'string' && name.length <= MAX_NAME_LENGTH && !CONTROL_CHARACTER.test(name) && name.trim() !== ''

export const Nullable = <T extends TSchema>(schema: T, options?: SchemaOptions) =>
  Type.Union([schema, Type.Null()], options)

export const SiteId = Type.String({
  pattern: SITE_ID_PATTERN, description: 'Site ID: 1 to 64 characters of A-Z a-z 0-9 _ -'
})
/** `x-format` says what a valid value looks like, in the error of a malformed one. */
export const Tag = Type.String({
  pattern: TAG_PATTERN, maxLength: 64,
  'x-format': '~ then lowercase letters, digits and hyphens, at most 64 characters in all (e.g. ~helipad); ' +
    'GET /v1/tags lists them',
  description: 'Canonical tag: ~ then lowercase letters, digits and hyphens (at most 64 characters), e.g. ~helipad; ' +
    'GET /v1/tags lists the tags'
})

/** `x-coordinate` marks a parameter whose bad value is svc_partner_api_invalid_coordinates. */
export const Latitude = Type.Number({
  minimum: -90, maximum: 90, 'x-coordinate': 'lat', description: 'Latitude in decimal degrees, -90 to 90'
})
export const Longitude = Type.Number({
  minimum: -180, maximum: 180, 'x-coordinate': 'lng', description: 'Longitude in decimal degrees, -180 to 180'
})
/** The largest category id, in datasets and allow-lists (0 and 1 are never served). */
export const CATEGORY_MAX = 2_147_483_647
/** Any integer is well formed: one the partner is not served (0 and 2147483648 too) is category_not_permitted. */
export const CategoryId =
  Type.Integer({ description: 'Only sites of this category; it must be in the partner allow-list' })
export const DemoFlag = Type.Boolean({
  default: false, description: 'true (or 1) serves sandbox data even to a production partner; accepts true, false, 1, 0'
})
