// Category names and tag counts, as a partner discovers them (/categories, /tags).
import { tagSitesIn, type Dataset } from './dataset.ts'
import type Database from 'better-sqlite3'
import { CATEGORY_NAMES_META, readDatasetMeta } from './dataset-file.ts'

/** The named categories; 8 and above are named by the operator in the dataset file. */
const CATEGORY_NAMES: Readonly<Record<number, string>> = Object.freeze({
  2: 'B&B', 3: 'Landing Site', 4: 'Hotel', 5: 'Pub', 6: 'Restaurant', 7: 'Aerodrome'
})

const parsed = new WeakMap<object, Record<string, string>>()

function operatorNames (ds: Pick<Dataset, 'meta'>): Record<string, string> {
  let names = parsed.get(ds.meta)
  if (names === undefined) {
    const text = (ds.meta as unknown as Record<string, string | undefined>)[CATEGORY_NAMES_META]
    names = {}
    try {
      const value: unknown = text === undefined ? {} : JSON.parse(text)
      if (value !== null && typeof value === 'object') {
        for (const [id, name] of Object.entries(value)) {
          if (typeof name === 'string' && Number(id) >= 8) names[id] = name
        }
      }
    } catch { /* a malformed entry names nothing */ }
    parsed.set(ds.meta, names)
  }
  return names
}

/** Categories 8 and above of a dataset file without a name of the operator's (served as `Category N`). */
export function unnamedCategories (db: Database.Database): number[] {
  const ids = db.prepare('SELECT DISTINCT category FROM sites WHERE category >= 8 ORDER BY category').pluck().all()
  const names = operatorNames({ meta: readDatasetMeta(db) })
  return (ids as number[]).filter((id) => names[String(id)] === undefined)
}

/** The categories a partner may use, ascending, named: the fixed names, else the dataset's own, else `Category N`. */
export const categoryList = (ds: Pick<Dataset, 'meta'>, allowed: readonly number[]) =>
  allowed.map((id) => ({ id, name: CATEGORY_NAMES[id] ?? operatorNames(ds)[String(id)] ?? `Category ${id}` }))

/**
 * The dataset's tags with the number of their sites in the allowed categories (tags with none
 * left out), by tag: the lists the by-tag pages are cut from, so the counts are their totals.
 */
export function tagCounts (ds: Dataset, allowed: readonly number[]): { tag: string, sites: number }[] {
  const out: { tag: string, sites: number }[] = []
  for (const tag of ds.tagSites.keys()) {
    const sites = tagSitesIn(ds, tag, allowed).length
    if (sites > 0) out.push({ tag, sites })
  }
  return out.sort((a, b) => (a.tag < b.tag ? -1 : a.tag > b.tag ? 1 : 0))
}
