// The ceiling: a bare Fastify hello-world route, in a process of its own.
import Fastify from 'fastify'

const app = Fastify({ logger: false })
app.get('/', async () => ({ hello: 'world' }))
const address = await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT ?? 0) })
process.stdout.write(`listening ${address}\n`)
process.on('SIGTERM', () => { app.close().then(() => process.exit(0)) })
