// The service learns of partner changes in control.db from partner_changes, which the partners
// table's triggers fill, whoever writes: other writes to the file (another instance's heartbeats and
// counter saves) cost no reload, and a change re-reads only the partners it touched. Real files, a
// second connection for the other process.
import Database from 'better-sqlite3'
import t from 'tap'
import { InstanceRecord } from '../../src/instances/instances.ts'
import { counterSaver, restoreCounters } from '../../src/limits/counters.ts'
import { LocalStore } from '../../src/limits/limiter.ts'
import { PartnerDirectory } from '../../src/partners/directory.ts'
import { PartnerStore, controlPath } from '../../src/partners/store.ts'
import { tokenDigest } from '../../src/partners/tokens.ts'
import { tmpDataDir } from '../helper.ts'

/** A control.db with `n` partners, the service's directory on it, and another connection (another process's). */
function setUp (t: { teardown (fn: () => unknown): void }, n: number) {
  const path = controlPath(tmpDataDir(t))
  const other = new PartnerStore(path)
  const tokens: string[] = []
  other.db.transaction(() => {
    for (let i = 0; i < n; i++) tokens.push(other.create({ name: `Partner ${i}`, slug: `p${i}` }).token)
  })()
  const service = new PartnerStore(path)
  const directory = new PartnerDirectory(service)
  t.teardown(() => { service.close(); other.close() })
  return { path, other, service, directory, tokens }
}

t.test('another instance\'s heartbeats and counter saves cost no reload (they move data_version)', async (t) => {
  const { other, service, directory } = setUp(t, 100)
  t.equal(directory.rowsRead, 100, 'every partner read once at start')
  const instance = new InstanceRecord(other.db)
  const counters = new LocalStore()
  restoreCounters(other.db, counters, Date.now())
  const save = counterSaver(other.db, counters, Date.now)
  const dataVersion = () => service.db.pragma('data_version', { simple: true }) as number
  for (let i = 0; i < 5; i++) {
    const seen = dataVersion()
    instance.heartbeat()
    counters.hit('ptn_000000000001', [{ name: 'minute', limit: 10, seconds: 60 }], Date.now())
    save()
    t.not(dataVersion(), seen, 'the other connection committed')
    t.equal(directory.refresh(), 0, 'no partner changed')
  }
  t.equal(directory.rowsRead, 100, 'no row read again')
})

t.test('a change re-reads that partner alone: update, rotation, slug, deletion, import', async (t) => {
  const { other, directory, tokens } = setUp(t, 100)
  other.update('p7', { status: 'suspended', maxResults: 7 })
  t.equal(directory.refresh(), 1)
  t.equal(directory.rowsRead, 101)
  t.same([directory.byToken(tokens[7])?.status, directory.byToken(tokens[7])?.maxResults], ['suspended', 7])
  t.equal(directory.refresh(), 0, 'seen once')

  const { token } = other.rotate('p8')
  t.equal(directory.refresh(), 1)
  t.equal(directory.byToken(tokens[8]), undefined, 'the old token is gone')
  t.equal(directory.byToken(token)?.slug, 'p8')

  other.db.prepare('UPDATE partners SET slug = ? WHERE slug = ?').run('renamed', 'p9') // by hand
  t.equal(directory.refresh(), 1)
  t.equal(directory.byToken(tokens[9])?.slug, 'renamed')

  other.db.prepare('DELETE FROM partners WHERE slug = ?').run('p10')
  t.equal(directory.refresh(), 1)
  t.equal(directory.byToken(tokens[10]), undefined, 'a deleted partner is gone')
  t.equal(directory.size, 99)

  // an import replaces p11 by a row of another id, and swaps the digests of p12 and p13
  const rows = other.exportRows()
  const row = (slug: string) => rows.find((r) => r.slug === slug)!
  const replaced = { ...row('p11'), id: 'ptn_00000000abcd', name: 'New' }
  other.importRows([replaced, { ...row('p12'), token_sha256: row('p13').token_sha256 },
    { ...row('p13'), token_sha256: row('p12').token_sha256 }])
  t.equal(directory.refresh(), 4, 'the old and new ids of p11, p12, p13')
  t.same([directory.byToken(tokens[11])?.id, directory.byToken(tokens[11])?.name], ['ptn_00000000abcd', 'New'])
  t.same([directory.byToken(tokens[12])?.slug, directory.byToken(tokens[13])?.slug], ['p13', 'p12'])
  t.equal(directory.size, 99)
  t.equal(directory.rowsRead, 106, 'one row per partner changed (the one deleted: none)')

  const created = other.create({ name: 'Late' })
  t.equal(directory.refresh(), 1)
  t.equal(directory.byToken(created.token)?.slug, 'late')
})

