// The limiter's store on Redis (STATE_URL), for several instances sharing a partner's windows.
// The same exact sliding log as LocalStore, kept per partner in a sorted set (score: time in ms,
// member: a sequence number), and every check-and-record is one Lua script, which Redis runs
// atomically: N instances under any concurrency admit exactly what one process would.
// Rows are a second sorted set of `seq:rows` at the request's time. Everything expires a day
// after the partner's last accepted request.
import type { Redis } from 'ioredis'
import type { HitResult, LimiterStore, WindowSpec, WindowState } from './limiter.ts'

const DAY_MS = 86_400_000
const KEEP_MS = DAY_MS + 60_000

// KEYS: log, seq, rows. ARGV: now, then limit (-1: unlimited) and length in ms of each window.
// Returns: allowed, seq, now, refused window (1-based, 0: none), wait ms, then used and the
// oldest entry's time of each window.
const HIT = `
local log, seqKey, rowsKey = KEYS[1], KEYS[2], KEYS[3]
local now = tonumber(ARGV[1])
local newest = redis.call('ZREVRANGE', log, 0, 0, 'WITHSCORES')
if #newest > 0 and tonumber(newest[2]) > now then now = tonumber(newest[2]) end
local windows = (#ARGV - 1) / 2
local refused, wait = 0, 0
for i = 1, windows do
  local limit, ms = tonumber(ARGV[i * 2]), tonumber(ARGV[i * 2 + 1])
  if limit >= 0 then
    local w = 0
    if limit == 0 then
      w = ms
    else
      local e = redis.call('ZREVRANGE', log, limit - 1, limit - 1, 'WITHSCORES')
      if #e > 0 and tonumber(e[2]) > now - ms then w = tonumber(e[2]) + ms - now end
    end
    if w > wait then wait = w; refused = i end
  end
end
local seq = 0
if refused == 0 then
  local expired = string.format('%.0f', now - ${DAY_MS})
  redis.call('ZREMRANGEBYSCORE', log, '-inf', expired)
  redis.call('ZREMRANGEBYSCORE', rowsKey, '-inf', expired)
  seq = redis.call('INCR', seqKey)
  redis.call('ZADD', log, now, seq)
  redis.call('PEXPIRE', log, ${KEEP_MS})
  redis.call('PEXPIRE', seqKey, ${KEEP_MS})
end
local out = { refused == 0 and 1 or 0, seq, now, refused, wait }
for i = 1, windows do
  local from = string.format('(%.0f', now - tonumber(ARGV[i * 2 + 1]))
  local used = redis.call('ZCOUNT', log, from, '+inf')
  local oldest = 0
  if used > 0 then oldest = tonumber(redis.call('ZRANGEBYSCORE', log, from, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)[2]) end
  out[#out + 1] = used
  out[#out + 1] = oldest
end
return out
`

// KEYS: log, rows. ARGV: seq, rows.
const SET_ROWS = `
local t = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not t then return 0 end
redis.call('ZADD', KEYS[2], t, ARGV[1] .. ':' .. ARGV[2])
redis.call('PEXPIRE', KEYS[2], ${KEEP_MS})
return 1
`

// KEYS: log, rows. ARGV: now, then the length in ms of each window.
// Returns: now, then used, oldest and rows of each window.
const STATE = `
local log, rowsKey = KEYS[1], KEYS[2]
local now = tonumber(ARGV[1])
local newest = redis.call('ZREVRANGE', log, 0, 0, 'WITHSCORES')
if #newest > 0 and tonumber(newest[2]) > now then now = tonumber(newest[2]) end
local out = { now }
for i = 2, #ARGV do
  local from = string.format('(%.0f', now - tonumber(ARGV[i]))
  local used = redis.call('ZCOUNT', log, from, '+inf')
  local oldest = 0
  if used > 0 then oldest = tonumber(redis.call('ZRANGEBYSCORE', log, from, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)[2]) end
  local rows = 0
  for _, member in ipairs(redis.call('ZRANGEBYSCORE', rowsKey, from, '+inf')) do
    rows = rows + tonumber(string.match(member, ':(%d+)$'))
  end
  out[#out + 1] = used
  out[#out + 1] = oldest
  out[#out + 1] = rows
end
return out
`

