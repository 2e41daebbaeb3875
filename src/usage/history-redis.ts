// The daily history in Redis (STATE_URL), which every instance adds its deltas to: per partner and
// day a hash of the day's fields and one of requests per minute, from which a script keeps the
// busiest minute exact. Each batch (a partner's day) carries this instance's id and a growing
// number, and the script adds nothing for a number not above the last it added from that instance:
// a batch sent again after a timeout (Redis may have run it) is added once. That holds because
// batches not known to be added are sent again, under their number, before anything newer is made.
import type { Redis } from 'ioredis'
import { DAY_MS } from '../limits/accept-log.ts'
import { dateOf, deltaFields, type HistoryCounter } from './history.ts'

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

// the day, minute and batches-added hashes; one hash tag per partner, as the limiter's keys
const keysOf = (prefix: string, key: string, date: string) =>
  ['uh', 'um', 'ub'].map((kind) => `${prefix}${kind}:{${key}}:${date}`)

/** Adds a counter's deltas to Redis; throws when some batch could not be added (kept, sent first next time). */
export class RedisHistory {
  /** the script's keys and arguments of each batch not known to be added */
  private pending: (string | number)[][] = []
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
    if (this.pending.length === 0) {
      for (const [key, days] of counter.deltas()) {
        for (const [day, delta] of days) {
          const fields = deltaFields(delta)
          const batch: (string | number)[] = [...keysOf(this.prefix, key, dateOf(day)),
            (day + this.keepDays) * DAY_MS, (day + 2) * DAY_MS, this.source, ++this.seq, fields.length]
          for (const [field, n] of fields) batch.push(field, n)
          for (const [m, n] of delta.minutes) batch.push(m, n)
          this.pending.push(batch)
        }
      }
      counter.clear()
    }
    const scripts = this.redis as unknown as { lspHistoryAdd (...args: (string | number)[]): Promise<number> }
    const results = await Promise.allSettled(this.pending.map((batch) => scripts.lspHistoryAdd(...batch)))
    this.pending = this.pending.filter((_, i) => results[i].status === 'rejected')
    const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected')
    if (failure) throw failure.reason
  }

  /** Batches not known to be added. */
  get unsent () { return this.pending.length }
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
  for (const date of dates) pipeline.hgetall(keysOf(prefix, key, date)[0])
  const out = new Map<string, Record<string, number>>()
  for (const [i, [err, hash]] of ((await pipeline.exec()) ?? []).entries()) {
    if (err) throw err
    const fields = Object.entries(hash as Record<string, string>)
    if (fields.length > 0) out.set(dates[i], Object.fromEntries(fields.map(([f, v]) => [f, Number(v)])))
  }
  return out
}
