// Node 20's tick objects' maps are held weakly: a collection after a quiet spell can free them, leaving nextTick on a
// slow path for good (docs/performance.md). One object of the same shape, kept for good, keeps them alive.
import { AsyncResource } from 'node:async_hooks'

let held: object | undefined
const noop = () => {}

/** Keeps an object with the tick objects' maps alive (once per process); undefined where Node lacks the symbols. */
export function holdTickShape (): object | undefined {
  if (held !== undefined) return held
  // Node's literal first, so the maps and their field representations are Node's own.
  process.nextTick(noop)
  // Not an async_hooks hook to catch a real tick object: one turns V8's promise hooks on, slowing promises for good.
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
