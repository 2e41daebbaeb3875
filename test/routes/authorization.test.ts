// Several Authorization headers in one request: Node keeps only the first in `headers`, so a
// second with another token must be seen in the raw headers and refused, as a header and an
// api_key with different tokens are.
import { request } from 'node:http'
import t from 'tap'
import { UNLIMITED, buildTestApp, site } from '../helper.ts'

const { app, tokens } = await buildTestApp(t, {
  production: [site('prd-hotel', 4, 51.5, -0.12)],
  partners: [
    {
      name: 'Live', slug: 'live', tier: 'growth', environment: 'production', categories: [4], limitOverrides: UNLIMITED
    },
    {
      name: 'Other', slug: 'other', tier: 'growth', environment: 'production', categories: [4],
      limitOverrides: UNLIMITED
    }
  ]
})

const search = '/v1/sites/nearest?lat=51.5&lng=-0.12'
const INVALID_KEY = {
  code: 'svc_partner_api_invalid_key', message: 'The API key is not recognised.', data: { status: 401 }
}
/** The body of a key that cannot be read, whatever its value: the reason in a sentence and in `data`. */
const unusable = (reason: string, sentence: string) => ({
  code: 'svc_partner_api_invalid_key',
  message: `The API key could not be read: ${sentence}`,
  data: { status: 401, reason }
})
const KEYS_DIFFER = unusable('keys_differ', 'two different keys were sent. Send one.')
const NOT_BEARER = unusable('not_bearer', 'an Authorization header must be Bearer followed by the key.')
const REPEATED = unusable('api_key_repeated', 'api_key was given more than once. Send it once.')
const bearer = (slug: string) => `Bearer ${tokens[slug]}`

t.test('through inject', async (t) => {
  const cases: [string, string | undefined, string[], number, object?][] = [
    ['one header', undefined, [bearer('live')], 200],
    ['the same token twice', undefined, [bearer('live'), bearer('live')], 200],
    ['the same token twice, and as api_key', tokens.live, [bearer('live'), bearer('live')], 200],
    ['two different tokens', undefined, [bearer('live'), bearer('other')], 401, KEYS_DIFFER],
    ['two different tokens, the first also as api_key', tokens.live, [bearer('live'), bearer('other')], 401,
      KEYS_DIFFER],
    ['a token, then a header that is not Bearer', undefined, [bearer('live'), 'Basic abc'], 401, NOT_BEARER],
    ['a Basic header alone', undefined, ['Basic abc'], 401, NOT_BEARER],
    ['a header and a different api_key', tokens.other, [bearer('live')], 401, KEYS_DIFFER],
    ['an unknown token', undefined, ['Bearer lsp_nobody'], 401, INVALID_KEY]
  ]
  for (const [what, apiKey, headers, status, body] of cases) {
    const url = apiKey === undefined ? search : `${search}&api_key=${apiKey}`
    // an array: the header sent that many times
    const sent: Record<string, string | string[]> = { authorization: headers.length === 1 ? headers[0] : headers }
    const res = await app.inject({ url, headers: sent })
    t.equal(res.statusCode, status, what)
    if (status === 200) t.equal(JSON.parse(res.body).id, 'prd-hotel', what)
    else t.same(JSON.parse(res.body), body, what)
  }
  const twice = await app.inject({ url: `${search}&api_key=${tokens.live}&api_key=${tokens.live}` })
  t.same([twice.statusCode, JSON.parse(twice.body)], [401, REPEATED], 'api_key twice')
})

t.test('over a real socket, as sent by a client', async (t) => {
  const address = await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = new URL(address)
  const get = (authorization: string[]) => new Promise<{ status: number, body: string }>((resolve, reject) => {
    // node:http sends an array header as that many header lines
    const headers: Record<string, string[]> = { authorization }
    const req = request({ host: '127.0.0.1', port, path: search, headers }, (res) => {
      let body = ''
      res.on('data', (d) => { body += d })
      res.on('end', () => resolve({ status: res.statusCode!, body }))
    })
    req.on('error', reject)
    req.end()
  })
  const same = await get([bearer('live'), bearer('live')])
  t.equal(same.status, 200)
  const different = await get([bearer('live'), bearer('other')])
  t.equal(different.status, 401)
  t.same(JSON.parse(different.body), KEYS_DIFFER)
})
