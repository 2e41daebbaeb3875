// The daily history in Redis (STATE_URL), which every instance adds its deltas to: per partner
// and day a hash of the day's fields and a hash of requests per minute, from which a script keeps
// the busiest minute exact. Each batch (a partner's day) carries this instance's id and a number
// that only grows; the script keeps, per partner and day, the last number added from each
// instance, and adds nothing for a number not above it: a batch sent again after a timeout (Redis
// may have run it) is added once. That holds because batches not known to be added are sent
// again, under their number, before anything newer is made.
import type { Redis } from 'ioredis'
import { DAY_MS, dateOf, deltaFields, type Deltas, type HistoryCounter } from './history.ts'

// KEYS: day hash, minute hash, batches-added hash. ARGV: the day hash's expiry, the minute hash's
// (unix ms), the instance, the batch number, the number of fields n, n field/value pairs, then
// minute/count pairs. Returns 1, or 0 when the batch had been added before.
const ADD = `
if tonumber(ARGV[4]) <= tonumber(redis.call('HGET', KEYS[3], ARGV[3]) or '0') then return 0 end
redis.call('HSET', KEYS[3], ARGV[3], ARGV[4])
redis.call('PEXPIRE', KEYS[3], ${DAY_MS})
local n = tonumber(ARGV[5])
for i = 0, n - 1 do redis.call('HINCRBY', KEYS[1], ARGV[6 + i * 2], ARGV[7 + i * 2]) end
local bc = tonumber(redis.call('HGET', KEYS[1], 'bc') or '0')
local bm = tonumber(redis.call('HGET', KEYS[1], 'bm') or '0')
for i = 6 + n * 2, #ARGV, 2 do
  local m = tonumber(ARGV[i])
  local total = redis.call('HINCRBY', KEYS[2], ARGV[i], ARGV[i + 1])
  if total > bc or (total == bc and m < bm) then bc = total; bm = m end
end
redis.call('HSET', KEYS[1], 'bc', bc, 'bm', bm)
redis.call('PEXPIREAT', KEYS[1], ARGV[1])
redis.call('PEXPIREAT', KEYS[2], ARGV[2])
return 1
`

// one hash tag per partner, as the limiter's keys
const dayKey = (prefix: string, key: string, date: string) => `${prefix}uh:{${key}}:${date}`
const minuteKey = (prefix: string, key: string, date: string) => `${prefix}um:{${key}}:${date}`
const addedKey = (prefix: string, key: string, date: string) => `${prefix}ub:{${key}}:${date}`

interface Batch { key: string, day: number, args: (string | number)[] }

/** Adds a counter's deltas to Redis; throws when some batch could not be added (kept, sent first next time). */
export class RedisHistory {
  private pending: Batch[] = []
  private seq = 0

  /** `source`: this instance's id (new at every start), under which its batch numbers are kept. */
  constructor (
    private readonly redis: Redis,
    private readonly keepDays: number,
    private readonly source: string,
    private readonly prefix = 'lsp:'
  ) {
    redis.defineCommand('lspHistoryAdd', { numberOfKeys: 3, lua: ADD })
  }

  async flush (counter: HistoryCounter) {
    // while batches wait, new counts stay in the counter (merged there, not piling up as batches)
    if (this.pending.length === 0) this.pending = this.batches(counter.take())
    const failed: Batch[] = []
    let error: unknown
    const scripts = this.redis as unknown as { lspHistoryAdd (...args: (string | number)[]): Promise<number> }
    await Promise.all(this.pending.map(async (b) => {
      const date = dateOf(b.day)
      const keys = [dayKey, minuteKey, addedKey].map((keyOf) => keyOf(this.prefix, b.key, date))
      try {
        await scripts.lspHistoryAdd(...keys, ...b.args)
      } catch (err) {
        failed.push(b)
        error = err
      }
    }))
    this.pending = failed
    if (failed.length > 0) throw error
  }

  private batches (deltas: Deltas): Batch[] {
    const out: Batch[] = []
    for (const [key, days] of deltas) {
      for (const [day, delta] of days) {
        const fields = deltaFields(delta)
        const args: (string | number)[] =
          [(day + this.keepDays) * DAY_MS, (day + 2) * DAY_MS, this.source, ++this.seq, fields.length]
        for (const [field, n] of fields) args.push(field, n)
        for (const [m, n] of delta.minutes) args.push(m, n)
        out.push({ key, day, args })
      }
    }
    return out
  }

  /** Batches not known to be added (lost if the process ends now). */
  get unsent () {
    return this.pending.length
  }
}

/** A partner's stored days from Redis (the operator CLI). */
export async function readRedisHistory (
  redis: Redis,
  key: string,
  fromDate: string,
  toDate: string,
  prefix = 'lsp:'
): Promise<Map<string, Record<string, number>>> {
  const dates: string[] = []
  for (let day = Math.floor(Date.parse(fromDate) / DAY_MS); dateOf(day) <= toDate; day++) dates.push(dateOf(day))
  const pipeline = redis.pipeline()
  for (const date of dates) pipeline.hgetall(dayKey(prefix, key, date))
  const results = (await pipeline.exec()) ?? []
  const out = new Map<string, Record<string, number>>()
  results.forEach(([err, hash], i) => {
    if (err) throw err
    const fields = hash as Record<string, string>
    if (Object.keys(fields).length === 0) return
    out.set(dates[i], Object.fromEntries(Object.entries(fields).map(([f, v]) => [f, Number(v)])))
  })
  return out
}
