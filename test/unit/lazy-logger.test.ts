// Each request's logger is made when it first logs (src/http/lazy-logger.ts): a request that logs
// nothing makes no pino child, and one that logs writes the lines the eager child would have.
import t from 'tap'
import Fastify, { LogController } from 'fastify'
import pino from 'pino'
import { LazyChildLogger, lazyChildLogger } from '../../src/http/lazy-logger.ts'
import { logCapture } from '../helper.ts'

const withoutTime = (line: string) => line.replace(/"time":\d+/, '"time":0')

/** A Fastify app on a pino logger that counts its children; lazy or with Fastify's own child factory. */
async function appWith (lazy: boolean) {
  const out = logCapture()
  const logger = pino({ level: 'info' }, out.stream)
  const made = { children: 0 }
  const child = logger.child.bind(logger)
  logger.child = ((bindings, options) => { made.children++; return child(bindings, options) }) as typeof logger.child
  let n = 0
  const app = Fastify({
    loggerInstance: logger,
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: () => `req-${++n}`,
    ...(lazy ? { childLoggerFactory: lazyChildLogger } : {})
  })
  app.get('/quiet', async () => 'quiet')
  app.get('/talks', async (request) => {
    request.log.info({ n: 1 }, 'first')
    request.log.warn('second %s', 'formatted')
    request.log.debug('below the level: not written')
    return 'talks'
  })
  app.get('/fails', async () => { throw new Error('boom') })
  app.setErrorHandler((err, request, reply) => {
    request.log.error({ code: 'failed' }, (err as Error).message) // as the service's error handler logs a 5xx
    reply.code(500).send('failed')
  })
  app.get('/level', async (request) => request.log.level)
  await app.ready()
  made.children = 0 // Fastify's own at boot
  out.clear()
  return { app, out, made }
}

t.test('a request that logs nothing makes no child logger; one that logs makes one', async (t) => {
  const { app, made } = await appWith(true)
  t.teardown(() => app.close())
  for (let i = 0; i < 5; i++) t.equal((await app.inject('/quiet')).statusCode, 200)
  t.equal(made.children, 0, 'none for five quiet requests')
  t.equal((await app.inject('/talks')).statusCode, 200)
  t.equal(made.children, 1, 'one for a request that logs twice')
  t.equal((await app.inject('/level')).body, 'info', 'the level is read without making one')
  t.equal(made.children, 1)
})

t.test('the lines are those Fastify\'s own child logger writes, request id included', async (t) => {
  const lazy = await appWith(true)
  const eager = await appWith(false)
  t.teardown(() => Promise.all([lazy.app.close(), eager.app.close()]))
  for (const { app } of [lazy, eager]) {
    await app.inject('/quiet')
    await app.inject('/talks')
    t.equal((await app.inject('/fails')).statusCode, 500)
  }
  t.ok(eager.made.children >= 3, 'Fastify\'s factory makes a child per request')
  t.equal(lazy.out.lines.length, 3, 'two lines from /talks, one from the failure')
  t.strictSame(lazy.out.lines.map(withoutTime), eager.out.lines.map(withoutTime))
  t.match(lazy.out.lines[0], /"reqId":"req-2".*"n":1,"msg":"first"/)
  t.match(lazy.out.lines[1], /"reqId":"req-2".*"msg":"second formatted"/)
  t.match(lazy.out.lines[2], /"reqId":"req-3".*"msg":"boom"/)
})

t.test('options and children pass through', async (t) => {
  const out = logCapture()
  const parent = pino({ level: 'info' }, out.stream)
  const log = new LazyChildLogger(parent, { reqId: 'r1' }, { level: 'warn' })
  t.equal(log.level, 'warn', 'the level given to the child, before it is made')
  log.info('dropped: below the child\'s level')
  log.child({ step: 2 }).warn('from a grandchild')
  log.level = 'info'
  log.info('now written')
  t.equal(out.lines.length, 2)
  t.match(out.lines[0], /"reqId":"r1","step":2,"msg":"from a grandchild"/)
  t.match(out.lines[1], /"reqId":"r1","msg":"now written"/)
})

t.test('silent writes nothing and makes no child', async (t) => {
  const out = logCapture()
  const parent = pino({ level: 'info' }, out.stream)
  let children = 0
  const child = parent.child.bind(parent)
  parent.child = ((bindings, options) => { children++; return child(bindings, options) }) as typeof parent.child
  new LazyChildLogger(parent, { reqId: 'r1' }, {}).silent()
  t.equal(children, 0)
  t.equal(out.lines.length, 0)
})
