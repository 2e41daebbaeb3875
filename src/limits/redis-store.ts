// The limiter's store on Redis (STATE_URL), for instances sharing a partner's windows: the same exact
// sliding log as LocalStore, a sorted set per partner (score: time in ms, member: the request's name, the
// instance's tag and a number), checked and written by Lua scripts, which Redis runs atomically: N
// instances admit exactly what one process would. Named requests are put back once however often sent.
// Rows are a second sorted set of `name:rows` at the request's time. Everything expires a day after the
// partner's last accepted request. Each partner's last answer is kept for failover-store.ts.
import { randomBytes } from 'node:crypto'
import type { Redis } from 'ioredis'
import { scriptDeadline, tooLate, type ScriptDeadline } from '../shared-state/script-deadline.ts'
import { DAY_MS } from './accept-log.ts'
import { stateOf, type AsyncLimiterStore, type HitResult, type WindowSpec, type WindowState } from './limiter.ts'

const KEEP_MS = DAY_MS + 60_000

// a script past its deadline (ARGV[2]) changes nothing: its sender has decided the request alone
const TOO_LATE = tooLate('ARGV[2]', '{ -1 }')

// latest: the later of t and the log's newest entry's time; a clock behind it (stepped back, or an
// instance behind another) logs a request there, so that the log stays in order.
// window: the window of length ms that ends at now: its start (for a range), count and oldest entry's time.
const FUNCTIONS = `
local function latest (log, t)
  local newest = redis.call('ZREVRANGE', log, 0, 0, 'WITHSCORES')
  if #newest > 0 and tonumber(newest[2]) > t then return tonumber(newest[2]) end
  return t
end
local function window (log, now, ms)
  local from = string.format('(%.0f', now - ms)
  local used = redis.call('ZCOUNT', log, from, '+inf')
  local oldest = 0
  if used > 0 then oldest = tonumber(redis.call('ZRANGEBYSCORE', log, from, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)[2]) end
  return from, used, oldest
end
`

// KEYS: log, rows. ARGV: now, deadline, the request's name, then limit (-1: unlimited) and length
// in ms of each window. Returns: allowed (-1: too late), the newest entry's time (now if later),
// refused window (1-based, 0: none), wait ms, then used and the oldest entry's time of each window.
// Logged at latest(), checked at now (the entries ahead counted): waits are on the clock the client waits by.
const HIT = `${TOO_LATE}${FUNCTIONS}
local log, rowsKey = KEYS[1], KEYS[2]
local now = tonumber(ARGV[1])
local time = latest(log, now)
local windows = (#ARGV - 3) / 2
local refused, wait = 0, 0
for i = 1, windows do
  local limit, ms = tonumber(ARGV[i * 2 + 2]), tonumber(ARGV[i * 2 + 3])
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
if refused == 0 then
  local expired = string.format('%.0f', now - ${DAY_MS})
  redis.call('ZREMRANGEBYSCORE', log, '-inf', expired)
  redis.call('ZREMRANGEBYSCORE', rowsKey, '-inf', expired)
  redis.call('ZADD', log, time, ARGV[3])
  redis.call('PEXPIRE', log, ${KEEP_MS})
end
local out = { refused == 0 and 1 or 0, time, refused, wait }
for i = 1, windows do
  local _, used, oldest = window(log, now, tonumber(ARGV[i * 2 + 3]))
  out[#out + 1] = used
  out[#out + 1] = oldest
end
return out
`

// KEYS: log, rows. ARGV: the request's name, rows.
const SET_ROWS = `
local t = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not t then return 0 end
redis.call('ZADD', KEYS[2], t, ARGV[1] .. ':' .. ARGV[2])
redis.call('PEXPIRE', KEYS[2], ${KEEP_MS})
return 1
`

// KEYS: log, rows. ARGV: now, then the length in ms of each window.
// Returns: the newest entry's time (now if later), then used, oldest and rows of each window (at now).
const STATE = `${FUNCTIONS}
local log, rowsKey = KEYS[1], KEYS[2]
local now = tonumber(ARGV[1])
local out = { latest(log, now) }
for i = 2, #ARGV do
  local from, used, oldest = window(log, now, tonumber(ARGV[i]))
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

// KEYS: log, rows. ARGV: now, the number of windows n, their lengths in ms, this instance's tag, the count of requests
// to take out, their numbers, then the number, time and rows of each request to put in (by name: one sent twice, or
// late, is added once). Returns: the newest entry's time (now if later), then used of each window.
const PUT_BACK = `${FUNCTIONS}
local log, rowsKey = KEYS[1], KEYS[2]
local now, n = tonumber(ARGV[1]), tonumber(ARGV[2])
local tag = ARGV[3 + n] .. ':'
local first = 5 + n
local taken = tonumber(ARGV[4 + n])
for i = first, first + taken - 1 do redis.call('ZREM', log, tag .. ARGV[i]) end
local expired = now - ${DAY_MS}
for i = first + taken, #ARGV, 3 do
  local name, time, rows = tag .. ARGV[i], ARGV[i + 1], ARGV[i + 2]
  if tonumber(time) > expired then
    redis.call('ZADD', log, 'NX', time, name)
    if rows ~= '0' then redis.call('ZADD', rowsKey, time, name .. ':' .. rows) end
  end
