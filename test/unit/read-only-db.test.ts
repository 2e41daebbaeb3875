// openReadOnly: a WAL-mode file read where no index may be made (a directory this process may not
// write), from the file alone, and only when the file is the whole database.
import { copyFileSync, existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t from 'tap'
import { openReadOnly } from '../../src/setup/read-only-db.ts'
import { cannotRefuseWrites, tmpDataDir, writesRefused } from '../helper.ts'

const skip = cannotRefuseWrites(t)

/** A WAL-mode database of `n` rows, its writer left open (the caller closes it). */
function walDatabase (dir: string, n: number) {
  const path = join(dir, 'some.db')
  const db = new Database(path)
  db.pragma('journal_mode = WAL')
  db.exec('CREATE TABLE r (i INTEGER PRIMARY KEY, v TEXT)')
  const insert = db.prepare('INSERT INTO r (v) VALUES (?)')
  for (let i = 0; i < n; i++) insert.run(`row ${i}`)
  return { path, db }
}

t.test('while a writer holds the file, read through its index: its commits seen, nothing made', async (t) => {
  const dir = tmpDataDir(t)
  const { path, db } = walDatabase(dir, 5) // the five rows are in the -wal, not yet in the file
  t.teardown(() => db.close())
  const files = readdirSync(dir).sort()
  t.same(files, ['some.db', 'some.db-shm', 'some.db-wal'])
  const ro = openReadOnly(path)
  t.equal(ro.memory, false, 'the file itself')
  t.equal(ro.prepare('SELECT count(*) FROM r').pluck().get(), 5)
  db.prepare('INSERT INTO r (v) VALUES (?)').run('later')
  t.equal(ro.prepare('SELECT count(*) FROM r').pluck().get(), 6, 'and what the writer commits after')
  t.throws(() => ro.prepare('INSERT INTO r (v) VALUES (?)').run('x'), { code: 'SQLITE_READONLY' })
  ro.close()
  t.same(readdirSync(dir).sort(), files)
})

t.test('with no writer, the file read from a copy in memory: no index made beside it', async (t) => {
  const dir = tmpDataDir(t)
  const { path, db } = walDatabase(dir, 1000)
  db.close()
  t.same(readdirSync(dir), ['some.db'], 'no -wal, no -shm: the writer closed last')
  const bytes = readFileSync(path)
  t.equal(bytes[18], 2, 'a WAL-mode file')
  const read = () => {
    const ro = openReadOnly(path)
    t.equal(ro.memory, true, 'a copy in memory')
    t.same(ro.prepare('SELECT i, v FROM r WHERE i IN (1, 500, 1000) ORDER BY i').all(),
      [{ i: 1, v: 'row 0' }, { i: 500, v: 'row 499' }, { i: 1000, v: 'row 999' }])
    t.equal(ro.prepare('SELECT count(*) FROM r').pluck().get(), 1000)
    t.throws(() => ro.prepare('INSERT INTO r (v) VALUES (?)').run('x'), { code: 'SQLITE_READONLY' })
    ro.close()
    t.same(readFileSync(path), bytes, 'the file as it was')
    t.same(readdirSync(dir), ['some.db'], 'no file made')
  }
  read()
  t.test('in a directory it may not write', { skip }, async (t) => {
    writesRefused(t, [dir])
    t.throws(() => new Database(path, { readonly: true, fileMustExist: true }).pragma('schema_version'),
      'where SQLite alone refuses it')
    read()
  })
})

t.test('a -wal with commits beyond the file and no index: refused, not read without them', { skip }, async (t) => {
  const dir = tmpDataDir(t)
  const { path, db } = walDatabase(dir, 10) // the writer holds it: the ten rows are in the -wal
  const copy = tmpDataDir(t)
  copyFileSync(path, join(copy, 'some.db'))
  copyFileSync(`${path}-wal`, join(copy, 'some.db-wal'))
  db.close()
  writesRefused(t, [copy])
  t.throws(() => openReadOnly(join(copy, 'some.db')), { code: /^SQLITE_(CANTOPEN|READONLY)/ })
  t.notOk(existsSync(join(copy, 'some.db-shm')))
})

t.test('a file that is not a database', async (t) => {
  const dir = tmpDataDir(t)
  const path = join(dir, 'some.db')
  writeFileSync(path,
    'not a database, not at all: some text long enough to have a header of 100 bytes and more. '.repeat(3))
  t.throws(() => openReadOnly(path), { code: 'SQLITE_NOTADB' })
  t.throws(() => openReadOnly(join(dir, 'missing.db')), { code: 'SQLITE_CANTOPEN' })
})
