// /usage honours demo= as every other endpoint does: the environment reported is the dataset a
// request with the same flag is served from.
import t from 'tap'
import { buildTestApp, site } from '../helper.ts'

const { app, tokens } = await buildTestApp(t, {
  sandbox: [site('s-1', 4, 51.5, -0.12)],
  production: [site('p-1', 4, 51.5, -0.12)],
  partners: [
    { name: 'Live', slug: 'live', tier: 'growth', environment: 'production' },
    { name: 'Demo', slug: 'demo', tier: 'demo', environment: 'production' }
  ]
})
const partnerOf = async (slug: string, query = '') => {
  const res = await app.inject({
    method: 'GET', url: `/v1/usage${query}`, headers: { authorization: `Bearer ${tokens[slug]}` }
  })
  t.equal(res.statusCode, 200, `${slug} ${query}`)
  const { environment, is_sandbox: isSandbox } = res.json().partner
  return { environment, isSandbox }
}

t.test('environment follows demo=, as the searches do', async (t) => {
  t.same(await partnerOf('live'), { environment: 'production', isSandbox: false })
  t.same(await partnerOf('live', '?demo=false'), { environment: 'production', isSandbox: false })
  t.same(await partnerOf('live', '?demo=true'), { environment: 'sandbox', isSandbox: true })
  t.same(await partnerOf('live', '?demo=1&expand=telemetry'), { environment: 'sandbox', isSandbox: true })
  t.same(await partnerOf('demo'), { environment: 'sandbox', isSandbox: true },
    'the demo tier is always served the sandbox')
  const bad = await app.inject({
    method: 'GET', url: '/v1/usage?demo=yes', headers: { authorization: `Bearer ${tokens.live}` }
  })
  t.equal(bad.statusCode, 400)
  t.same(bad.json().data.params, { demo: 'demo must be true, false, 1 or 0' })
  // and the searches agree
  const ids = async (query: string) => (await app.inject({
    method: 'GET', url: `/v1/sites?lat=51.5&lng=-0.12${query}`, headers: { authorization: `Bearer ${tokens.live}` }
  })).json().map((s: { id: string }) => s.id)
  t.same(await ids(''), ['p-1'])
  t.same(await ids('&demo=true'), ['s-1'])
})
