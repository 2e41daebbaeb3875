// The hand-written JSON text (src/http/json-text.ts) and the error bodies made with it are
// JSON.stringify's text, byte for byte.
import t from 'tap'
import { jsonString, jsonValue } from '../../src/http/json-text.ts'
import { ApiError, ERRORS, type ErrorCode } from '../../src/errors.ts'

t.test('jsonString is JSON.stringify for every UTF-16 code unit, alone and in context', async (t) => {
  let differ = 0
  for (let c = 0; c <= 0xffff; c++) {
    const ch = String.fromCharCode(c)
    for (const text of [ch, `a${ch}`, `${ch}z`, `x${ch}${ch}y`]) if (jsonString(text) !== JSON.stringify(text)) differ++
  }
  t.equal(differ, 0)
  const texts = [
    '', '"', '\\', '\u2028\u2029', '😀', '\ud83d', 'a\ude00b', 'é✈/v1/sites?lat=1&lng=2', 'x'.repeat(5000) + '\n'
  ]
  texts.forEach((text, i) => t.equal(jsonString(text), JSON.stringify(text), `text ${i}`))
})

t.test('jsonValue is JSON.stringify for flat values', async (t) => {
  const values: unknown[] = [0, -0, 1, -1.5, 0.1 + 0.2, 1e21, 1e-7, 2 ** 53, Number.MAX_VALUE, NaN, Infinity, -Infinity,
    'minute', 'a"b', true, false, null, ['a', 'b'], { lat: 'x', lng: 'y' }]
  values.forEach((v, i) => t.equal(jsonValue(v), JSON.stringify(v), `value ${i}`))
})

t.test('an error body is JSON.stringify(toBody()) for every code, with and without parameters', async (t) => {
  const extras: Record<string, unknown>[] = [
    {},
    { window: 'minute', retry_after: 17 },
    { window: 'day', retry_after: 86_400 },
    { params: ['lat', 'lng'] },
    { params: { radius: 'a number from 0.1 to 100', 'odd"name': 'with \\ and \u0001' } },
    { window: 'hour\u2028"', retry_after: 0.5 },
    { retry_after: undefined, window: 'minute' }
  ]
  let checked = 0
  for (const code of Object.keys(ERRORS) as ErrorCode[]) {
    const plain = new ApiError(code)
    t.equal(plain.toJson(), JSON.stringify(plain.toBody()), `${code} without parameters`)
    for (const extra of extras) {
      const error = new ApiError(code, extra as ConstructorParameters<typeof ApiError>[1])
      t.equal(error.toJson(), JSON.stringify(error.toBody()), `${code}, parameters ${extras.indexOf(extra)}`)
      checked++
    }
  }
  const passedOn = new ApiError('rest_bad_request', {}, 413) // a framework or parser 4xx passed on: its own status
  t.same([passedOn.statusCode, passedOn.data.status], [413, 413])
  t.equal(passedOn.toJson(), JSON.stringify(passedOn.toBody()), 'rest_bad_request with its own status')
  t.equal(checked, Object.keys(ERRORS).length * extras.length)
})

t.test('messages are filled at their placeholders as before', async (t) => {
  t.equal(new ApiError('svc_partner_api_rate_limited', { window: 'minute', retry_after: 17 }).message,
    'Rate limit exceeded for the minute window. Retry after 17 seconds.')
  t.equal(new ApiError('rest_missing_callback_param', { params: ['lat', 'lng'] }).message,
    'Missing parameter(s): lat, lng.')
  t.equal(new ApiError('rest_invalid_param', { params: { radius: 'x', limit: 'y' } }).message,
    'Invalid parameter(s): radius, limit.')
  t.equal(new ApiError('svc_partner_api_rate_limited').message,
    'Rate limit exceeded for the undefined window. Retry after undefined seconds.')
  t.equal(new ApiError('svc_partner_api_invalid_key').message, ERRORS.svc_partner_api_invalid_key.message)
})
