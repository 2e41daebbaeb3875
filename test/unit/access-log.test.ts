// The hand-made access line is the line pino itself writes for the same fields.
import { test } from 'tap'
import { Writable } from 'node:stream'
import pino from 'pino'
import { accessWriter, viaLogger } from '../../src/access-log.ts'
import { loggerOptions } from '../../src/app.ts'
import { testConfig, tmpDataDir } from '../helper.ts'

const capture = () => {
  const lines: string[] = []
  return { lines, stream: new Writable({ write (chunk, _enc, done) { lines.push(String(chunk)); done() } }) }
}
const withoutTime = (line: string) => line.replace(/"time":\d+/, '"time":0')

test('byte for byte what logger.info writes, whatever the fields hold', async (t) => {
  const config = { ...testConfig(tmpDataDir(t)), logLevel: 'info' as const }
  const hand = capture()
  const own = capture()
  const handLog = pino(loggerOptions(config), hand.stream)
  const ownLog = pino(loggerOptions(config), own.stream)
  const write = accessWriter(handLog, true)
  const reference = viaLogger(ownLog)
  const cases: Parameters<typeof write>[] = [
    ['9d23b602-0224-4e5b-b27e-51a947d52347', 'GET', '/v1/sites?lat=48.1&lng=11.5', '127.0.0.1', 200, 1.25, 'wide', 'miss'],
    ['partner-abc.123', 'GET', '/v1/sites/nearest?lat=1&lng=2&api_key=[REDACTED]', '::1', 429, 0.07, 'limited', undefined],
    ['r', 'POST', '/v1/"quoted"\\back\u2028line\u0001ctl/é✈', '10.0.0.1', 404, 12, undefined, undefined],
    ['r2', 'GET', '/', '192.0.2.1', 304, 0, 'a', 'hit']
  ]
  for (const c of cases) {
    write(...c)
    reference(...c)
  }
  t.equal(hand.lines.length, cases.length)
  t.same(hand.lines.map(withoutTime), own.lines.map(withoutTime))
  for (const line of hand.lines) t.ok(line.endsWith('}\n') && JSON.parse(line).msg === 'request')
})

test('below info nothing is written; an unknown logger gets logger.info', async (t) => {
  const config = { ...testConfig(tmpDataDir(t)), logLevel: 'warn' as const }
  const out = capture()
  accessWriter(pino(loggerOptions(config), out.stream), true)('r', 'GET', '/', '::1', 200, 1, undefined, undefined)
  t.same(out.lines, [])
  const calls: unknown[] = []
  const fake = { info: (...args: unknown[]) => calls.push(args) } as unknown as Parameters<typeof accessWriter>[0]
  accessWriter(fake, false)('r', 'GET', '/', '::1', 200, 1, 'p', undefined)
  t.same(calls, [[{ reqId: 'r', method: 'GET', url: '/', ip: '::1', status: 200, ms: 1, partner: 'p', cache: undefined }, 'request']])
})