// KEYS: log, seq. ARGV: times of requests accepted elsewhere (an instance that served alone while
// Redis was away), added to the log so that the windows count them.
const MERGE = `
for i = 1, #ARGV do
  local seq = redis.call('INCR', KEYS[2])
  redis.call('ZADD', KEYS[1], ARGV[i], seq)
end
redis.call('PEXPIRE', KEYS[1], ${KEEP_MS})
redis.call('PEXPIRE', KEYS[2], ${KEEP_MS})
return #ARGV
`

interface Scripts {
  lspHit (log: string, seq: string, rows: string, ...args: number[]): Promise<number[]>
  lspSetRows (log: string, rows: string, seq: number, count: number): Promise<number>
  lspState (log: string, rows: string, ...args: number[]): Promise<number[]>
  lspMerge (log: string, seq: string, ...times: number[]): Promise<number>
}

function stateOf (spec: WindowSpec, used: number, oldest: number, rows: number, now: number): WindowState {
  const { name, seconds, limit } = spec
  const resetsInMs = used > 0 ? oldest + seconds * 1000 - now : 0
  if (limit === null) return { name, seconds, limit, used, remaining: null, rows, resetsInMs: null }
  return { name, seconds, limit, used, remaining: Math.max(0, limit - used), rows, resetsInMs }
}

export class RedisStore implements LimiterStore {
  private readonly scripts: Scripts

  constructor (redis: Redis, private readonly prefix = 'lsp:') {
    redis.defineCommand('lspHit', { numberOfKeys: 3, lua: HIT })
    redis.defineCommand('lspSetRows', { numberOfKeys: 2, lua: SET_ROWS })
    redis.defineCommand('lspState', { numberOfKeys: 2, lua: STATE })
    redis.defineCommand('lspMerge', { numberOfKeys: 2, lua: MERGE })
    this.scripts = redis as unknown as Scripts
  }

  // one hash tag per partner: its keys live together on a cluster
  private keys (key: string) {
    const base = `${this.prefix}rl:{${key}}:`
    return { log: `${base}log`, seq: `${base}seq`, rows: `${base}rows` }
  }

  async hit (key: string, windows: WindowSpec[], now: number): Promise<HitResult> {
    const k = this.keys(key)
    const args = [now]
    for (const w of windows) args.push(w.limit ?? -1, w.seconds * 1000)
    const r = await this.scripts.lspHit(k.log, k.seq, k.rows, ...args)
    const at = r[2]
    const states = windows.map((w, i) => stateOf(w, r[5 + i * 2], r[6 + i * 2], 0, at))
    if (r[0] === 1) return { allowed: true, seq: r[1], windows: states }
    return { allowed: false, refusedBy: windows[r[3] - 1].name, retryAfterMs: r[4], windows: states }
  }

  async setRows (key: string, seq: number, rows: number): Promise<void> {
    const k = this.keys(key)
    await this.scripts.lspSetRows(k.log, k.rows, seq, rows)
  }

  async state (key: string, windows: WindowSpec[], now: number): Promise<WindowState[]> {
    const k = this.keys(key)
    const r = await this.scripts.lspState(k.log, k.rows, now, ...windows.map((w) => w.seconds * 1000))
    return windows.map((w, i) => stateOf(w, r[1 + i * 3], r[2 + i * 3], r[3 + i * 3], r[0]))
  }

  /** Adds requests accepted without Redis to the shared log. */
  async merge (key: string, times: number[]): Promise<void> {
    const k = this.keys(key)
    for (let i = 0; i < times.length; i += 1000) await this.scripts.lspMerge(k.log, k.seq, ...times.slice(i, i + 1000))
  }
}
