// A write script that reaches Redis after its sender gave up on it (a Redis that hung, then went on)
// must change nothing: the sender has already reported it failed. So each write script first
// compares Redis's clock with a deadline its sender passes, earlier than the command timeout.
import type { Redis } from 'ioredis'

/** A write script's first lines: it returns `refused` (Lua) past `deadline` (Lua, Redis's clock in ms; -1: never). */
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
  /** Redis's clock less this process's (ms), as last measured; null: not yet (scripts then run whenever they arrive) */
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
      // Redis read its clock by the time the answer came: the lowest offset, so a deadline is never later than meant
      this.clockOffsetMs = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000) - Date.now()
    }
    return this.now()
  }
}

const deadlines = new WeakMap<Redis, ScriptDeadline>()

/** The connection's one ScriptDeadline: every store on it uses the offset its heartbeat measures. */
export function scriptDeadline (redis: Redis): ScriptDeadline {
  let deadline = deadlines.get(redis)
  if (!deadline) deadlines.set(redis, deadline = new ScriptDeadline(redis))
  return deadline
}
