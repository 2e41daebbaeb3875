// The token check cannot be timed into revealing a token: a token is looked up by its SHA-256
// digest in a hash table, so how much of a guess matches a real token decides nothing in the
// lookup (a guess one character off has a digest unrelated to the real one). Shown here by what
// the lookup does, not by timing it: every key it reads is the digest of the whole guess, and no
// token is held anywhere (only digests, in control.db and in memory).
import t from 'tap'
import Database from 'better-sqlite3'
import { PartnerDirectory } from '../../src/partners/directory.ts'
import { PartnerStore, controlPath } from '../../src/partners/store.ts'
import { TOKEN_PREFIX, newToken, tokenDigest } from '../../src/partners/tokens.ts'
import { tmpDataDir } from '../helper.ts'

const dir = tmpDataDir(t)
const store = new PartnerStore(controlPath(dir))
t.teardown(() => store.close())
const tokens = ['one', 'two', 'three'].map((name) => store.create({ name }).token)
const directory = new PartnerDirectory(store)

t.test('tokens: 256 random bits, prefixed', async (t) => {
  const many = new Set(Array.from({ length: 1000 }, newToken))
  t.equal(many.size, 1000)
  for (const token of many) t.match(token, /^lsp_[A-Za-z0-9_-]{43}$/)
})

t.test('lookups read the digest of the whole guess and nothing else', async (t) => {
  const table = (directory as unknown as { byDigest: Map<string, unknown> }).byDigest
  t.same([...table.keys()].sort(), tokens.map(tokenDigest).sort(), 'the table is keyed by digests')
  const read: string[] = []
  const get = table.get.bind(table)
  table.get = (key: string) => { read.push(key); return get(key) }
  const real = tokens[0]
  const guesses: string[] = []
  // guesses matching the real token on 0, 1, 2, ... all but one of its characters
  for (let n = 0; n < real.length; n++) {
    const other = real[n] === 'A' ? 'B' : 'A'
    guesses.push(real.slice(0, n) + other + real.slice(n + 1))
  }
  guesses.push(real.slice(0, -1), `${real}x`, '', TOKEN_PREFIX)
  for (const guess of guesses) t.equal(directory.byToken(guess), undefined)
  t.same(read, guesses.map(tokenDigest), 'one read a lookup, of the digest of the whole guess')
  t.ok(read.every((key) => /^[0-9a-f]{64}$/.test(key)))
  t.equal(directory.byToken(real)?.slug, 'one', 'the real token is found')
  table.get = get
})

t.test('no token is stored: control.db has digests only', async (t) => {
  const db = new Database(controlPath(dir), { readonly: true })
  const dump = JSON.stringify(db.prepare('SELECT * FROM partners').all())
  db.close()
  for (const token of tokens) {
    t.notOk(dump.includes(token.slice(TOKEN_PREFIX.length, TOKEN_PREFIX.length + 12)), 'no part of the token')
    t.ok(dump.includes(tokenDigest(token)), 'its digest')
  }
})
