// The operator CLI answers at once: each command, run as operators run it (npm run admin), costs
// at most 5 times the CPU (user + system) of `npm run env`, npm's own start-up, measured beside it,
// on a control.db of 1,000 partners.
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import t from 'tap'
import { PartnerStore, controlPath } from '../../src/partners/store.ts'
import { REPO_ROOT, tmpDataDir } from '../helper.ts'
import { baseEnv } from '../run.ts'

const BUDGET = 5
const ROUNDS = 3

const dir = tmpDataDir(t)
const store = new PartnerStore(controlPath(dir))
for (let i = 1; i <= 1000; i++) store.create({ name: `Partner ${i}`, tier: i % 2 ? 'growth' : 'scale' })
store.close()
const env = { ...baseEnv({ DATA_DIR: dir }), LC_ALL: 'C' }
// as an operator's shell runs it: tap puts its own preload into each child's NODE_OPTIONS, whatever
// the environment given, and every node process would load it
const script = 'unset NODE_OPTIONS; "$@" > /dev/null || exit 99; times'

/** CPU seconds of `npm run -s <args>` and every process it started, from the shell's `times`. */
function cpu (args: string[]): number {
  const r = spawnSync('bash', ['-c', script, 'bash', 'npm', 'run', '-s', ...args],
    { cwd: REPO_ROOT, env, encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`npm run ${args.join(' ')} failed: ${r.stderr}`)
  // second line: the children's user and system time, as `0m0.412s 0m0.067s`
  const children = r.stdout.trim().split('\n')[1]
  return [...children.matchAll(/(\d+)m([\d.]+)s/g)].reduce((sum, m) => sum + Number(m[1]) * 60 + Number(m[2]), 0)
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

const commands = [
  ['--help'],
  ['partners', 'list'],
  ['partners', 'show', 'partner-500', '--json'],
  ['partners', 'usage', 'partner-500'],
  ['partners', 'report'],
  ['partners', 'export', '--file', join(dir, 'partners.json')],
  ['partners', 'rotate', 'partner-1'],
  ['datasets', 'info']
]

t.test(`each command within ${BUDGET} times npm run env`, async (t) => {
  const ratios = commands.map(() => [] as number[])
  const seconds = commands.map(() => [] as number[])
  for (let round = 0; round < ROUNDS; round++) {
    commands.forEach((command, i) => {
      const npm = cpu(['env'])
      const used = cpu(['admin', '--', ...command])
      seconds[i].push(used)
      ratios[i].push(used / npm)
    })
  }
  commands.forEach((command, i) => {
    const ratio = median(ratios[i])
    t.ok(ratio <= BUDGET, `${command.join(' ')}: ${ratio.toFixed(1)} times npm run env ` +
      `(${seconds[i].map((s) => s.toFixed(2)).join(', ')} s)`)
  })
})
