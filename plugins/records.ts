// The records' JSON for the partner routes, made on first use and kept within FRAGMENTS_MAX_MB; those of a
// dataset swapped out are dropped.
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { RecordJson } from '../src/answers/records.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /** the records' JSON, every dataset's */
    records: RecordJson
  }
}

export interface RecordsOptions {
  /** PILOT_APP_URL, whose `/pad/<id>` is each record's link */
  pilotAppUrl: string
  /** FRAGMENTS_MAX_MB */
  maxMb: number
}

async function records (app: FastifyInstance, options: RecordsOptions) {
  const records = new RecordJson(options.pilotAppUrl, options.maxMb * 1024 * 1024)
  app.datasets.onSwap((served) => records.keepOnly(Object.values(served)))
  app.decorate('records', records)
}

export default fp(records, { name: 'records', dependencies: ['datasets'] })
