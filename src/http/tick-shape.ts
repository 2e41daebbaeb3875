// Node 20's process.nextTick makes each tick object with a literal,
// { [async_id_symbol]: …, [trigger_async_id_symbol]: …, callback, args }, whose four properties V8
// defines through DefineKeyedOwnPropertyInLiteral; each site's feedback holds the map it saw, weakly.
// After a quiet spell, a full collection frees those maps if no tick object is alive; the next tick
// object gets new ones, V8 finds them unlike the cleared entries and marks three of the sites
// megamorphic for good. Every nextTick (about ten a request) then builds its object through the
// runtime: 4 to 5 times its cost (docs/performance.md, "Node's nextTick after a quiet spell").
// One object of the same shape, kept for the life of the process, keeps those maps alive.
import { AsyncResource } from 'node:async_hooks'

let held: object | undefined
const noop = () => {}

/**
 * Keeps an object with the tick objects' maps alive from now on (once per process) and returns it;
 * undefined if this Node's async resources do not carry the symbols (the hold is then not needed
 * or not possible, and the service runs without it).
 */
export function holdTickShape (): object | undefined {
  if (held !== undefined) return held
  // Node's literal first, so the maps and their field representations are Node's own.
  process.nextTick(noop)
  // Not an async_hooks hook to catch a real tick object: enabling one turns V8's promise hooks
  // on, which switches its inlined promise paths off for the life of the process.
  const resource = new AsyncResource('TickShape')
  const symbol = (description: string) => Object.getOwnPropertySymbols(resource).find((s) => s.description === description)
  const asyncId = symbol('async_id_symbol')
  const triggerAsyncId = symbol('trigger_async_id_symbol')
  if (asyncId === undefined || triggerAsyncId === undefined) return undefined
  // The same keys in the same order as Node's literal: the same transitions, hence the same maps.
  held = { [asyncId]: resource.asyncId(), [triggerAsyncId]: resource.triggerAsyncId(), callback: noop, args: undefined }
  return held
}
