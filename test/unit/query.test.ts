// The query validator's canonical string: the cache keys on it, so it must be the same for the
// same values however written, and different for different values.
import { test } from 'tap'
import fc from 'fast-check'
import { Type } from '@sinclair/typebox'
import { canonicalOf, compileQuery, numberText } from '../../src/http/query.ts'

test('numberText is String(Number(text)) for every decimal text', async (t) => {
  const digits = (min: number, max: number) =>
    fc.array(fc.constantFrom(...'0123456789'), { minLength: min, maxLength: max }).map((a) => a.join(''))
  const decimal = fc.tuple(fc.constantFrom('', '-', '+'), digits(0, 18), fc.constantFrom('', '.'), digits(0, 18),
    fc.constantFrom('', 'e-7', 'e5', 'E+2'))
    .map(([sign, int, dot, frac, exp]) => `${sign}${int}${dot}${frac}${exp}`)
    .filter((text) => /\d/.test(text) && Number.isFinite(Number(text)))
  const fromDoubles = fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => String(d))
  const short = fc.tuple(fc.integer({ min: -180, max: 180 }), fc.integer({ min: 0, max: 99999 }),
    fc.integer({ min: 0, max: 5 }))
    .map(([i, f, z]) => `${i}.${'0'.repeat(z)}${f}`)
  const run = fc.check(fc.property(fc.oneof(decimal, fromDoubles, short), (text) =>
    numberText(text, Number(text) === 0 ? 0 : Number(text)) === String(Number(text) === 0 ? 0 : Number(text))
  ), { numRuns: 20000 })
  t.same({ failed: run.failed, counterexample: run.counterexample, numRuns: run.numRuns },
    { failed: false, counterexample: null, numRuns: 20000 }, 'numberText agrees with String(Number()) on 20,000 texts')
  for (const text of [
    '0', '-0', '0.0', '1e-7', '0.000001', '0.0000001', '-0.0000012', '123456789012345', '1234567890123456', '0.1',
    '.5', '5.', '+5', '007', '48.1000', '48.7070', '25.0', '-0.0', '0.000', '10.000000000000000001', '-12.3400',
    '100.', '120.00000000000001000', '1.7976931348623157e308', '9007199254740993', '0.30000000000000004', '100',
    '-90', '179.99999999999999'
  ]) {
    const n = Number(text) === 0 ? 0 : Number(text)
    t.equal(numberText(text, n), String(n), text)
  }
})

test('one canonical string for one set of values', async (t) => {
  const validate = compileQuery(Type.Object({
    lat: Type.Number({ minimum: -90, maximum: 90 }),
    radius: Type.Number({ exclusiveMinimum: 0, default: 25 }),
    demo: Type.Boolean({ default: false }),
    tag: Type.Optional(Type.String({ maxLength: 10 }))
  }))
  const canonical = (query: Record<string, string>) => {
    const result = validate(query)
    if ('error' in result) throw result.error
    return canonicalOf(result.value)
  }
  t.equal(canonical({ lat: '48.1' }), 'lat=48.1&radius=25&demo=false&')
  t.equal(canonical({ lat: '+48.10', radius: '25.0', demo: '0' }), 'lat=48.1&radius=25&demo=false&')
  t.equal(canonical({ lat: '4.81e1', radius: '2.5e1' }), 'lat=48.1&radius=25&demo=false&')
  t.equal(canonical({ lat: '-0' }), 'lat=0&radius=25&demo=false&')
  t.equal(canonical({ lat: '0.0000001', tag: 'ems' }), 'lat=1e-7&radius=25&demo=false&tag=ems&')
  t.not(canonical({ lat: '48.1' }), canonical({ lat: '48.10001' }))
  const result = validate({ lat: '1' })
  t.same(Object.keys('value' in result ? result.value : {}), ['lat', 'radius', 'demo'],
    'the canonical string is not an own enumerable key')
  t.equal(JSON.stringify('value' in result ? result.value : {}), '{"lat":1,"radius":25,"demo":false}')
})
