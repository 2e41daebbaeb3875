// Answers sent as bytes made once (records' fragments, the cache's entries): reply.sendAnswer
// sends them, and gives a pooled buffer's reference back once the response is done (or failed).
import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyReply } from 'fastify'
import { answers } from '../src/answers/pool.ts'
import { JSON_TYPE } from '../src/answers/records.ts'

declare module 'fastify' {
  interface FastifyReply {
    /** Sends serialised JSON (or GeoJSON, by `type`) as it is. */
    sendAnswer (body: Buffer, type?: string): void
  }
  interface FastifyRequest {
    /** the answer's pooled buffer, given back in onResponse */
    pooledBody: Buffer | undefined
  }
}

async function answersPlugin (app: FastifyInstance) {
  app.decorateRequest('pooledBody', undefined)
  app.decorateReply('sendAnswer', function (this: FastifyReply, body: Buffer, type = JSON_TYPE) {
    if (answers.holds(body)) this.request.pooledBody = body
    this.type(type).send(body)
  })
  app.addHook('onResponse', (request, _reply, done) => {
    if (request.pooledBody !== undefined) answers.release(request.pooledBody)
    done()
  })
}

export default fp(answersPlugin, { name: 'answers' })
