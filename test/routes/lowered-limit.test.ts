// A limit lowered by the operator within a window that already holds more than the new limit:
// the 429's RateLimit and X-RateLimit-Reset say the wait Retry-After says (when a request frees
// up), not when the oldest request leaves (which frees up nothing while more than the limit remain).
import t from 'tap'
import { buildTestApp, site } from '../helper.ts'
import { PartnerStore, controlPath } from '../../src/partners/store.ts'

let now = Date.UTC(2026, 10, 21, 12, 0, 0)
const { app, dataDir } = await buildTestApp(t, { sandbox: [site('s-1', 4, 51.5, -0.12)] }, {}, { clock: () => now })
const operator = new PartnerStore(controlPath(dataDir))
t.teardown(() => operator.close())

const request = (token: string) => app.inject({
  method: 'GET', url: '/v1/sites/nearest?lat=51.5&lng=-0.12', headers: { authorization: `Bearer ${token}` }
})

t.test('30 a minute used over 30 s, the limit lowered to 5: ' +
  'the headers of the 429 agree with Retry-After', async (t) => {
  const { token } = operator.create({ name: 'lowered', slug: 'lowered', tier: 'scale' })
  operator.update('lowered', { limitOverrides: { minute: 30, hour: 'unlimited', day: 'unlimited' } })
  app.partners.refresh()
  const start = now
  for (let i = 0; i < 30; i++) {
    now = start + i * 1000
    t.equal((await request(token)).statusCode, 200)
  }
  operator.update('lowered', { limitOverrides: { minute: 5 } })
  app.partners.refresh()
  now = start + 30_000
  const refused = await request(token)
  t.equal(refused.statusCode, 429)
  const retryAfter = Number(refused.headers['retry-after'])
  t.equal(retryAfter, 55, 'until the 5th most recent (at 25 s) leaves the minute')
  t.equal(refused.headers.ratelimit, `"minute";r=0;t=${retryAfter}`, 'RateLimit t= is the same wait')
  t.equal(refused.headers['x-ratelimit-reset'], String((now + retryAfter * 1000) / 1000),
    'X-RateLimit-Reset: when a request frees up')
  now += retryAfter * 1000
  t.equal((await request(token)).statusCode, 200, 'accepted then')
})
