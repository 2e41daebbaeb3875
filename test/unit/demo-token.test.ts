// The demo partner's token is issued once the service listens, never at creation: a start that
// failed before listening leaves the partner without a seen token, and the next start issues one.
import t from 'tap'
import { issueDemoToken, prepareDataDir } from '../../src/setup/data-dir.ts'
import { PartnerStore, controlPath } from '../../src/partners/store.ts'
import { tokenDigest } from '../../src/partners/tokens.ts'
import { testConfig, tmpDataDir } from '../helper.ts'

const issued = (config: ReturnType<typeof testConfig>) => {
  const store = new PartnerStore(controlPath(config.dataDir))
  try {
    return issueDemoToken(store, config)
  } finally {
    store.close()
  }
}

const digestOf = (dir: string) => {
  const store = new PartnerStore(controlPath(dir))
  try {
    return store.db.prepare("SELECT token_sha256 FROM partners WHERE slug = 'demo'").pluck().get() as string
  } finally {
    store.close()
  }
}

t.test('issued once, after creation; the token made with the partner is not the one that works', async (t) => {
  const dir = tmpDataDir(t)
  const config = testConfig(dir, { SANDBOX_SITE_COUNT: '20' })
  t.same(prepareDataDir(config).demoCreated, true)
  const created = digestOf(dir)
  // a start that stopped here (a port taken) and a later one: that one prepares again, then issues
  t.same(prepareDataDir(config), { created: [] }, 'no second demo partner')
  const token = issued(config)
  t.match(token, /^lsp_[A-Za-z0-9_-]{43}$/)
  t.equal(digestOf(dir), tokenDigest(token!), 'the token shown is the one stored')
  t.not(digestOf(dir), created)
  t.equal(issued(config), undefined, 'shown once: later starts show none')
  t.equal(digestOf(dir), tokenDigest(token!), 'and keep it working')
})

t.test('rotated by the operator before any start showed one: theirs stays', async (t) => {
  const dir = tmpDataDir(t)
  const config = testConfig(dir, { SANDBOX_SITE_COUNT: '20' })
  prepareDataDir(config)
  const store = new PartnerStore(controlPath(dir))
  const { token } = store.rotate('demo')
  store.close()
  t.equal(issued(config), undefined)
  t.equal(digestOf(dir), tokenDigest(token))
})

t.test('none in production, none with STATE_URL, none without a demo partner', async (t) => {
  const dir = tmpDataDir(t)
  prepareDataDir(testConfig(dir, { SANDBOX_SITE_COUNT: '20' }))
  const created = digestOf(dir)
  t.equal(issued(testConfig(dir, { NODE_ENV: 'production' })), undefined)
  t.equal(issued(testConfig(dir, { STATE_URL: 'redis://127.0.0.1:1/0' })), undefined)
  t.equal(digestOf(dir), created, 'left for a start that serves it')
  const other = tmpDataDir(t)
  t.same(prepareDataDir(testConfig(other, { SANDBOX_SITE_COUNT: '20', NODE_ENV: 'production' })).demoCreated, undefined)
  t.equal(issued(testConfig(other, { SANDBOX_SITE_COUNT: '20' })), undefined)
})
