// The go-live rule on known days: each condition passes at its bound and fails past it, with the
// reason the operator reads; the summary's figures.
import t from 'tap'
import { MAX_ERROR_SHARE, MAX_REFUSED_SHARE, MIN_ACTIVE_DAYS, goLive, summarize } from '../../src/usage/go-live.ts'
import { dayRecord, type DayRecord } from '../../src/usage/history.ts'

const LIMITS = { minute: 30, hour: 200, day: 1000 }
const minuteOf = (date: string, hh: number) =>
  Math.floor(Date.parse(`${date}T${String(hh).padStart(2, '0')}:00:00Z`) / 60_000)

/** Seven days, the last six with 500 requests each (busiest minute 20), none refused or failed. */
function week (change: (date: string, fields: Record<string, number>) => void = () => {}): DayRecord[] {
  const days: DayRecord[] = []
  for (let d = 17; d <= 23; d++) {
    const date = `2026-11-${d}`
    const fields: Record<string, number> = d === 17 ? {} : { requests: 500, rows: 5000, bm: minuteOf(date, 9), bc: 20 }
    change(date, fields)
    days.push(dayRecord(date, fields))
  }
  return days
}

t.test('thresholds', async (t) => {
  t.same([MIN_ACTIVE_DAYS, MAX_REFUSED_SHARE, MAX_ERROR_SHARE], [5, 0.01, 0.01])
})

t.test('a steady week within its limits is ready', async (t) => {
  t.same(goLive(week(), LIMITS), { ready: true, failures: [] })
  t.same(summarize(week()), {
    days: 7,
    active_days: 6,
    requests: 3000,
    requests_per_day_avg: 428.6,
    requests_per_day_max: 500,
    busiest_minute: { minute: '2026-11-18T09:00Z', requests: 20 },
    refused: 0,
    errors: 0,
    refused_share: 0,
    error_share: 0
  })
})

t.test('traffic on at least 5 days', async (t) => {
  const four = week((date, f) => { if (date < '2026-11-20') for (const k of Object.keys(f)) delete f[k] })
  t.same(goLive(four, LIMITS), { ready: false, failures: ['traffic on 4 of 7 days (needs 5)'] })
  const five = week((date, f) => { if (date < '2026-11-19') for (const k of Object.keys(f)) delete f[k] })
  t.equal(goLive(five, LIMITS).ready, true, 'five days are enough')
})

t.test('no day over the day limit, no minute over the minute limit', async (t) => {
  const atLimits = week((date, f) => { if (date === '2026-11-20') Object.assign(f, { requests: 1000, bc: 30 }) })
  t.equal(goLive(atLimits, LIMITS).ready, true, 'at the limits: within them')
  const over = week((date, f) => { if (date === '2026-11-20') Object.assign(f, { requests: 1001, bc: 31 }) })
  t.same(goLive(over, LIMITS).failures, [
    'over the day limit of 1000 on 2026-11-20 (1001)',
    'over the minute limit of 30 at 2026-11-20T09:00Z (31)'
  ])
  t.equal(goLive(over, { minute: null, hour: null, day: null }).ready, true, 'unlimited windows are never exceeded')
})

t.test('under 1% refused, under 1% errors (4xx but 429, and 5xx)', async (t) => {
  // 3000 requests: 29 refused is 0.97%, 30 is 1%
  const refused = (n: number) => week((date, f) => { if (date === '2026-11-23') f.s429 = n })
  t.equal(goLive(refused(29), LIMITS).ready, true)
  t.same(goLive(refused(30), LIMITS).failures, ['1.00% refused with 429 (needs under 1.00%)'])
  const errors = (n4: number, n5: number) => week((date, f) => {
    if (date === '2026-11-22') Object.assign(f, { s400: n4, s404: 0, s503: n5 })
  })
  t.equal(goLive(errors(20, 9), LIMITS).ready, true, '29 errors: 0.97%')
  t.same(goLive(errors(20, 10), LIMITS).failures, ['1.00% errors (needs under 1.00%)'])
  t.same(summarize(errors(20, 10)).errors, 30)
})

t.test('no traffic at all: every reason that applies, no division by zero', async (t) => {
  const none = week((_date, f) => { for (const k of Object.keys(f)) delete f[k] })
  t.same(goLive(none, LIMITS), { ready: false, failures: ['traffic on 0 of 7 days (needs 5)'] })
  t.same([summarize(none).refused_share, summarize(none).error_share, summarize(none).busiest_minute], [0, 0, null])
})
