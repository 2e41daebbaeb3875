// Fastify's HEAD hook goes back to the end of a HEAD route's onSend; other routes are left alone.
import t from 'tap'
import type { RouteOptions } from 'fastify'
import { dropsHeadBody, headBodyDroppedLast } from '../../src/http/head-route.ts'

function headRouteOnSendHandler () {}
function compressHook () {}
function ownHook () {}

t.test('Fastify\'s hook is moved after hooks added since; nothing else moves', async (t) => {
  const route = { method: 'HEAD', onSend: [ownHook, headRouteOnSendHandler, compressHook] } as unknown as RouteOptions
  headBodyDroppedLast(route)
  t.same(route.onSend, [ownHook, compressHook, headRouteOnSendHandler])
  headBodyDroppedLast(route)
  t.same(route.onSend, [ownHook, compressHook, headRouteOnSendHandler], 'already last: unchanged')
  const get = { method: 'GET', onSend: [headRouteOnSendHandler, compressHook] } as unknown as RouteOptions
  headBodyDroppedLast(get)
  t.same(get.onSend, [headRouteOnSendHandler, compressHook], 'a GET route is left as it is')
  const own = { method: 'HEAD', onSend: [ownHook, compressHook] } as unknown as RouteOptions
  headBodyDroppedLast(own)
  t.same(own.onSend, [ownHook, compressHook], 'a HEAD route of its own (no Fastify hook) is left as it is')
  t.same([dropsHeadBody(headRouteOnSendHandler), dropsHeadBody(compressHook), dropsHeadBody(undefined)], [true, false, false])
})
