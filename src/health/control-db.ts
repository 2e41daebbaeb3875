// What the service knows about control.db while it serves: each background job that reads or writes it reports how
// its last attempt went; a failure is logged when it starts and ends, /readyz shows it, answers come from memory.
import type { Log } from '../log.ts'

export const CONTROL_JOBS = ['partners', 'heartbeat', 'counters', 'reload-requests'] as const
type ControlJob = typeof CONTROL_JOBS[number]

const CONSEQUENCE: Record<ControlJob, string> = {
  partners: 'partner changes are not picked up; the last known partners keep working',
  heartbeat: '`datasets reload` cannot see this instance; SIGHUP still reloads',
  counters: 'rate-limit counters, the telemetry feeds and the usage history are kept in memory and saved ' +
    'once control.db takes writes again',
  'reload-requests': '`datasets reload` requests are not answered; SIGHUP still reloads'
}

interface ControlFailure { job: ControlJob, error: string, since: string, consequence: string }

export class ControlDbHealth {
  private readonly failing = new Map<ControlJob, ControlFailure>()

  /** `log`: where a job's failures and recoveries are said (the app's logger) */
  constructor (private readonly log: Pick<Log, 'info' | 'error'>) {}

  /** Runs one attempt of a job; true when it worked. Never throws. */
  attempt (job: ControlJob, work: () => void): boolean {
    try {
      work()
    } catch (err) {
      this.failed(job, err)
      return false
    }
    this.succeeded(job)
    return true
  }

  failed (job: ControlJob, err: unknown) {
    if (this.failing.has(job)) return
    const error = err instanceof Error ? err.message : String(err)
    const failure = { job, error, since: new Date().toISOString(), consequence: CONSEQUENCE[job] }
    this.failing.set(job, failure)
    const code = (err as { code?: string }).code
    this.log.error({ job, error, code }, `control.db: ${job} failed; serving on: ${failure.consequence}`)
  }

  succeeded (job: ControlJob) {
    const failure = this.failing.get(job)
    if (!failure) return
    this.failing.delete(job)
    this.log.info({ job, failing_since: failure.since }, `control.db: ${job} works again`)
  }

  // `partners` only reads control.db; every other job writes to it
  get readable (): boolean { return !this.failing.has('partners') }
  get writable (): boolean { return [...this.failing.keys()].every((job) => job === 'partners') }
  failures (): ControlFailure[] { return [...this.failing.values()] }
}
