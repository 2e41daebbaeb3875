// A file written whole or not at all: the bytes go to a temporary file beside it, which is renamed
// into place once complete. An export that fails half-way (a full disk, a dataset that cannot be
// read, a kill) leaves the file that was there as it was.
import { closeSync, createWriteStream, fsyncSync, openSync, renameSync, rmSync, type WriteStream } from 'node:fs'
import { once } from 'node:events'
import { tempPathFor } from '../sites/dataset-file.ts'

/**
 * Writes `path` through `write`, which gets a stream on the temporary file (created with `mode`,
 * which the renamed file keeps, whatever the mode of the file it replaces).
 */
export async function replaceFile<T> (path: string, mode: number, write: (out: WriteStream) => Promise<T>): Promise<T> {
  const tmpPath = tempPathFor(path)
  const out = createWriteStream(tmpPath, { mode, flags: 'wx' })
  try {
    await once(out, 'open')
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
    // a stream that failed itself (no such folder, a full disk) may have closed already: waiting
    // for a 'close' that has come and gone left the command hanging, then exiting 13 in silence
    if (!out.closed) await new Promise<void>((resolve) => out.once('close', () => resolve()).destroy())
    rmSync(tmpPath, { force: true })
    throw err
  }
}
