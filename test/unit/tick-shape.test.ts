// holdTickShape (src/http/tick-shape.ts) keeps process.nextTick's object-literal sites monomorphic
// across a quiet spell with full collections; without it Node 20 leaves them megamorphic.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { closeSync, openSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { holdTickShape } from '../../src/http/tick-shape.ts'

const fixture = fileURLToPath(new URL('../fixtures/tick-shape.ts', import.meta.url))

/** The states V8 prints for nextTick's DefineKeyedOwnPropertyInLiteral feedback slots. */
function literalStates (dir: string, mode: 'hold' | 'none'): string[] {
  // V8 prints through C stdio, whose writes to a pipe left non-blocking by the parent are cut short: a file
  const out = join(dir, `${mode}.txt`)
  const fd = openSync(out, 'w')
  try {
    const run = spawnSync(process.execPath, ['--import', 'tsx', '--allow-natives-syntax', '--expose-gc', fixture, mode], {
      stdio: ['ignore', fd, 'pipe'],
      encoding: 'utf8',
      env: { ...process.env, NODE_OPTIONS: '' } // tap's own preloads are not part of the service
    })
    if (run.status !== 0) throw new Error(`fixture failed: ${run.stderr}`)
  } finally {
    closeSync(fd)
  }
  return [...readFileSync(out, 'utf8').matchAll(/DefineKeyedOwnPropertyInLiteral (\w+)/g)].map((m) => m[1])
}

t.test('held: the four property sites of the tick literal stay monomorphic after full collections', async (t) => {
  t.same(literalStates(t.testdir(), 'hold'), ['MONOMORPHIC', 'MONOMORPHIC', 'MONOMORPHIC', 'MONOMORPHIC'])
})

t.test('not held: Node 20 turns them megamorphic (if this fails, Node no longer needs the hold)', async (t) => {
  t.same(literalStates(t.testdir(), 'none'), ['MONOMORPHIC', 'MEGAMORPHIC', 'MEGAMORPHIC', 'MEGAMORPHIC'])
})

t.test('the held object is one tick object, the same on every call', async (t) => {
  const held = holdTickShape()
  t.equal(holdTickShape(), held)
  t.same(Object.getOwnPropertySymbols(held).map(String), ['Symbol(async_id_symbol)', 'Symbol(trigger_async_id_symbol)'])
  t.same(Object.keys(held), ['callback', 'args'])
})
