// The formats of the files sites are imported from and exported to: their names and the CSV header.
// Apart from the readers (import-formats.ts), so that the CLI's other commands load no parser.
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
