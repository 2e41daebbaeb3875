import { Type } from '@sinclair/typebox'
import { DatasetsState } from './health.ts'
import { Nullable } from './common.ts'

export const ApiIndex = Type.Object({
  name: Type.String(),
  version: Type.String({ description: 'Release of the specification this service implements' }),
  documentation: Type.Object({ openapi: Type.String(), docs: Type.String() }),
  support: Type.Object({
    contact: Nullable(Type.String(), {
      description: 'SUPPORT_CONTACT: an e-mail address or a URL; null when the operator set none'
    }),
    send: Type.String({ description: 'What to send with a support request' })
  }),
  operations: Type.Array(Type.Object({ method: Type.String(), path: Type.String(), summary: Type.String() })),
  datasets: DatasetsState
})
