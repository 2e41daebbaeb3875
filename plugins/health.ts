// The service's own view of its health: control.db's background jobs report here, and the
// /healthz and /readyz routes (src/routes/health.ts) read it.
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { ControlDbHealth } from '../src/health/control-db.ts'

declare module 'fastify' {
  interface FastifyInstance { controlDb: ControlDbHealth }
}

async function health (app: FastifyInstance) {
  app.decorate('controlDb', new ControlDbHealth(app.log))
}

export default fp(health, { name: 'health' })
