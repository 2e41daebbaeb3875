// A file written whole or not at all: the bytes go to a temporary file beside it, which is renamed
// into place once complete. An export that fails half-way (a full disk, a dataset that cannot be
// read, a kill) leaves the file that was there as it was. Every writer of the service names its
// temporary file so (the dataset writer, the index snapshot, the exports), and removes those that
// dead writers of the same file left.
import {
  closeSync, createWriteStream, fsyncSync, openSync, readdirSync, renameSync, rmSync, statSync, type WriteStream
} from 'node:fs'
import { once } from 'node:events'
import { basename, dirname, join } from 'node:path'

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
 * Removes the temporary files that writers of `path` left behind when their process died (an
 * import killed half-way): `.<name>.<pid>.<time>.tmp` and its SQLite companions (`-journal`,
 * `-wal`, `-shm`). They are never read, and each can be as large as the dataset. A file is stale
 * when its pid is not a live process, when its pid is this process's but it was made before this
 * process started (the pid was reused), or when it was not written for TEMP_FILE_STALE_MS (a live
 * writer writes its file all the time): so a concurrent writer's files are left alone. With
 * `mine`, this process's own are stale too (its writer was stopped: a terminated index worker).
 */
export function removeStaleTempFiles (path: string, options: { mine?: boolean } = {}): string[] {
  const dir = dirname(path)
  const prefix = `.${basename(path)}.`
  const removed: string[] = []
  for (const name of readdirSync(dir)) {
    if (!name.startsWith(prefix)) continue
    const m = /^(\d+)\.(\d+)\.tmp(?:-journal|-wal|-shm)?$/.exec(name.slice(prefix.length))
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
    if (!stale) continue
    rmSync(file, { force: true })
    removed.push(name)
  }
  return removed
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
    const fd = openSync(tmpPath, 'r')
    try { fsyncSync(fd) } finally { closeSync(fd) }
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
