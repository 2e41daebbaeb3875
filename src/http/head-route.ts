// Fastify answers HEAD on a GET route with the GET's handler and hooks, and ends the onSend hooks
// of that HEAD route with its own, which measures the body and drops it. A hook added after it
// (by a plugin's onRoute hook) sees no body: the HEAD then describes another answer than the GET's.
import type { RouteOptions } from 'fastify'

/** Whether an onSend hook is the one Fastify ends a HEAD route's with. */
export const dropsHeadBody = (hook: unknown): boolean => (hook as { name?: string } | undefined)?.name === 'headRouteOnSendHandler'

/** An onRoute hook: Fastify's hook goes back to the end of a HEAD route's onSend, after hooks added since. */
export function headBodyDroppedLast (route: RouteOptions): void {
  if (route.method !== 'HEAD' || !Array.isArray(route.onSend)) return
  const at = route.onSend.findIndex(dropsHeadBody)
  if (at < 0 || at === route.onSend.length - 1) return
  const hooks = [...route.onSend]
  hooks.push(...hooks.splice(at, 1))
  route.onSend = hooks
}
