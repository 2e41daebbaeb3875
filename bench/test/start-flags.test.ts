// npm start's node flags (package.json): --no-allocation-site-pretenuring keeps V8 from moving a
// literal's allocations to old space once its objects have survived young collections, which under
// load left some of the service's processes keeping each request's objects until a full
// collection (README, "Design notes").
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { startArgs } from '../start-command.ts'

const fixture = fileURLToPath(new URL('./fixtures/pretenuring.ts', import.meta.url))
const startFlags = startArgs(fileURLToPath(new URL('../../', import.meta.url))).filter((arg) => arg.startsWith('-'))

/** The fixture's line, run with these node flags beside the ones that set its scene. */
function run (flags: string[]): string {
  const scene = ['--import', 'tsx', '--allow-natives-syntax', '--expose-gc', '--max-semi-space-size=1']
  // tap's own preloads are not part of the service: env takes them out (tap adds them to any NODE_OPTIONS given)
  const child = spawnSync('env', ['-u', 'NODE_OPTIONS', process.execPath, ...flags, ...scene, fixture], {
    encoding: 'utf8'
  })
  if (child.status !== 0) throw new Error(`fixture failed: ${child.stderr}`)
  return child.stdout.trim()
}

t.test('with npm start\'s flags, a literal whose objects survived is still made young', async (t) => {
  t.equal(run(startFlags), 'made young after 40000 survivors: true')
})

t.test('without them V8 pretenures it (if this fails, this V8 no longer does, and the flag may go)', async (t) => {
  // V8 decides at a scavenge, when its timing allows: on a loaded machine a process may not decide.
  // Up to three processes; one must.
  const runs: string[] = []
  do runs.push(run([])); while (runs.at(-1) !== 'made young after 40000 survivors: false' && runs.length < 3)
  t.equal(runs.at(-1), 'made young after 40000 survivors: false', runs.join('; '))
})
