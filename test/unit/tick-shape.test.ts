// holdTickShape (src/http/tick-shape.ts) keeps process.nextTick's object-literal sites monomorphic
// across a quiet spell with full collections; without it Node 20 leaves them megamorphic.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { closeSync, openSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { holdTickShape } from '../../src/http/tick-shape.ts'
import { node } from '../child.ts'

const fixture = fileURLToPath(new URL('../fixtures/tick-shape.ts', import.meta.url))

/**
 * What V8 prints in the fixture's process: nextTick's literal sites, the held object's map, protectors switched off.
 */
function run (dir: string, mode: 'hold' | 'none') {
  // V8 prints through C stdio, whose writes to a pipe left non-blocking by the parent are cut short: a file
  const out = join(dir, `${mode}.txt`)
  const fd = openSync(out, 'w')
  try {
    const flags = ['--import', 'tsx', '--allow-natives-syntax', '--expose-gc', '--trace-protector-invalidation']
    const child = spawnSync(...node([...flags, fixture, mode]), {
      stdio: ['ignore', fd, 'pipe'],
      encoding: 'utf8'
    })
    if (child.status !== 0) throw new Error(`fixture failed: ${child.error?.message ?? child.stderr}`)
  } finally {
    closeSync(fd)
  }
  const text = readFileSync(out, 'utf8')
  return {
    sites: [...text.matchAll(/DefineKeyedOwnPropertyInLiteral (\w+)/g)].map((m) => m[1]),
    sameMap: /same map as a tick object: (\w+)/.exec(text)?.[1],
    protectors: [...text.matchAll(/Invalidating protector cell (\w+)/g)].map((m) => m[1])
  }
}

t.test('held: the four property sites of the tick literal stay monomorphic after full collections', async (t) => {
  const { sites, sameMap, protectors } = run(t.testdir(), 'hold')
  t.same(sites, ['MONOMORPHIC', 'MONOMORPHIC', 'MONOMORPHIC', 'MONOMORPHIC'])
  t.equal(sameMap, 'true', 'the held object has the map of the tick objects Node makes')
  t.notOk(protectors.includes('PromiseHook'), 'V8\'s promise fast paths stay on (no async_hooks hook was enabled)')
})

t.test('not held: Node 20 turns them megamorphic (if this fails, Node no longer needs the hold)', async (t) => {
  t.same(run(t.testdir(), 'none').sites, ['MONOMORPHIC', 'MEGAMORPHIC', 'MEGAMORPHIC', 'MEGAMORPHIC'])
})

t.test('the held object has a tick object\'s keys, and is the same on every call', async (t) => {
  const held = holdTickShape()
  if (held === undefined) return t.fail('this Node\'s async resources carry no async id symbols')
  t.equal(holdTickShape(), held)
  t.same(Object.getOwnPropertySymbols(held).map(String), ['Symbol(async_id_symbol)', 'Symbol(trigger_async_id_symbol)'])
  t.same(Object.keys(held), ['callback', 'args'])
})
