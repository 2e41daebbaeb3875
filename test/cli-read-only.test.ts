// The CLI's read commands where DATA_DIR may only be read (an operator who is not the service's
// user, a read-only mount): real CLI processes answer as they do where it may be written, and
// leave no file behind. The directory is made to refuse this process (writesRefused).
import { existsSync, readdirSync } from 'node:fs'
import t from 'tap'
import { buildApp } from '../src/app.ts'
import { PartnerStore, controlPath } from '../src/partners/store.ts'
import { UNLIMITED, cannotRefuseWrites, site, testConfig, tmpDataDir, writeFixture, writesRefused } from './helper.ts'
import { admin, adminInProcess, type CliResult } from './run.ts'

const skip = cannotRefuseWrites(t)

const dir = tmpDataDir(t, 'lsp-ro-')
const env = { DATA_DIR: dir }
const json = (r: CliResult) => {
  if (r.status !== 0) throw new Error(`exit ${r.status}: ${r.stderr}`)
  return JSON.parse(r.stdout)
}
/** The usage commands' answers without what moves with the clock. */
const steady = (value: unknown): unknown => JSON.parse(JSON.stringify(value, (key, v) =>
  ['timestamp', 'resets_at', 'resets_in_seconds', 'generated_at'].includes(key) ? undefined : v))
const READS = [
  ['partners', 'list', '--json'],
  ['partners', 'show', 'acme', '--json'],
  ['partners', 'export'],
  ['partners', 'usage', 'acme', '--json'],
  ['partners', 'report', '--json']
]

t.test('every read command answers from a DATA_DIR it may not write, as from one it may', { skip }, async (t) => {
  const tokens = writeFixture(dir, {
    sandbox: [site('s-1', 4, 51.5, -0.12), site('s-2', 7, 51.51, -0.12)],
    partners: [
      { name: 'Acme', slug: 'acme', tier: 'growth', limitOverrides: UNLIMITED },
      { name: 'Heli', slug: 'heli', status: 'suspended' }
    ]
  })
  // usage to read: counters, telemetry and history, saved by the service when it closes
  const app = await buildApp(testConfig(dir))
  for (let i = 0; i < 3; i++) {
    const res = await app.inject({
      url: `/v1/sites?lat=51.5&lng=-0.12&radius=${10 + i}`, headers: { authorization: `Bearer ${tokens.acme}` }
    })
    t.equal(res.statusCode, 200)
  }
  await app.close()

  const expected = await Promise.all(READS.map(async (args) => (await adminInProcess(args, env)).stdout))
  const usage = JSON.parse(expected[3])
  t.equal(usage.windows.day.used, 3, 'there is usage to read')
  t.equal(usage.telemetry.events, 3)
  t.same(readdirSync(dir).sort(), ['control.db', 'production.db', 'sandbox.db'],
    'no writer: no -wal, and the reads made no -shm')

  const files = readdirSync(dir).sort()
  writesRefused(t, [dir])
  for (const [i, args] of READS.entries()) {
    const r = admin(args, env)
    t.equal(r.status, 0, `${args.join(' ')}: ${r.stderr}`)
    t.equal(r.stderr, '')
    if (i < 3) t.equal(r.stdout, expected[i], `${args.join(' ')}: the same answer`)
    else t.same(steady(JSON.parse(r.stdout)), steady(JSON.parse(expected[i])), `${args.join(' ')}: the same answer`)
  }
  t.same(readdirSync(dir).sort(), files, 'no file made')

  const refused = admin(['partners', 'create', '--name', 'New'], env)
  t.equal(refused.status, 1, 'a write is refused')
  t.match(refused.stderr, /^error: [^\n]+\n$/, 'with a one-line reason')
})

t.test('while a writer holds control.db, the reads see what it committed', { skip }, async (t) => {
  // as the running service does: its -wal holds commits the file does not have yet
  const writer = new PartnerStore(controlPath(dir))
  t.teardown(() => writer.close())
  writer.create({ name: 'Late', slug: 'late' })
  t.ok(existsSync(`${controlPath(dir)}-wal`) && existsSync(`${controlPath(dir)}-shm`))
  writesRefused(t, [dir, `${controlPath(dir)}-wal`, `${controlPath(dir)}-shm`])
  t.same(json(admin(['partners', 'list', '--json'], env)).map((p: { slug: string }) => p.slug),
    ['acme', 'heli', 'late'])
  t.equal(json(admin(['partners', 'show', 'late', '--json'], env)).name, 'Late')
})

t.test('without control.db: no partner, and no file made', async (t) => {
  const empty = tmpDataDir(t, 'lsp-ro-empty-')
  const r = await adminInProcess(['partners', 'list'], { DATA_DIR: empty })
  t.equal(r.status, 0, r.stderr)
  t.equal(r.stdout, 'no partners\n')
  const shown = await adminInProcess(['partners', 'show', 'acme'], { DATA_DIR: empty })
  t.equal(shown.status, 1)
  t.equal(shown.stderr, "error: no partner with slug 'acme'\n")
  t.same(readdirSync(empty), [])
})
