// The demo partner is created once the service listens, when there is no partner at all, and only
// then: a start that failed before listening has created none (and shown no token), and the next
// start creates it and shows its token.
import t from 'tap'
import { createDemoPartner, prepareDataDir } from '../../src/setup/data-dir.ts'
import { PartnerStore, controlPath } from '../../src/partners/store.ts'
import { tokenDigest } from '../../src/partners/tokens.ts'
import { testConfig, tmpDataDir } from '../helper.ts'

const created = (config: ReturnType<typeof testConfig>) => {
  const store = new PartnerStore(controlPath(config.dataDir))
  try {
    return createDemoPartner(store, config)
  } finally {
    store.close()
  }
}

const partners = (dir: string) => {
  const store = new PartnerStore(controlPath(dir))
  try {
    return store.db.prepare('SELECT slug, token_sha256 FROM partners').all() as { slug: string, token_sha256: string }[]
  } finally {
    store.close()
  }
}

t.test('created once the service listens, with the token it prints; once', async (t) => {
  const dir = tmpDataDir(t)
  const config = testConfig(dir, { SANDBOX_SITE_COUNT: '20' })
  prepareDataDir(config)
  t.same(partners(dir), [], 'a start that stops before listening (a port taken) has created none')
  prepareDataDir(config)
  const token = created(config)
  t.match(token, /^lsp_[A-Za-z0-9_-]{43}$/)
  t.same(partners(dir), [{ slug: 'demo', token_sha256: tokenDigest(token!) }], 'the token shown is the one stored')
  t.equal(created(config), undefined, 'later starts create none and show none')
  t.same(partners(dir), [{ slug: 'demo', token_sha256: tokenDigest(token!) }], 'and keep it working')
})

t.test('none beside partners made with the CLI, none in production, none with STATE_URL', async (t) => {
  const dir = tmpDataDir(t)
  const config = testConfig(dir, { SANDBOX_SITE_COUNT: '20' })
  prepareDataDir(config)
  const store = new PartnerStore(controlPath(dir))
  store.create({ name: 'Early', slug: 'early' })
  store.close()
  t.equal(created(config), undefined)
  t.same(partners(dir).map((p) => p.slug), ['early'])
  const other = tmpDataDir(t)
  prepareDataDir(testConfig(other, { SANDBOX_SITE_COUNT: '20' }))
  t.equal(created(testConfig(other, { NODE_ENV: 'production' })), undefined)
  t.equal(created(testConfig(other, { STATE_URL: 'redis://127.0.0.1:1/0' })), undefined)
  t.same(partners(other), [], 'left for a start that serves it')
})
