// replaceFile: the new file whole or the old one, and the temporary files of dead writers gone.
import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { replaceFile } from '../../src/setup/replace-file.ts'
import { tmpDataDir } from '../helper.ts'

t.test('a file is replaced whole; a dead writer\'s temporary file beside it goes, a live one\'s stays', async (t) => {
  const dir = tmpDataDir(t)
  const path = join(dir, 'partners.json')
  writeFileSync(path, 'old')
  const dead = spawnSync('true').pid! // exited: its pid is free
  const deadTemp = `.partners.json.${dead}.${Date.now() - 5000}.tmp` // an export killed half-way
  const liveTemp = `.partners.json.${process.pid}.${Date.now() - 1000}.tmp` // another writer of this process, under way
  const other = `.other.json.${dead}.${Date.now()}.tmp` // another file's: its own writer removes it
  for (const name of [deadTemp, liveTemp, other]) writeFileSync(join(dir, name), 'x')
  const result = await replaceFile(path, 0o600, async (out) => { out.write('new'); return 7 })
  t.equal(result, 7)
  t.equal(readFileSync(path, 'utf8'), 'new')
  t.equal(statSync(path).mode & 0o777, 0o600)
  t.same(readdirSync(dir).sort(), [liveTemp, other, 'partners.json'].sort())
})

t.test('a write that fails leaves the old file and no temporary file', async (t) => {
  const dir = tmpDataDir(t)
  const path = join(dir, 'sites.csv')
  writeFileSync(path, 'old')
  const failing = replaceFile(path, 0o644, async (out) => {
    out.write('half')
    throw new Error('the dataset cannot be read')
  })
  await t.rejects(failing, { message: 'the dataset cannot be read' })
  t.equal(readFileSync(path, 'utf8'), 'old')
  t.same(readdirSync(dir), ['sites.csv'])
})
