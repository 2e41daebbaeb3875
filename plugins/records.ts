// The records' JSON (src/answers/records.ts) for the partner routes, every dataset's, made on first use and kept
// within FRAGMENTS_MAX_MB; and the app's answer pool (src/answers/pool.ts): the records' answers are taken from it,
// the response cache holds references on the bodies it keeps, and the partner routes give theirs back once sent.
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { FragmentMemory } from '../src/answers/fragment-memory.ts'
import { AnswerPool } from '../src/answers/pool.ts'
import { RecordJson } from '../src/answers/records.ts'

declare module 'fastify' {
  interface FastifyInstance {
    answerPool: AnswerPool
    /** the records' JSON, every dataset's */
    records: RecordJson
  }
}

/** pilotAppUrl: PILOT_APP_URL, whose `/pad/<id>` is each record's link; maxMb: FRAGMENTS_MAX_MB */
async function records (app: FastifyInstance, options: { pilotAppUrl: string, maxMb: number }) {
  const pool = new AnswerPool()
  app.decorate('answerPool', pool)
  app.decorate('records', new RecordJson(options.pilotAppUrl, new FragmentMemory(options.maxMb * 1024 * 1024), pool))
}

export default fp(records, { name: 'records' })
