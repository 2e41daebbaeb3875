// Running service instances and reload requests in control.db (over Redis: shared-reloads.ts): the CLI asks
// for a reload, every live instance reloads its datasets and writes back its outcome.
import { hostname } from 'node:os'
import { randomBytes } from 'node:crypto'
import type Database from 'better-sqlite3'

/** An instance whose heartbeat is older than this is taken as gone (by the CLI, and the limiter's share). */
export const INSTANCE_STALE_MS = 10_000

/** With Redis, the live instances by heartbeat time (src/limits/failover-store.ts writes it every second). */
export const instancesKey = (prefix: string) => `${prefix}instances`

const SCHEMA = `
CREATE TABLE IF NOT EXISTS instances (
  id TEXT PRIMARY KEY, pid INTEGER NOT NULL, hostname TEXT NOT NULL, address TEXT,
  started_at TEXT NOT NULL, seen_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS reload_requests (
  id INTEGER PRIMARY KEY AUTOINCREMENT, requested_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS reload_results (
  request_id INTEGER NOT NULL, instance_id TEXT NOT NULL, ok INTEGER NOT NULL, detail TEXT NOT NULL,
  finished_at TEXT NOT NULL, PRIMARY KEY (request_id, instance_id));
`

export interface LiveInstance { id: string, pid: number, address: string | null }

export interface ServedDataset { dataset: string, site_count: number, built_at: string }
export type ReloadOutcome =
  | { ok: true, datasets: ServedDataset[] }
  | { ok: false, error: string, datasets: ServedDataset[] }

/** The service's side in control.db: heartbeat, and the reload requests it has not answered yet. */
export class InstanceRecord {
  readonly id = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`
  private lastRequestId: number

  constructor (private readonly db: Database.Database) {
    db.exec(SCHEMA)
    this.lastRequestId = (db.prepare('SELECT coalesce(max(id), 0) FROM reload_requests').pluck().get() as number)
    db.prepare('INSERT INTO instances (id, pid, hostname, address, started_at, seen_at) VALUES (?, ?, ?, NULL, ?, ?)')
      .run(this.id, process.pid, hostname(), new Date().toISOString(), Date.now())
  }

  setAddress (address: string) {
    this.db.prepare('UPDATE instances SET address = ? WHERE id = ?').run(address, this.id)
  }

  heartbeat () {
    this.db.prepare('UPDATE instances SET seen_at = ? WHERE id = ?').run(Date.now(), this.id)
  }

  /** Ids of reload requests made since this instance last looked. */
  pendingRequests (): number[] {
    const ids = this.db.prepare('SELECT id FROM reload_requests WHERE id > ? ORDER BY id')
      .pluck().all(this.lastRequestId) as number[]
    if (ids.length > 0) this.lastRequestId = ids[ids.length - 1]
    return ids
  }

  answer (requestIds: number[], outcome: ReloadOutcome) {
    const insert = this.db.prepare('INSERT OR REPLACE INTO reload_results ' +
      '(request_id, instance_id, ok, detail, finished_at) VALUES (?, ?, ?, ?, ?)')
    const now = new Date().toISOString()
    for (const id of requestIds) insert.run(id, this.id, outcome.ok ? 1 : 0, JSON.stringify(outcome), now)
  }

  remove () {
    this.db.prepare('DELETE FROM instances WHERE id = ?').run(this.id)
  }
}

/**
 * Asks every live instance to reload, through `post`, and polls `answers` (outcomes as JSON by instance id) until
 * each has answered; one that stops its heartbeat or misses the deadline is reported so.
 */
export async function askReload (
  live: () => LiveInstance[] | Promise<LiveInstance[]>,
  post: () => number | Promise<number>,
  answers: (requestId: number) => Record<string, string> | Promise<Record<string, string>>,
  timeoutMs: number
) {
  const instances = await live()
  const results = new Map<string, ReloadOutcome | string>()
  if (instances.length === 0) return { instances, results }
  const requestId = await post()
  const deadline = Date.now() + timeoutMs
  for (;;) {
    for (const [id, detail] of Object.entries(await answers(requestId))) {
      if (!results.has(id)) results.set(id, JSON.parse(detail) as ReloadOutcome)
    }
    if (instances.every((i) => results.has(i.id))) break
    const alive = new Set((await live()).map((i) => i.id))
    for (const { id } of instances) {
      if (!results.has(id) && !alive.has(id)) results.set(id, 'stopped answering before it reloaded')
    }
    if (Date.now() > deadline) {
      const silent = `no answer within ${timeoutMs / 1000} s`
      for (const instance of instances) if (!results.has(instance.id)) results.set(instance.id, silent)
      break
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return { instances, results }
}

/** The CLI's side over control.db: the instances of this DATA_DIR. */
export function requestReload (db: Database.Database, options: { timeoutMs: number }) {
  db.exec(SCHEMA)
  const live = db.prepare('SELECT id, pid, address FROM instances WHERE seen_at > ? ORDER BY started_at')
  const post = db.prepare('INSERT INTO reload_requests (requested_at) VALUES (?)')
  const answers = db.prepare('SELECT instance_id, detail FROM reload_results WHERE request_id = ?').raw()
  return askReload(
    () => live.all(Date.now() - INSTANCE_STALE_MS) as LiveInstance[],
    () => Number(post.run(new Date().toISOString()).lastInsertRowid),
    (id) => Object.fromEntries(answers.all(id) as [string, string][]),
    options.timeoutMs)
}
