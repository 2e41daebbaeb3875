// The connection caps against the open-file limit; the limit as the process has it.
import { spawnSync } from 'node:child_process'
import t from 'tap'
import { FILES_RESERVED, connectionCaps, openFileLimit } from '../../src/http/connections.ts'
import { REPO_ROOT } from '../helper.ts'

t.test('openFileLimit is the limit the process has: Node raises its soft limit to the hard one', async (t) => {
  const hard = spawnSync('sh', ['-c', 'ulimit -Hn'], { encoding: 'utf8' }).stdout.trim()
  t.equal(openFileLimit(), hard === 'unlimited' ? undefined : Number(hard))
  const lowered = spawnSync('prlimit', ['--nofile=512:4096', 'env', '-u', 'NODE_OPTIONS', process.execPath,
    '--import', 'tsx', '-e',
    'import("./src/http/connections.ts").then((m) => process.stdout.write(String(m.openFileLimit())))'], {
    cwd: REPO_ROOT, encoding: 'utf8'
  })
  t.equal(lowered.stdout, '4096', lowered.stderr)
})

t.test('the caps are kept FILES_RESERVED under the open-file limit; the cap per address in proportion', async (t) => {
  t.equal(FILES_RESERVED, 256)
  const configured = { maxConnections: 10000, maxPerAddress: 1000 }
  t.same(connectionCaps(configured, 20000), configured, 'room enough: unchanged')
  t.same(connectionCaps(configured, 10256), configured, 'exactly room enough')
  t.same(connectionCaps(configured, undefined), configured, 'no limit known: unchanged')
  t.same(connectionCaps(configured, 1024), { maxConnections: 768, maxPerAddress: 77 })
  t.same(connectionCaps({ maxConnections: 10000, maxPerAddress: 0 }, 1024), { maxConnections: 768, maxPerAddress: 0 },
    'no cap per address stays none')
  t.same(connectionCaps({ maxConnections: 10000, maxPerAddress: 10000 }, 1024), {
    maxConnections: 768, maxPerAddress: 768
  })
  t.same(connectionCaps(configured, 100), { maxConnections: 1, maxPerAddress: 1 },
    'a limit under the reserve leaves one connection')
})
