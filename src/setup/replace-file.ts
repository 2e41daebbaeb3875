// A file written whole or not at all: written to a temporary file beside it, renamed into place once
// complete, so a write that fails half-way (a full disk, a kill) leaves the old file as it was. Every
// writer of the service (datasets, index snapshots, exports) names its temporary file with tempPathFor.
import {
  closeSync, createWriteStream, fsyncSync, openSync, readdirSync, renameSync, rmSync, statSync, type WriteStream
} from 'node:fs'
import { once } from 'node:events'
import { basename, dirname, join } from 'node:path'

/** What tells one file at a path from another (undefined: none there): a file moved in, out or written changes it. */
export function fileIdentity (path: string): string | undefined {
  const s = statSync(path, { bigint: true, throwIfNoEntry: false })
  return s && `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}`
}

/** fsync of a file, or of a directory: the names made or renamed in it survive a power cut. */
export function fsyncPath (path: string) {
  const fd = openSync(path, 'r')
  try { fsyncSync(fd) } finally { closeSync(fd) }
}

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** Where this process writes `path` before renaming it into place (removeStaleTempFiles knows the name). */
export const tempPathFor = (path: string) =>
  join(dirname(path), `.${basename(path)}.${process.pid}.${Date.now()}.tmp`)

/** A writer's temporary file not modified for this long is taken as abandoned, whatever its pid. */
const TEMP_FILE_STALE_MS = 3_600_000

/**
 * Removes the temporary files (and their SQLite -journal, -wal, -shm) that dead writers of `path` left: each can be
 * as large as the dataset. Stale: its pid is not alive, or is ours but older than this process (a reused pid), or it
 * was not written for TEMP_FILE_STALE_MS. With `mine`, this process's own are stale too (a terminated index worker).
 */
export function removeStaleTempFiles (path: string, options: { mine?: boolean } = {}) {
  const dir = dirname(path)
  const prefix = `.${basename(path)}.`
  for (const name of readdirSync(dir)) {
    const m = name.startsWith(prefix) && /^(\d+)\.(\d+)\.tmp(?:-journal|-wal|-shm)?$/.exec(name.slice(prefix.length))
    if (!m) continue
    const pid = Number(m[1])
    const file = join(dir, name)
    let stale = pid === process.pid ? options.mine === true || Number(m[2]) < performance.timeOrigin : !isAlive(pid)
    if (!stale) {
      try {
        stale = Date.now() - statSync(file).mtimeMs > TEMP_FILE_STALE_MS
      } catch {
        continue // gone meanwhile
      }
    }
    if (stale) rmSync(file, { force: true })
  }
}

/**
 * Writes `path` through `write`, which gets a stream on the temporary file (created with `mode`,
 * which the renamed file keeps, whatever the mode of the file it replaces).
 */
export async function replaceFile<T> (
  path: string,
  mode: number,
  write: (out: WriteStream) => Promise<T>
): Promise<T> {
  const tmpPath = tempPathFor(path)
  const out = createWriteStream(tmpPath, { mode, flags: 'wx' })
  try {
    await once(out, 'open')
    // an export killed half-way left a file as large as this one (a partners' one holds token digests)
    removeStaleTempFiles(path)
    const result = await write(out)
    out.end()
    await once(out, 'finish')
    fsyncPath(tmpPath)
    renameSync(tmpPath, path)
    return result
  } catch (err) {
    // writes still queued fail with the stream: the error reported is the first one
    out.on('error', () => {})
    // a stream that failed itself (no such folder, a full disk) may have closed already, and a
    // 'close' that has come and gone would be waited for forever
    if (!out.closed) await new Promise<void>((resolve) => out.once('close', () => resolve()).destroy())
    rmSync(tmpPath, { force: true })
    throw err
  }
}
