// The query validator's canonical string: the cache keys on it, so it must be the same for the
// same values however written, and different for different values.
import { test } from 'tap'
import { Type } from '@sinclair/typebox'
import { canonicalOf, compileQuery } from '../../src/http/query.ts'

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
