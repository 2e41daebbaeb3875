// Node 20's process.nextTick makes each tick object with a literal whose keys after the first are
// defined by V8's DefineKeyedOwnPropertyInLiteral, and that site's feedback holds the object's map
// weakly. After a quiet spell, a full collection frees the tick objects' maps (nothing else holds
// them); the next tick object gets new maps, V8 compares them with the cleared entry and marks the
// sites megamorphic for good. From then on every nextTick (about ten per request) defines its
// properties through the runtime: 4 to 5 times its cost (docs/performance.md, "Node's nextTick").
// One tick object kept for the life of the process keeps those maps alive.
import { createHook } from 'node:async_hooks'

let held: object | undefined

/** Keeps one of Node's tick objects alive from now on (once per process) and returns it. */
export function holdTickShape (): object {
  if (held === undefined) {
    const hook = createHook({
      init (_asyncId, type, _triggerAsyncId, resource) {
        if (type === 'TickObject') held ??= resource
      }
    })
    hook.enable()
    try {
      process.nextTick(() => {})
    } finally {
      hook.disable()
    }
    if (held === undefined) throw new Error('process.nextTick made no TickObject')
  }
  return held
}
