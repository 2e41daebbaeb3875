// The app's answer pool (src/answers/pool.ts): the records' answers are taken from it, the response
// cache holds references on the bodies it keeps, and the partner routes give theirs back once sent.
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { AnswerPool } from '../src/answers/pool.ts'

declare module 'fastify' {
  interface FastifyInstance { answerPool: AnswerPool }
}

async function answers (app: FastifyInstance) {
  app.decorate('answerPool', new AnswerPool())
}

export default fp(answers, { name: 'answers' })
