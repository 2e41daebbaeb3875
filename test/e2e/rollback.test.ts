// A real server while the operator imports and rolls back production: `datasets rollback --reload`
// serves the file put back at once, and a restart serves it too, though an index snapshot of the
// file it replaced lies beside it (INDEX_WORKER_MIN_MB=0: every file gets one, as large files do).
import { join } from 'node:path'
import t from 'tap'
import { writeSitesFile } from '../../src/sites/export.ts'
import { site, tmpDataDir } from '../helper.ts'
import { admin, adminAsync, startServer, type Server } from '../run.ts'

const dir = tmpDataDir(t)
const env = { DATA_DIR: dir, SANDBOX_SITE_COUNT: '500', PARTNER_REFRESH_MS: '200', INDEX_WORKER_MIN_MB: '0' }
const created = admin(
  ['partners', 'create', '--name', 'Live', '--tier', 'growth', '--environment', 'production', '--json'], env
)
if (created.status !== 0) throw new Error(created.stderr)
const token = JSON.parse(created.stdout).token as string
const unlimited = admin(['partners', 'update', 'live', '--limit-minute', 'unlimited', '--limit-hour', 'unlimited',
  '--limit-day', 'unlimited'], env)
if (unlimited.status !== 0) throw new Error(unlimited.stderr)

/** The same 200 sites near London, named after the file they come from. */
async function sitesFile (name: string) {
  const file = join(dir, `${name}.csv`)
  const sites = Array.from({ length: 200 },
    (_, i) => site(`p-${String(i).padStart(3, '0')}`, 4, 51.5 + i / 2000, -0.12, [], { name: `${name} ${i}` }))
  await writeSitesFile(file, 'csv', sites)
  return file
}

/** What the server serves from production: the name of the nearest site, and the dataset's built_at. */
async function served (server: Server) {
  const nearest = await (await fetch(`${server.url}/v1/sites/nearest?lat=51.5&lng=-0.12&api_key=${token}`)).json()
  const ready = await (await fetch(`${server.url}/readyz`)).json()
  return { name: nearest.name as string, builtAt: ready.datasets.production.built_at as string }
}

t.test('rollback --reload serves the file put back, and so does a restart', async (t) => {
  let server = await startServer(env)
  t.teardown(() => server.stop('SIGKILL'))
  const builtAt: Record<string, string> = {}
  for (const name of ['first', 'second']) {
    const r = await adminAsync(['datasets', 'import', '--dataset', 'production', '--file', await sitesFile(name),
      '--reload', '--json'], env)
    t.equal(r.status, 0, r.stderr)
    builtAt[name] = JSON.parse(r.stdout).built_at
  }
  const { first, second } = builtAt
  t.same(await served(server), { name: 'second 0', builtAt: second })

  const back = await adminAsync(['datasets', 'rollback', '--dataset', 'production', '--reload'], env)
  t.equal(back.status, 0, back.stderr)
  t.match(back.stdout,
    /\n[^\n]+: reloaded\n {2}sandbox +500 sites {2}built_at \S+\n {2}production +200 sites {2}built_at /)
  t.same(await served(server), { name: 'first 0', builtAt: first }, 'served at once')

  t.equal(await server.stop('SIGTERM'), 0)
  server = await startServer(env)
  t.same(await served(server), { name: 'first 0', builtAt: first }, 'and after a restart')

  // the rollback undone, then a restart before any reload: the snapshot beside it is the first file's
  const undo = admin(['datasets', 'rollback', '--dataset', 'production'], env)
  t.equal(undo.status, 0, undo.stderr)
  t.same(await served(server), { name: 'first 0', builtAt: first }, 'not served before a reload')
  t.equal(await server.stop('SIGTERM'), 0)
  server = await startServer(env)
  t.same(await served(server), { name: 'second 0', builtAt: second }, 'the restart serves the file on disk')
  t.match(server.output(), /"dataset":"production","reason":"made from another version of the dataset file/,
    "the first file's snapshot was not taken for it")
  t.equal(await server.stop('SIGTERM'), 0)
})