end
if redis.call('EXISTS', log) == 1 then redis.call('PEXPIRE', log, ${KEEP_MS}) end
if redis.call('EXISTS', rowsKey) == 1 then redis.call('PEXPIRE', rowsKey, ${KEEP_MS}) end
now = latest(log, now)
local out = { now }
for i = 1, n do
  out[#out + 1] = redis.call('ZCOUNT', log, string.format('(%.0f', now - tonumber(ARGV[2 + i])), '+inf')
end
return out
`

interface Scripts {
  lspHit (log: string, rows: string, ...args: (number | string)[]): Promise<number[]>
  lspSetRows (log: string, rows: string, name: string, count: number): Promise<number>
  lspState (log: string, rows: string, ...args: number[]): Promise<number[]>
  lspPutBack (log: string, rows: string, ...args: (number | string)[]): Promise<number[]>
}

/** What Redis last answered about a partner: the used count of each window (shortest first) at a time. */
export interface Answer {
  /** Redis's time of the counts (it never goes back) */
  at: number
  windows: readonly { seconds: number, used: number }[]
}

/** A request this instance accepted (through Redis or alone), by the number that names it. */
export interface OwnRequest { id: number, time: number, rows: number }

/** requests put back by one script: each script must reach Redis within the command timeout */
const PUT_BACK_BATCH = 1000

export class RedisStore implements AsyncLimiterStore {
  readonly synchronous = false
  /** names this store's requests in Redis's logs (with a number): random, so no two instances or runs name alike */
  readonly tag = randomBytes(6).toString('base64url')
  private lastId = 0
  private readonly scripts: Scripts
  /** per partner, the last answer (updated in place, no copy per request): what is known when Redis goes away */
  readonly answers = new Map<string, Answer>()
  /** the connection's script deadlines, shared with the partners' store on it */
  readonly deadlines: ScriptDeadline

  constructor (redis: Redis, readonly prefix = 'lsp:') {
    this.deadlines = scriptDeadline(redis)
    redis.defineCommand('lspHit', { numberOfKeys: 2, lua: HIT })
    redis.defineCommand('lspSetRows', { numberOfKeys: 2, lua: SET_ROWS })
    redis.defineCommand('lspState', { numberOfKeys: 2, lua: STATE })
    redis.defineCommand('lspPutBack', { numberOfKeys: 2, lua: PUT_BACK })
    this.scripts = redis as unknown as Scripts
  }

  // one hash tag per partner: its keys live together on a cluster
  private keys (key: string) {
    const base = `${this.prefix}rl:{${key}}:`
    return { log: `${base}log`, rows: `${base}rows` }
  }

  /** A number for a request of this store, never given before. */
  newId (): number {
    return ++this.lastId
  }

  private name (id: number): string {
    return `${this.tag}:${id}`
  }

  /** Checks and records a request; `id` names it (a new number unless given). Its `seq` is that number. */
  async hit (key: string, windows: WindowSpec[], now: number, id = this.newId()): Promise<HitResult> {
    const k = this.keys(key)
    const args: (number | string)[] = [now, this.deadlines.now(), this.name(id)]
    for (const w of windows) args.push(w.limit ?? -1, w.seconds * 1000)
    const r = await this.scripts.lspHit(k.log, k.rows, ...args)
    if (r[0] === -1) throw new Error('Redis ran the limiter script after its command had timed out here (it had hung)')
    // the counts are remembered at the newest entry's time: none of them is later
    const states = windows.map((w, i) => stateOf(w, r[4 + i * 2], r[5 + i * 2], 0, now))
    this.remember(key, r[1], states)
    if (r[0] === 1) return { allowed: true, seq: id, time: r[1], windows: states }
    return { allowed: false, refusedBy: windows[r[2] - 1].name, retryAfterMs: r[3], windows: states }
  }

  async setRows (key: string, seq: number, rows: number): Promise<void> {
    const k = this.keys(key)
    await this.scripts.lspSetRows(k.log, k.rows, this.name(seq), rows)
  }

  async state (key: string, windows: WindowSpec[], now: number): Promise<WindowState[]> {
    const k = this.keys(key)
    const r = await this.scripts.lspState(k.log, k.rows, now, ...windows.map((w) => w.seconds * 1000))
    const states = windows.map((w, i) => stateOf(w, r[1 + i * 3], r[2 + i * 3], r[3 + i * 3], now))
    this.remember(key, r[0], states)
    return states
  }

  private remember (key: string, at: number, windows: Answer['windows']) {
    const answer = this.answers.get(key)
    if (answer) {
      answer.at = at
      answer.windows = windows
    } else {
      this.answers.set(key, { at, windows })
    }
  }

  /**
   * After an outage: adds `requests` (this store's) where the partner's log lacks them, with their rows,
   * and takes out `takenOut` (refused alone, their scripts may have run); each is added once however often
   * sent. `remember`: the answer is what this instance knows (not while other instances may still put back).
   */
  async putBack (
    key: string,
    seconds: readonly number[],
    requests: readonly OwnRequest[],
    takenOut: readonly number[],
    now: number,
    remember = true
  ): Promise<void> {
    const k = this.keys(key)
    const head = [now, seconds.length, ...seconds.map((s) => s * 1000), this.tag]
    let r: number[] = []
    let i = 0
    do {
      const out = i === 0 ? [takenOut.length, ...takenOut] : [0]
      const batch = requests.slice(i, i + PUT_BACK_BATCH).flatMap((q) => [q.id, q.time, q.rows])
      r = await this.scripts.lspPutBack(k.log, k.rows, ...head, ...out, ...batch)
      i += PUT_BACK_BATCH
    } while (i < requests.length)
    if (remember) this.remember(key, r[0], seconds.map((s, w) => ({ seconds: s, used: r[1 + w] })))
  }
}
