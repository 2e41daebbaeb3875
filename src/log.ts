// What the Fastify-free modules need of a logger: app.log (pino) fits, and so does a test's plain object.
export type Log = Record<'info' | 'warn' | 'error', (fields: object, msg: string) => void>
