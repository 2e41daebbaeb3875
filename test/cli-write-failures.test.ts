// Exports whose own file cannot be opened, as a real CLI process meets it (a folder that does not
// exist; a read-only or full file system fails the same way): exit 1 with the one-line reason.
import t from 'tap'
import { join } from 'node:path'
import { tmpDataDir } from './helper.ts'
import { admin, adminInProcess } from './run.ts'

const dir = tmpDataDir(t)
const env = { DATA_DIR: dir }

t.test('into a folder that does not exist: exit 1 with the reason', async (t) => {
  t.equal((await adminInProcess(['datasets', 'generate', '--dataset', 'sandbox', '--count', '100'], env)).status, 0)
  t.equal((await adminInProcess(['partners', 'create', '--name', 'Acme'], env)).status, 0)
  const missing = join(dir, 'no-such-folder')
  const exports = [
    ['datasets', 'export', '--dataset', 'sandbox', '--file', join(missing, 'sites.csv')],
    ['partners', 'export', '--file', join(missing, 'partners.json')]
  ]
  for (const args of exports) {
    const r = admin(args, env)
    t.equal(r.status, 1, args.join(' '))
    t.match(r.stderr, /^error: ENOENT: no such file or directory, open '[^\n]*no-such-folder[^\n]*'\n$/, 'one line')
  }
})
