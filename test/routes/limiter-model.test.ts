// The rate limiter against a reference sliding log, with fast-check command sequences through the
// whole request path (app.inject, injected clock): random limits, random waits from milliseconds
// to days, bursts of simultaneous requests. No window ever admits more than its limit; a burst
// admits exactly what the reference admits; /usage always agrees with the reference and with what
// the limiter does next; a retry after Retry-After seconds is accepted.
import t from 'tap'
import fc from 'fast-check'
import { buildTestApp, site } from '../helper.ts'
import { PartnerStore, controlPath } from '../../src/partners/store.ts'
import type { Limits, WindowName } from '../../src/partners/tiers.ts'

let now = Date.UTC(2026, 10, 21, 12, 0, 0)
const { app, dataDir } = await buildTestApp(t, { sandbox: [site('s-1', 4, 51.5, -0.12)] }, {}, { clock: () => now })
const operator = new PartnerStore(controlPath(dataDir))
t.teardown(() => operator.close())

const WINDOW_MS: Record<WindowName, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 }
const NAMES = Object.keys(WINDOW_MS) as WindowName[]

interface Model { limits: Limits, accepted: number[], retryAfter?: number }
interface Real { token: string }

const usedIn = (m: Model, w: WindowName) => m.accepted.filter((ts) => ts > now - WINDOW_MS[w]).length
const freeNow = (m: Model) =>
  Math.min(...NAMES.map((w) => m.limits[w] === null ? Infinity : m.limits[w]! - usedIn(m, w)))

const request = (token: string, path = '/v1/sites/nearest?lat=51.5&lng=-0.12') =>
  app.inject({ method: 'GET', url: path, headers: { authorization: `Bearer ${token}` } })

function checkWindows (m: Model) {
  for (const w of NAMES) {
    const limit = m.limits[w]
    if (limit !== null && usedIn(m, w) > limit) throw new Error(`the ${w} window admitted ${usedIn(m, w)} > ${limit}`)
  }
}

class Wait implements fc.AsyncCommand<Model, Real> {
  constructor (readonly ms: number) {}
  check () { return true }
  async run () { now += this.ms }
  toString () { return `wait ${this.ms} ms` }
}

class Burst implements fc.AsyncCommand<Model, Real> {
  constructor (readonly size: number) {}
  check () { return true }
  async run (m: Model, r: Real) {
    const expected = Math.max(0, Math.min(this.size, freeNow(m)))
    const answers = await Promise.all(Array.from({ length: this.size }, () => request(r.token)))
    const ok = answers.filter((a) => a.statusCode === 200).length
    const limited = answers.filter((a) => a.statusCode === 429)
    if (ok !== expected || ok + limited.length !== this.size) {
      throw new Error(
        `burst of ${this.size}: ${ok} accepted, ${limited.length} refused; the reference accepts ${expected}`
      )
    }
    for (let i = 0; i < ok; i++) m.accepted.push(now)
    checkWindows(m)
    if (limited.length > 0) {
      const retry = Number(limited[0].headers['retry-after'])
      if (!(retry >= 1) || limited[0].json().data.retry_after !== retry) {
        throw new Error(`Retry-After ${limited[0].headers['retry-after']} vs body ${limited[0].body}`)
      }
      m.retryAfter = retry
    } else {
      m.retryAfter = undefined
    }
  }

  toString () { return `burst of ${this.size}` }
}

/** GET /usage, then one request at the same instant: accepted exactly when /usage said there was room. */
class UsageThenRequest implements fc.AsyncCommand<Model, Real> {
  check () { return true }
  async run (m: Model, r: Real) {
    const usage = (await request(r.token, '/v1/usage')).json()
    for (const w of NAMES) {
      const report = usage.windows[w]
      const used = usedIn(m, w)
      const limit = m.limits[w]
      if (report.used !== used) throw new Error(`/usage ${w}.used ${report.used}, reference ${used}`)
      if (report.limit !== limit || report.remaining !== (limit === null ? null : limit - used)) {
        throw new Error(`/usage ${w} ${JSON.stringify(report)} with ${used} used of ${limit}`)
      }
    }
    const room = NAMES.every((w) => usage.windows[w].remaining === null || usage.windows[w].remaining > 0)
    const answer = await request(r.token)
    if ((answer.statusCode === 200) !== room) {
      throw new Error(`/usage said ${room ? 'room' : 'no room'}, the next request got ${answer.statusCode}`)
    }
    if (answer.statusCode === 200) m.accepted.push(now)
    m.retryAfter = answer.statusCode === 429 ? Number(answer.headers['retry-after']) : undefined
    checkWindows(m)
  }

  toString () { return 'usage, then a request' }
}

/** After a 429: wait exactly Retry-After seconds; the retry is accepted. */
class RetryAfter implements fc.AsyncCommand<Model, Real> {
  check (m: Readonly<Model>) { return m.retryAfter !== undefined }
  async run (m: Model, r: Real) {
    now += m.retryAfter! * 1000
    const answer = await request(r.token)
    if (answer.statusCode !== 200) {
      throw new Error(`a retry after Retry-After ${m.retryAfter} s got ${answer.statusCode} ${answer.body}`)
    }
    m.accepted.push(now)
    m.retryAfter = undefined
    checkWindows(m)
  }

  toString () { return 'retry after Retry-After' }
}

const limit = (min: number, max: number) => fc.option(fc.integer({ min, max }), { freq: 5, nil: null })
const commands = fc.commands([
  fc.oneof(
    fc.integer({ min: 0, max: 1_500 }),
    fc.integer({ min: 0, max: 70_000 }),
    fc.integer({ min: 0, max: 4_000_000 }),
    fc.integer({ min: 0, max: 90_000_000 })
  ).map((ms) => new Wait(ms)),
  fc.integer({ min: 1, max: 12 }).map((n) => new Burst(n)),
  fc.constant(new UsageThenRequest()),
  fc.constant(new RetryAfter())
], { maxCommands: 60 })

t.test('model check: limiter and /usage against a reference sliding log', async (t) => {
  let runs = 0
  const [minutes, hours, days] = [limit(1, 8), limit(1, 30), limit(1, 80)]
  await fc.assert(fc.asyncProperty(minutes, hours, days, commands, async (minute, hour, day, cmds) => {
    // a partner of its own per run, made the way an operator makes one
    const slug = `m-${runs++}`
    const { token } = operator.create({ name: slug, slug, tier: 'scale' })
    operator.update(slug, {
      limitOverrides: { minute: minute ?? 'unlimited', hour: hour ?? 'unlimited', day: day ?? 'unlimited' }
    })
    app.partners.refresh()
    await fc.asyncModelRun(() => ({ model: { limits: { minute, hour, day }, accepted: [] }, real: { token } }), cmds)
  }), { numRuns: 300, seed: Number(process.env.FUZZ_SEED ?? 424242) })
  t.pass(`${runs} runs agree`)
})
