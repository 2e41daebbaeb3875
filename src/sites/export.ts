// The import formats, and sites written in them: `datasets export`, and the files of tests and benchmarks.
import { once } from 'node:events'
import { DatasetError, openDatasetFile } from './dataset.ts'
import type { SiteRow } from './dataset-file.ts'
import { replaceFile } from '../setup/replace-file.ts'

export type ImportFormat = 'csv' | 'geojson' | 'ndjson'
export const IMPORT_FORMATS: readonly ImportFormat[] = ['csv', 'geojson', 'ndjson']
export const CSV_HEADER = ['id', 'category', 'name', 'region', 'country', 'latitude', 'longitude', 'tags'] as const

export function formatFromPath (path: string): ImportFormat | undefined {
  const lower = path.toLowerCase()
  if (lower.endsWith('.csv')) return 'csv'
  if (lower.endsWith('.geojson') || lower.endsWith('.json')) return 'geojson'
  if (lower.endsWith('.ndjson') || lower.endsWith('.jsonl')) return 'ndjson'
  return undefined
}

const csvField = (value: string) => /[",\n\r]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value

function siteLine (site: SiteRow, format: ImportFormat): string {
  switch (format) {
    case 'csv':
      return [
        site.id, String(site.category), csvField(site.name), site.region, site.country,
        String(site.latitude), String(site.longitude), site.tags.join('|')
      ].join(',')
    case 'ndjson':
      return JSON.stringify(site)
    case 'geojson': {
      const { latitude, longitude, ...properties } = site
      const geometry = { type: 'Point', coordinates: [longitude, latitude] }
      return JSON.stringify({ type: 'Feature', geometry, properties })
    }
  }
}

/** Writes sites to a file in the format, streaming, whole or not at all (replaceFile). */
export function writeSitesFile (path: string, format: ImportFormat, sites: Iterable<SiteRow>): Promise<number> {
  return replaceFile(path, 0o644, async (out) => {
    let count = 0
    const write = async (text: string) => {
      if (!out.write(text)) await once(out, 'drain')
    }
    if (format === 'csv') await write(CSV_HEADER.join(',') + '\n')
    if (format === 'geojson') await write('{"type":"FeatureCollection","features":[\n')
    for (const site of sites) {
      const line = siteLine(site, format)
      await write(format === 'geojson' ? (count > 0 ? ',\n' : '') + line : line + '\n')
      count++
    }
    if (format === 'geojson') await write('\n]}\n')
    return count
  })
}

/** The sites of a dataset file, in id order, with their tags. */
export function * readSites (path: string): Generator<SiteRow> {
  // two connections: better-sqlite3 runs no other statement on a connection while one iterates
  const db = openDatasetFile(path)
  const tagDb = openDatasetFile(path)
  try {
    const tags = tagDb.prepare('SELECT tag FROM site_tags WHERE site_id = ? ORDER BY tag').pluck()
    const sites = db.prepare('SELECT id, category, name, region, country, latitude, longitude FROM sites ORDER BY id')
    for (const row of sites.iterate() as IterableIterator<Omit<SiteRow, 'tags'>>) {
      yield { ...row, tags: tags.all(row.id) as string[] }
    }
  } catch (err) {
    // SQLite's reason ("file is not a database") names no file
    throw new DatasetError(path, (err as Error).message)
  } finally {
    db.close()
    tagDb.close()
  }
}
