// A write script that reaches Redis after its sender gave up on it (a Redis that hung or was slow,
// then went on) must change nothing: the sender has already reported it failed (the limiter
// decided that request alone; the CLI printed an error and no token). So each write script starts
// by comparing Redis's clock with a deadline its sender passes, earlier than the command timeout.
import type { Redis } from 'ioredis'

/**
 * The first lines of a write script: returns `refused` (Lua) when Redis's clock, in ms, is past
 * the deadline `deadline` (a Lua expression, an ARGV; -1: any time).
 */
export const tooLate = (deadline: string, refused: string) => `
redis.replicate_commands()
local deadline = tonumber(${deadline})
if deadline >= 0 then
  local t = redis.call('TIME')
  if tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) > deadline then return ${refused} end
end
`

/** The deadlines of one connection's scripts. */
export class ScriptDeadline {
  /**
   * Redis's clock less this process's (ms), as last measured; null: not yet, and scripts then run
   * whenever they arrive.
   */
  clockOffsetMs: number | null = null
  /** how long after it is sent a script may still run: the command timeout less a margin for the answer's way back */
  private readonly graceMs: number

  constructor (private readonly redis: Redis) {
    const timeoutMs = redis.options.commandTimeout
    this.graceMs = timeoutMs ? Math.floor(timeoutMs * 0.8) : -1
  }

  /** The deadline of a script sent now, on Redis's clock (ms); -1: any time. */
  now (): number {
    return this.clockOffsetMs === null || this.graceMs < 0 ? -1 : Date.now() + this.clockOffsetMs + this.graceMs
  }

  /** The same, the offset measured first (one TIME) if it is not known yet. */
  async measured (): Promise<number> {
    if (this.clockOffsetMs === null && this.graceMs >= 0) {
      const [seconds, micros] = await this.redis.time()
      // Redis read its clock at the latest when the answer came: the lowest offset it can be, so
      // that a deadline is never later than meant
      this.clockOffsetMs = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000) - Date.now()
    }
    return this.now()
  }
}

const deadlines = new WeakMap<Redis, ScriptDeadline>()

/** The connection's one ScriptDeadline: every store on it uses the offset its heartbeat measures. */
export function scriptDeadline (redis: Redis): ScriptDeadline {
  let deadline = deadlines.get(redis)
  if (!deadline) {
    deadline = new ScriptDeadline(redis)
    deadlines.set(redis, deadline)
  }
  return deadline
}
