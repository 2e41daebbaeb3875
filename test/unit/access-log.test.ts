// The hand-made access line is the line pino itself writes for the same fields.
import { test } from 'tap'
import pino from 'pino'
import { accessWriter, viaLogger } from '../../src/http/access-log.ts'
import { loggerOptions } from '../../src/app.ts'
import { buildApp } from '../../src/app.ts'
import { logCapture as capture, nextTurn, testConfig, tmpDataDir, writeFixture } from '../helper.ts'
const withoutTime = (line: string) => line.replace(/"time":\d+/, '"time":0')

test('byte for byte what logger.info writes, whatever the fields hold', async (t) => {
  const config = { ...testConfig(tmpDataDir(t)), logLevel: 'info' as const }
  const hand = capture()
  const own = capture()
  const handLog = pino(loggerOptions(config), hand.stream)
  const ownLog = pino(loggerOptions(config), own.stream)
  const write = accessWriter(handLog)
  const reference = viaLogger(ownLog)
  const cases: Parameters<typeof write>[] = [
    [
      '9d23b602-0224-4e5b-b27e-51a947d52347', 'GET', '/v1/sites?lat=48.1&lng=11.5', '127.0.0.1', 200, 1.25,
      'wide', 'miss'
    ],
    [
      'partner-abc.123', 'GET', '/v1/sites/nearest?lat=1&lng=2&api_key=[REDACTED]', '::1', 429, 0.07,
      'limited', undefined
    ],
    ['r', 'POST', '/v1/"quoted"\\back\u2028line\u0001ctl/é✈', '10.0.0.1', 404, 12, undefined, undefined],
    ['r2', 'GET', '/', '192.0.2.1', 304, 0, 'a', 'hit']
  ]
  for (const c of cases) {
    write(...c)
    reference(...c)
  }
  t.same(hand.writes, [], 'held until the end of the turn')
  await nextTurn()
  t.equal(hand.writes.length, 1, 'one write for the lines of a turn')
  t.equal(hand.lines.length, cases.length)
  t.same(hand.lines.map(withoutTime), own.lines.map(withoutTime))
  for (const line of hand.lines) t.ok(line.endsWith('}\n') && JSON.parse(line).msg === 'request')
})

test('below info nothing is written; an unknown logger gets logger.info', async (t) => {
  const config = { ...testConfig(tmpDataDir(t)), logLevel: 'warn' as const }
  const out = capture()
  accessWriter(pino(loggerOptions(config), out.stream))('r', 'GET', '/', '::1', 200, 1, undefined, undefined)
  await nextTurn()
  t.same(out.lines, [])
  const calls: unknown[] = []
  const fake = { info: (...args: unknown[]) => calls.push(args) } as unknown as Parameters<typeof accessWriter>[0]
  accessWriter(fake)('r', 'GET', '/', '::1', 200, 1, 'p', undefined)
  t.same(calls, [
    [{ reqId: 'r', method: 'GET', url: '/', ip: '::1', status: 200, ms: 1, partner: 'p', cache: undefined }, 'request']
  ])
})

test('a turn\'s lines in one write, a full batch at once, and nothing held after close', async (t) => {
  const config = { ...testConfig(tmpDataDir(t)), logLevel: 'info' as const }
  const out = capture()
  const write = accessWriter(pino(loggerOptions(config), out.stream))
  const url = `/v1/sites?lat=1&lng=2&q=${'x'.repeat(1000)}`
  // about 1,150 characters a line: the 57th goes past 64 K characters and the batch goes out at once
  for (let i = 0; i < 60; i++) write(`r${i}`, 'GET', url, '::1', 200, 1, undefined, undefined)
  t.equal(out.writes.length, 1, 'written when the held lines pass 64 K characters')
  const first = out.lines.length
  t.ok(first >= 50 && first < 60, `${first} lines in the first write`)
  await nextTurn()
  t.equal(out.writes.length, 2)
  t.same(out.lines.map((l) => JSON.parse(l).reqId), Array.from({ length: 60 }, (_, i) => `r${i}`),
    'every line once, in order')
  write('late', 'GET', '/', '::1', 200, 1, undefined, undefined)
  write.flush()
  t.equal(out.lines.at(-1)!.includes('"reqId":"late"'), true, 'flush writes at once')
  write.flush()
  t.equal(out.writes.length, 3, 'nothing to flush, nothing written')

  // the service: what its last turn answered is written when it closes, before the next turn
  const dir = tmpDataDir(t)
  const tokens = writeFixture(dir, { partners: [{ name: 'A', slug: 'a' }] })
  const logged = capture()
  const exitListeners = process.listenerCount('exit')
  const app = await buildApp(testConfig(dir, { LOG_LEVEL: 'info' }), {
    logger: { ...loggerOptions(config), stream: logged.stream }
  })
  t.equal(process.listenerCount('exit'), exitListeners + 1,
    'while the service runs, its held lines are written at exit')
  const res = await app.inject({ method: 'GET', url: '/v1/usage', headers: { authorization: `Bearer ${tokens.a}` } })
  t.equal(res.statusCode, 200)
  await app.close()
  const access = logged.lines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'request')
  t.same(access.map((l) => [l.url, l.status, l.partner]), [['/v1/usage', 200, 'a']])
  t.equal(process.listenerCount('exit'), exitListeners, 'no exit listener left behind')
})

test('a destination that fails: lines dropped with one warning, the process goes on', async (t) => {
  const config = { ...testConfig(tmpDataDir(t)), logLevel: 'info' as const }
  const out = capture()
  let broken = true
  const write = accessWriter(pino(loggerOptions(config), {
    write (line: string) {
      if (broken) throw new Error('ENOSPC: no space left on device')
      out.stream.write(line)
    }
  }))
  const warnings: string[] = []
  const onWarning = (w: Error) => { if (w.name === 'AccessLogWarning') warnings.push(w.message) }
  process.on('warning', onWarning)
  t.teardown(() => process.off('warning', onWarning))
  for (let turn = 0; turn < 3; turn++) {
    write(`lost${turn}`, 'GET', '/', '::1', 200, 1, undefined, undefined)
    await nextTurn()
  }
  await nextTurn()
  t.same(warnings, ['access log lines dropped: ENOSPC: no space left on device'], 'one warning for the outage')
  broken = false
  write('back', 'GET', '/', '::1', 200, 1, undefined, undefined)
  await nextTurn()
  t.same(out.lines.map((l) => JSON.parse(l).reqId), ['back'], 'written again once the destination works')
  broken = true
  write('lost again', 'GET', '/', '::1', 200, 1, undefined, undefined)
  await nextTurn()
  await nextTurn()
  t.equal(warnings.length, 2, 'a new outage warns again')
})
