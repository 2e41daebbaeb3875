// Operators at once on one dataset: real `datasets import`, `generate` and `rollback` processes
// started together, round after round. Each succeeds or fails with its one-line reason, and no
// file is lost: the current file and the kept versions are always the starting files and those
// of the commands that succeeded, each once (DATASET_KEEP is high enough that none is pruned).
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { writeSitesFile } from '../../src/sites/export.ts'
import { generateSites } from '../../src/sites/generator.ts'
import { site, tmpDataDir } from '../helper.ts'
import { adminAsync, adminInProcess, type CliResult } from '../run.ts'

// rounds of five real processes on a machine shared with other test runs
t.setTimeout(600_000)

const ROUNDS = 3
const dir = tmpDataDir(t)
const env = { DATA_DIR: dir, DATASET_KEEP: '100' }
const production = join(dir, 'production.db')
const REPLACED = 'was replaced by another command while this import ran; nothing written ' +
  '(run it again to compare with the file now there)'

/** The built_at of the current file and of every kept version. */
async function files (): Promise<string[]> {
  const r = await adminInProcess(['datasets', 'versions', '--dataset', 'production', '--json'], env)
  if (r.status !== 0) throw new Error(r.stderr)
  return JSON.parse(r.stdout).map((v: { built_at: string }) => v.built_at)
}

t.test('imports, generates and rollbacks at once: each done whole or refused, no file lost', async (t) => {
  // 20,000 sites with the same ids in every file, so that no import removes any
  const ids = [...generateSites({ count: 20_000, seed: 'ids', prefix: 'prd' })]
  const csv = async (name: string) => {
    const file = join(dir, `${name}.csv`)
    await writeSitesFile(file, 'csv', ids.map((s, i) => site(s.id, 4, s.latitude, s.longitude, [], {
      name: `${name} ${i}`
    })))
    return file
  }
  const sources = await Promise.all(['a', 'b', 'c'].map(csv))
  for (const args of [['generate', '--count', '20000'], ['import', '--file', sources[0]]]) {
    const r = await adminInProcess(['datasets', ...args, '--dataset', 'production'], env)
    t.equal(r.status, 0, r.stderr)
  }
  let expected = new Set(await files())
  t.equal(expected.size, 2)
  const outcomes = new Map<string, number>()

  for (let round = 1; round <= ROUNDS; round++) {
    const commands = [
      ...sources.map((file) => ['import', '--file', file]),
      ['generate', '--count', '20000', '--seed', `round-${round}`],
      ['rollback']
    ]
    const results: CliResult[] = await Promise.all(commands.map((args) =>
      adminAsync(['datasets', ...args, '--dataset', 'production', '--json'], env)))
    for (const [i, r] of results.entries()) {
      const command = commands[i][0]
      const outcome = r.status === 0 ? 'done' : 'refused'
      outcomes.set(`${command} ${outcome}`, (outcomes.get(`${command} ${outcome}`) ?? 0) + 1)
      if (r.status === 0) {
        t.equal(r.stderr, '', `round ${round}: ${command}`)
        if (command !== 'rollback') expected.add(JSON.parse(r.stdout).built_at)
        continue
      }
      t.equal(r.status, 1, `round ${round}: ${command} exits 1 when refused`)
      const reason = command === 'rollback'
        ? new RegExp(`^error: ${production} or version \\S+ changed while the rollback ran \\(another import, ` +
          'generate or rollback\\): nothing changed; look at datasets versions and run it again\n$')
        : `error: ${command} refused: ${production} ${REPLACED.replace('import', command)}\n`
      if (typeof reason === 'string') t.equal(r.stderr, reason, `round ${round}: ${command}, its reason`)
      else t.match(r.stderr, reason, `round ${round}: ${command}, its reason`)
    }
    t.ok(results.some((r) => r.status === 0), `round ${round}: at least one command done`)
    const now = await files()
    t.same([...now].sort(), [...expected].sort(), `round ${round}: every file there once, none lost`)
    expected = new Set(now)
    t.same(readdirSync(dir).filter((f) => f.startsWith('.')), [], `round ${round}: no temporary file left`)
    t.same(readdirSync(join(dir, 'versions')).filter((f) => !f.endsWith('.db')), ['production.lock'])
  }
  t.comment(`outcomes: ${JSON.stringify(Object.fromEntries(outcomes))}`)
})
