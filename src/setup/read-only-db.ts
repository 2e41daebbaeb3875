// A SQLite file opened to read and nothing else (the operator CLI's reading commands): no file made
// in DATA_DIR, so an operator who may only read it can look, and leaves nothing the service cannot write.
import { existsSync, readFileSync } from 'node:fs'
import Database from 'better-sqlite3'
import { fileIdentity } from './replace-file.ts'

/** SQLite's header bytes 18 and 19: the file format's write and read versions, 2 in WAL mode. */
const WAL_FORMAT = 2
const ROLLBACK_FORMAT = 1

/**
 * The file at `path`, read only. A read-only connection to a WAL-mode file with no writer makes a
 * `-shm` index beside it and leaves it, so such a file is read from a copy in memory; while a writer
 * holds it (its `-wal` is there), SQLite reads through the writer's index.
 */
export function openReadOnly (path: string): Database.Database {
  const db = fromCopy(path) ?? new Database(path, { readonly: true, fileMustExist: true })
  try {
    db.pragma('schema_version') // the first read: a file that is not a database fails here
    return db
  } catch (err) {
    db.close()
    throw err
  }
}

/**
 * The WAL-mode file at `path` from a copy in memory, marked as a rollback-journal file (no index needed),
 * or undefined while a writer holds it (or it is not WAL). A checkpoint during the copy makes it again.
 */
function fromCopy (path: string): Database.Database | undefined {
  for (let attempt = 0; attempt < 3 && existsSync(path) && !existsSync(`${path}-wal`); attempt++) {
    const before = fileIdentity(path)
    const image = readFileSync(path)
    // not WAL: SQLite makes no index
    if (image.length < 100 || image[18] !== WAL_FORMAT || image[19] !== WAL_FORMAT) return undefined
    if (existsSync(`${path}-wal`) || fileIdentity(path) !== before) continue
    image[18] = image[19] = ROLLBACK_FORMAT
    return new Database(image, { readonly: true })
  }
  return undefined
}
