// partners export / import with the CLI (its main(), in this process: the files and stores are
// the subject, not the process): a version 1 file an earlier build wrote imports and shows as that
// build showed it; the version 2 export of it imports into an empty control.db and into Redis, and
// every partner then shows exactly as before; a bad file writes nothing, and in either store
// neither does a file whose id or token digest another partner already has there.
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { Redis } from 'ioredis'
import t, { type Test } from 'tap'
import { REPO_ROOT, tmpDataDir } from './helper.ts'
import { adminInProcess } from './run.ts'
import { skippedWithoutRedis, startRedis } from './redis.ts'

const V1_FILE = join(REPO_ROOT, 'test/fixtures/partners-v1.json')
/** `partners show --json` of each partner of that file, as the build that wrote it printed them. */
const V1_SHOWN = JSON.parse(readFileSync(join(REPO_ROOT, 'test/fixtures/partners-v1-show.json'), 'utf8')) as
  { slug: string }[]

const ok = async (t: Test, args: string[], env: Record<string, string>) => {
  const r = await adminInProcess(args, env)
  t.equal(r.status, 0, `${args.join(' ')}: ${r.stderr}`)
  return r.stdout
}
const listed = async (t: Test, env: Record<string, string>) =>
  JSON.parse(await ok(t, ['partners', 'list', '--json'], env))

t.test('version 1 in, version 2 out, into control.db and Redis: show --json the same everywhere', async (t) => {
  if (skippedWithoutRedis(t)) return
  const first = { DATA_DIR: tmpDataDir(t), STATE_URL: '' }
  t.same(JSON.parse(await ok(t, ['partners', 'import', '--file', V1_FILE, '--json'], first)),
    { created: 3, replaced: 0 })
  t.same(await listed(t, first), V1_SHOWN, 'a version 1 file shows as the build that wrote it showed it')
  t.same(JSON.parse(await ok(t, ['partners', 'show', 'acme', '--json'], first)), V1_SHOWN[0])

  const file = join(first.DATA_DIR, 'partners.json')
  t.equal((await ok(t, ['partners', 'export', '--file', file], first)).trim(), `exported 3 partners to ${file}`)
  const document = JSON.parse(readFileSync(file, 'utf8'))
  t.same([document.format, document.version], ['lsp-partners', 2])
  const v1 = JSON.parse(readFileSync(V1_FILE, 'utf8')).partners as { token_sha256: string }[]
  t.same(document.partners, V1_SHOWN.map((shown, i) => ({ ...shown, token_sha256: v1[i].token_sha256 })),
    'each entry: show --json and the digest')
  t.same(JSON.parse(await ok(t, ['partners', 'export', '--json'], first)), document, 'the same document on stdout')

  const empty = { DATA_DIR: tmpDataDir(t), STATE_URL: '' }
  t.same(JSON.parse(await ok(t, ['partners', 'import', '--file', file, '--json'], empty)),
    { created: 3, replaced: 0 })
  t.same(await listed(t, empty), V1_SHOWN, 'into an empty control.db')

  const redis = await startRedis(t)
  const shared = { DATA_DIR: tmpDataDir(t), STATE_URL: redis.url }
  t.same(JSON.parse(await ok(t, ['partners', 'import', '--file', file, '--json'], shared)),
    { created: 3, replaced: 0 })
  t.same(await listed(t, shared), V1_SHOWN, 'into Redis')
  t.same(JSON.parse(await ok(t, ['partners', 'export', '--json'], shared)), document,
    'and Redis exports the same document')
  t.same(JSON.parse(await ok(t, ['partners', 'import', '--file', file, '--json'], shared)), { created: 0, replaced: 3 },
    'importing again replaces')
  t.same(await listed(t, shared), V1_SHOWN)
})

