// Node 20's nextTick builds each tick object with a literal whose maps V8's feedback holds weakly: a collection after a
// quiet spell can free them, leaving every later nextTick on a slow path for good (see docs/performance.md).
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
  const symbol = (description: string) =>
    Object.getOwnPropertySymbols(resource).find((s) => s.description === description)
  const asyncId = symbol('async_id_symbol')
  const triggerAsyncId = symbol('trigger_async_id_symbol')
  if (asyncId === undefined || triggerAsyncId === undefined) return undefined
  // The same keys in the same order as Node's literal: the same transitions, hence the same maps.
  held = { [asyncId]: resource.asyncId(), [triggerAsyncId]: resource.triggerAsyncId(), callback: noop, args: undefined }
  return held
}
