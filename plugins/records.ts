// The records' JSON (src/answers/records.ts) for the partner routes: every dataset's records,
// their fragments made on first use and kept within FRAGMENTS_MAX_MB.
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { FragmentMemory } from '../src/answers/fragment-memory.ts'
import { RecordJson } from '../src/answers/records.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /** the records' JSON, every dataset's */
    records: RecordJson
  }
}

/** pilotAppUrl: PILOT_APP_URL, whose `/pad/<id>` is each record's link; maxMb: FRAGMENTS_MAX_MB */
async function records (app: FastifyInstance, options: { pilotAppUrl: string, maxMb: number }) {
  const memory = new FragmentMemory(options.maxMb * 1024 * 1024)
  app.decorate('records', new RecordJson(options.pilotAppUrl, memory, app.answerPool))
}

export default fp(records, { name: 'records', dependencies: ['answers'] })
