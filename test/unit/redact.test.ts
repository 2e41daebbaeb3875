import t from 'tap'
import { redactUrl } from '../../src/http/redact.ts'

t.test('secret-looking parameters are redacted, however written', async (t) => {
  const cases: [string, string][] = [
    ['/v1/sites?lat=1&lng=2', '/v1/sites?lat=1&lng=2'],
    ['/v1/sites', '/v1/sites'],
    ['/v1/sites?api_key=lsp_abc&lat=1', '/v1/sites?api_key=[REDACTED]&lat=1'],
    ['/v1/sites?lat=1&API_KEY=lsp_abc', '/v1/sites?lat=1&API_KEY=[REDACTED]'],
    ['/v1/sites?api%5Fkey=lsp_abc', '/v1/sites?api%5Fkey=[REDACTED]'],
    ['/v1/sites?apikey=x&token=y&access_token=z&key=w', '/v1/sites?apikey=[REDACTED]&token=[REDACTED]&access_token=[REDACTED]&key=[REDACTED]'],
    ['/v1/sites?api_key', '/v1/sites?api_key=[REDACTED]'],
    ['/v1/sites?tag=~monkey&lat=1', '/v1/sites?tag=~monkey&lat=1'],
    ['/v1/sites?%zz=1', '/v1/sites?%zz=1'],
    ['/v1/nowhere/lsp_lPJcZfXv7JPfV640DxT1ionGiFjo1uRJ6fc741WEOhU', '/v1/nowhere/[REDACTED]'],
    ['/v1/sites?lat=1&q=lsp_lPJcZfXv7JPfV640DxT1ionGiFjo1uRJ6fc741WEOhU', '/v1/sites?lat=1&q=[REDACTED]'],
    ['/v1/sites/lsp_abc%2Fdefghij?lat=1', '/v1/sites/[REDACTED]?lat=1'],
    ['/v1/sites/lsp_short', '/v1/sites/lsp_short']
  ]
  for (const [url, redacted] of cases) t.equal(redactUrl(url), redacted, url)
})
