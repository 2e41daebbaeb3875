// The ceiling: a bare Fastify hello-world route, in a process of its own; beside it, in a context
// of its own, the floors of a cached answer and a 429 (floor.ts).
import Fastify from 'fastify'
import { holdTickShape } from '../src/http/tick-shape.ts'
import floor from './floor.ts'

// As the service does: without it, a ceiling left idle while the services' cases run falls into
// Node's slow nextTick state and flatters every ratio.
holdTickShape()

const app = Fastify({ logger: false })
app.get('/', async () => ({ hello: 'world' }))
// A second ceiling for large answers: the same bare route sending a fixed body the size of a
// /sites answer with 100 records, as bytes.
const record = (i: number) => ({
  id: `prd-${String(i).padStart(7, '0')}`,
  category: '3',
  name: 'Washington Meadow Landing Site',
  region: 'District of Columbia',
  country: 'US',
  latitude: 38.703,
  longitude: -77.187,
  helipaddy_link: `https://helipaddy.com/pad/prd-${String(i).padStart(7, '0')}`
})
const big = Buffer.from(JSON.stringify(Array.from({ length: 100 }, (_, i) => record(i))))
app.get('/big', (_request, reply) => { reply.type('application/json; charset=utf-8').send(big) })
// The floors, in a context of their own (their hooks stay off the routes above).
await app.register(floor, { tokens: (process.env.FLOOR_TOKENS ?? '').split(',').filter(Boolean) })
const address = await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT ?? 0) })
process.stdout.write(`listening ${address}\n`)
process.on('SIGTERM', () => { app.close().then(() => process.exit(0)) })