t.test('a change made on the service\'s own connection is seen too (the demo partner)', async (t) => {
  const { service, directory } = setUp(t, 3)
  const { token } = service.create({ name: 'Demo' })
  t.equal(directory.refresh(), 1)
  t.equal(directory.byToken(token)?.slug, 'demo')
})

t.test('partner_changes keeps one row per partner, its newest change', async (t) => {
  const { other, directory, path } = setUp(t, 3)
  for (let i = 1; i <= 5; i++) other.update('p1', { maxResults: i })
  other.update('p2', { maxResults: 9 })
  const db = new Database(path, { readonly: true })
  t.teardown(() => db.close())
  const ids = db.prepare('SELECT partner_id FROM partner_changes ORDER BY seq').pluck().all()
  const idOf = (slug: string) => other.get(slug).id
  t.same(ids, [idOf('p0'), idOf('p1'), idOf('p2')], 'p0 created, p1 and p2 changed since, in that order')
  t.equal(directory.refresh(), 2)
})

t.test('a control.db made before partner_changes: migrated by its first writer, then changes are seen', async (t) => {
  const path = controlPath(tmpDataDir(t))
  const old = new PartnerStore(path)
  const { token } = old.create({ name: 'Before' })
  // as an earlier build left the file: no partner_changes, no triggers
  old.db.exec('DROP TRIGGER partner_inserted; DROP TRIGGER partner_updated; DROP TRIGGER partner_deleted; ' +
    'DROP TABLE partner_changes')
  old.close()
  const reader = new PartnerStore(path, { readonly: true })
  t.same(reader.list().map((p) => p.slug), ['before'], 'a reader reads it as it is')
  reader.close()
  const raw = new Database(path)
  t.teardown(() => raw.close())
  t.equal(raw.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'partner_changes'").pluck().get(), 0,
    'and writes nothing')

  const service = new PartnerStore(path)
  t.teardown(() => service.close())
  const directory = new PartnerDirectory(service)
  t.equal(directory.byToken(token)?.slug, 'before')
  // a writer that knows nothing of partner_changes: a sqlite3 shell, an older CLI
  raw.prepare('UPDATE partners SET status = ? WHERE slug = ?').run('suspended', 'before')
  t.equal(directory.refresh(), 1)
  t.equal(directory.byToken(token)?.status, 'suspended')
  raw.prepare('UPDATE partners SET token_sha256 = ? WHERE slug = ?').run(tokenDigest('lsp_other'), 'before')
  t.equal(directory.refresh(), 1)
  t.same([directory.byToken(token), directory.byToken('lsp_other')?.slug], [undefined, 'before'])
})

t.test('a change log emptied by hand: everything is read again', async (t) => {
  const { other, directory } = setUp(t, 3)
  other.update('p0', { maxResults: 5 })
  t.equal(directory.refresh(), 1)
  other.db.exec("DELETE FROM partner_changes; DELETE FROM sqlite_sequence WHERE name = 'partner_changes'")
  other.update('p1', { maxResults: 6 })
  t.equal(directory.refresh(), 3, 'the mark went back: all three read')
  t.equal(directory.size, 3)
})
