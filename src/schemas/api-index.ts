import { Type } from '@sinclair/typebox'
import { DatasetsState } from './health.ts'

export const ApiIndex = Type.Object({
  name: Type.String(),
  version: Type.String({ description: 'Release of the specification this service implements' }),
  documentation: Type.Object({ openapi: Type.String(), docs: Type.String() }),
  operations: Type.Array(Type.Object({ method: Type.String(), path: Type.String(), summary: Type.String() })),
  datasets: DatasetsState
})