t.test('a bad entry: exit 1, the partner and the field named, nothing written', async (t) => {
  const env = { DATA_DIR: tmpDataDir(t), STATE_URL: '' }
  const document = JSON.parse(readFileSync(V1_FILE, 'utf8'))
  document.partners[2].max_results = 0 // the last one: the first two would be written if rows were checked one by one
  const file = join(env.DATA_DIR, 'bad.json')
  writeFileSync(file, JSON.stringify(document))
  const r = await adminInProcess(['partners', 'import', '--file', file], env)
  t.equal(r.status, 1)
  t.equal(r.stderr, 'error: partner "pending-co": max_results must be a whole number from 1 to 10000\n')
  t.same(await listed(t, env), [], 'no partner written')
  writeFileSync(file, JSON.stringify({ ...document, version: 3 }))
  const newer = await adminInProcess(['partners', 'import', '--file', file], env)
  t.equal(newer.status, 1)
  t.equal(newer.stderr,
    `error: ${file} is a partners export of version 3, which this build cannot read (it reads versions 1 and 2)\n`)
})

t.test('into Redis and control.db: an id or token digest another partner keeps there refuses the whole file, ' +
  'nothing written', async (t) => {
  if (skippedWithoutRedis(t)) return
  const redis = await startRedis(t)
  const client = new Redis(redis.url)
  t.teardown(() => client.disconnect())
  const shared = { DATA_DIR: tmpDataDir(t), STATE_URL: redis.url }
  const control = { DATA_DIR: tmpDataDir(t), STATE_URL: '' }
  const [acme, demo, pending] = JSON.parse(readFileSync(V1_FILE, 'utf8')).partners as Record<string, unknown>[]
  const file = join(shared.DATA_DIR, 'partners.json')
  const importing = async (partners: Record<string, unknown>[], env: Record<string, string>) => {
    writeFileSync(file, JSON.stringify({ format: 'lsp-partners', version: 1, partners }))
    return await adminInProcess(['partners', 'import', '--file', file], env)
  }
  for (const env of [shared, control]) t.equal((await importing([acme, demo], env)).status, 0)
  const stored = async () => [
    await client.hgetall('lsp:partners'),
    await client.hgetall('lsp:partner-digests'),
    await client.get('lsp:partners:version')
  ]
  const before = await stored()

  const cases: [string, Record<string, unknown>[], string][] = [
    ['a new partner with acme\'s id (two partners, one rate-limit log)', [{ ...pending, id: acme.id }],
      'error: partner "pending-co": its id is also partner "acme"\'s, in the shared state\n'],
    ['a new partner, then one with another partner\'s token digest: the first is not written either',
      [pending, { ...acme, token_sha256: demo.token_sha256 }],
      'error: partner "acme": its token_sha256 is also partner "demo"\'s, in the shared state\n']
  ]
  for (const [name, partners, error] of cases) {
    const r = await importing(partners, shared)
    t.same([r.status, r.stderr, r.stdout], [1, error, ''], name)
    t.same(await stored(), before, `${name}: nothing written`)
    const intoControl = await importing(partners, control)
    t.same([intoControl.status, intoControl.stderr, intoControl.stdout],
      [1, error.replace('in the shared state', 'in control.db'), ''], `${name}: control.db refuses it too`)
    t.same(await listed(t, control), await listed(t, shared), `${name}: nothing written there either`)
  }
  t.same((await listed(t, shared)).map((p: { slug: string }) => p.slug), ['acme', 'demo'])

  // the file replaces both: after it no two partners share a digest, so both stores take it
  const swapped = [{ ...acme, token_sha256: demo.token_sha256 }, { ...demo, token_sha256: acme.token_sha256 }]
  const r = await importing(swapped, shared)
  t.same([r.status, r.stdout], [0, 'imported 2 partners: 0 created, 2 replaced\n'], r.stderr)
  t.same(await client.hgetall('lsp:partner-digests'),
    { [acme.token_sha256 as string]: 'demo', [demo.token_sha256 as string]: 'acme' }, 'tokens swapped, the index right')
  const intoControl = await importing(swapped, control)
  t.same([intoControl.status, intoControl.stdout], [0, 'imported 2 partners: 0 created, 2 replaced\n'],
    intoControl.stderr)
  const db = new Database(join(control.DATA_DIR, 'control.db'), { readonly: true })
  t.same(db.prepare('SELECT slug, token_sha256 FROM partners ORDER BY slug').all(), [
    { slug: 'acme', token_sha256: demo.token_sha256 }, { slug: 'demo', token_sha256: acme.token_sha256 }
  ], 'control.db swapped them too')
  db.close()
})
