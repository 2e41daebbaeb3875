// What replacing a dataset file changes for partners, site by site: the ids added, the ids removed,
// and the ids kept whose served fields (category, name, region, country, coordinates) or tags differ.
import type Database from 'better-sqlite3'

/** How many ids of each kind a comparison names (the first in id order); the counts are exact. */
export const CHANGE_EXAMPLES = 10

interface IdList { count: number, first: string[] }

/** before: sites in the file replaced (0 when there is none); after: sites in the new file. */
export interface SiteChanges { before: number, after: number, added: IdList, removed: IdList, changed: IdList }

const FIELDS = ['category', 'name', 'region', 'country', 'latitude', 'longitude']

/** A tag of site `n` in one schema that site `n` does not have in the other. */
const tagOnlyIn = (from: string, to: string) =>
  `EXISTS (SELECT 1 FROM ${from}.site_tags x WHERE x.site_id = n.id AND ` +
  `NOT EXISTS (SELECT 1 FROM ${to}.site_tags y WHERE y.site_id = n.id AND y.tag = x.tag))`

const ADDED = 'SELECT n.id FROM main.sites n WHERE NOT EXISTS (SELECT 1 FROM old.sites o WHERE o.id = n.id) ' +
  'ORDER BY n.id'
const REMOVED = 'SELECT o.id FROM old.sites o WHERE NOT EXISTS (SELECT 1 FROM main.sites n WHERE n.id = o.id) ' +
  'ORDER BY o.id'
// tags compared as sets, both ways, by their primary key: a site's tags joined into one text each
// took twice as long on a million sites
const CHANGED = 'SELECT n.id FROM main.sites n JOIN old.sites o ON o.id = n.id WHERE ' +
  [...FIELDS.map((f) => `n.${f} IS NOT o.${f}`), tagOnlyIn('main', 'old'), tagOnlyIn('old', 'main')].join(' OR ') +
  ' ORDER BY n.id'

const none = (): IdList => ({ count: 0, first: [] })

function idList (db: Database.Database, sql: string): IdList {
  const list = none()
  for (const id of db.prepare(sql).pluck().iterate() as IterableIterator<string>) {
    if (list.count++ < CHANGE_EXAMPLES) list.first.push(id)
  }
  return list
}

/** The changes from the file at `oldPath` (none: empty) to `db`'s sites; outside a transaction (for ATTACH). */
export function compareSites (db: Database.Database, oldPath: string | undefined): SiteChanges {
  const after = db.prepare('SELECT count(*) FROM main.sites').pluck().get() as number
  if (oldPath === undefined) {
    const first = idList(db, `SELECT id FROM main.sites ORDER BY id LIMIT ${CHANGE_EXAMPLES}`).first
    return { before: 0, after, added: { count: after, first }, removed: none(), changed: none() }
  }
  // SQLite's URI file names are off in this build, so the file cannot be attached read-only by
  // name: query_only keeps every schema of the connection, the attached one too, from any write
  db.prepare('ATTACH ? AS old').run(oldPath)
  db.pragma('query_only = ON')
  try {
    return {
      before: db.prepare('SELECT count(*) FROM old.sites').pluck().get() as number,
      after,
      added: idList(db, ADDED),
      removed: idList(db, REMOVED),
      changed: idList(db, CHANGED)
    }
  } finally {
    db.pragma('query_only = OFF')
    db.exec('DETACH old')
  }
}
