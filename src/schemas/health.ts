import { Type, type Static } from '@sinclair/typebox'
import { CONTROL_JOBS } from '../health/control-db.ts'
import { Nullable } from './common.ts'

export const Liveness = Type.Object({
  status: Type.Literal('ok', { description: 'The process is up and its event loop answers' })
})

const DatasetState = Type.Object({
  site_count: Type.Integer({ description: 'Sites served from this dataset' }),
  built_at: Type.String({ description: 'When the dataset file was built (its meta table)' })
})

/** What each dataset serves now: in /readyz and in the API index. */
export const DatasetsState = Type.Object({ sandbox: DatasetState, production: DatasetState })
export type DatasetsState = Static<typeof DatasetsState>

const ControlFailure = Type.Object({
  job: Type.Union(CONTROL_JOBS.map((job) => Type.Literal(job))),
  error: Type.String({ description: "SQLite's reason" }),
  since: Type.String({ description: 'ISO 8601 UTC time of the first failure in this run of failures' }),
  consequence: Type.String({ description: 'What the service does meanwhile' })
})

const SharedState = Type.Union([
  Type.Object({
    backend: Type.Literal('embedded',
      { description: 'no STATE_URL: limits and counters in this process and control.db' })
  }),
  Type.Object({
    backend: Type.Literal('redis'),
    connected: Type.Boolean(),
    degraded_since: Nullable(Type.String(),
      { description: 'since when this instance limits alone (Redis unavailable)' }),
    error: Nullable(Type.String(), {
      description: 'why this instance limits alone: Redis\'s error (its refusal of writes, say), a timeout, ' +
        'or the wait for the other instances after Redis lost its data'
    }),
    instances: Type.Integer(
      { description: 'instances sharing the state, as last seen; alone, each limit is divided by this' }),
    unavailable_answers: Type.Integer({
      description: 'requests answered 503 svc_partner_api_unavailable since degraded_since: this instance could ' +
        'neither read nor know a limited window of their partner'
    })
  })
])

export const Readiness = Type.Object({
  status: Type.Union([Type.Literal('ready'), Type.Literal('degraded'), Type.Literal('not_ready')], {
    description: 'degraded (200): serving, but limiting alone while the shared state is unavailable; ' +
      'not_ready (503): control.db failing'
  }),
  datasets: DatasetsState,
  control_db: Type.Object({ readable: Type.Boolean(), writable: Type.Boolean(), failures: Type.Array(ControlFailure) }),
  shared_state: SharedState
})
