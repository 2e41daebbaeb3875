// A SQLite file opened to read and nothing else (the operator CLI's read commands): no pragma that
// writes, no schema made, so that an operator who may only read DATA_DIR (another user than the
// service's, a read-only mount) can still look.
import { existsSync, readFileSync } from 'node:fs'
import Database from 'better-sqlite3'

/** SQLite's header bytes 18 and 19: the file format's write and read versions, 2 in WAL mode. */
const WAL_FORMAT = 2
const ROLLBACK_FORMAT = 1

/** What SQLite says when it cannot make a WAL file's index: a directory it may not write or change. */
const NO_INDEX = new Set(['SQLITE_CANTOPEN', 'SQLITE_READONLY_DIRECTORY', 'SQLITE_READONLY_CANTINIT'])

/**
 * The file at `path`, read only. A WAL-mode file (control.db) is read through its `-shm` index,
 * which SQLite must create when no writer holds it, and cannot in a directory it may not write.
 * There, when no `-wal` file holds commits beyond the file, the file alone is the whole database:
 * it is read from a copy in memory marked as a rollback-journal file, which needs no index.
 */
export function openReadOnly (path: string): Database.Database {
  let db: Database.Database | undefined
  try {
    db = new Database(path, { readonly: true, fileMustExist: true })
    db.pragma('schema_version') // the first read, which makes the index: a refusal shows here
    return db
  } catch (err) {
    db?.close()
    if (!NO_INDEX.has((err as { code?: string }).code ?? '') || !existsSync(path) || existsSync(`${path}-wal`)) throw err
    const image = readFileSync(path)
    if (image.length < 100 || image[18] !== WAL_FORMAT || image[19] !== WAL_FORMAT) throw err
    image[18] = image[19] = ROLLBACK_FORMAT
    return new Database(image, { readonly: true })
  }
}
