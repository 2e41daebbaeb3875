// Site records of the three forms, built from a dataset's parallel arrays, and their JSON.
// A site's JSON is made once, by JSON.stringify of its record, and kept on the dataset: an
// answer joins the fragments of its sites instead of serialising objects on every request.
import type { FastifyReply } from 'fastify'
import type { MapMinimalRecord, NearestRecord, SiteRecord } from './schemas/records.ts'
import type { Dataset } from './sites/dataset.ts'
import { kmFromHaverSin } from './sites/spatial.ts'

export const KM_PER_NM = 1.852
export const JSON_TYPE = 'application/json; charset=utf-8'

/** Sends JSON that is already serialised, as bytes (encoded once; the cache keeps the same Buffer). */
export function sendJson (reply: object, json: string): FastifyReply {
  // The route's reply is typed by its response schema; the JSON here was made from the same records.
  return (reply as FastifyReply).type(JSON_TYPE).send(Buffer.from(json))
}

/** Nautical miles, rounded to 3 decimals (1.852 m): finer would pretend a precision the data lacks. */
export const nmFromKm = (km: number) => Math.round((km / KM_PER_NM) * 1000) / 1000

/** `${PILOT_APP_URL}/pad/` */
export const linkPrefix = (pilotAppUrl: string) => `${pilotAppUrl}/pad/`

export function siteRecord (ds: Dataset, position: number, links: string): SiteRecord {
  const id = ds.ids[position]
  return {
    id,
    category: String(ds.categories[position]),
    name: ds.names[position],
    region: ds.regions[position],
    country: ds.countries[position],
    latitude: ds.lats[position],
    longitude: ds.lngs[position],
    helipaddy_link: links + id
  }
}

export function nearestRecord (ds: Dataset, position: number, h: number, links: string): NearestRecord {
  const id = ds.ids[position]
  return {
    id,
    category: String(ds.categories[position]),
    name: ds.names[position],
    latitude: ds.lats[position],
    longitude: ds.lngs[position],
    distance_nm: nmFromKm(kmFromHaverSin(h)),
    helipaddy_link: links + id
  }
}

export function mapMinimalRecord (ds: Dataset, position: number, links: string): MapMinimalRecord {
  const id = ds.ids[position]
  return { id, category: String(ds.categories[position]), latitude: ds.lats[position], longitude: ds.lngs[position], helipaddy_link: links + id }
}

interface Fragments { full: (string | undefined)[], minimal: (string | undefined)[] }
const fragmentCache = new WeakMap<Dataset, Map<string, Fragments>>()

function fragmentsOf (ds: Dataset, links: string): Fragments {
  let byLinks = fragmentCache.get(ds)
  if (!byLinks) fragmentCache.set(ds, byLinks = new Map())
  let f = byLinks.get(links)
  if (!f) byLinks.set(links, f = { full: new Array(ds.count), minimal: new Array(ds.count) })
  return f
}

/** JSON of a full record, made on first use and kept. */
export function siteJson (ds: Dataset, position: number, links: string): string {
  const f = fragmentsOf(ds, links)
  return f.full[position] ??= JSON.stringify(siteRecord(ds, position, links))
}

/** JSON array of full records. */
export function sitesJson (ds: Dataset, positions: ArrayLike<number>, links: string): string {
  if (positions.length === 0) return '[]'
  const f = fragmentsOf(ds, links)
  let out = '['
  for (let i = 0; i < positions.length; i++) {
    const p = positions[i]
    out += (i === 0 ? '' : ',') + (f.full[p] ??= JSON.stringify(siteRecord(ds, p, links)))
  }
  return out + ']'
}

/** JSON array of map-minimal records. */
export function minimalSitesJson (ds: Dataset, positions: ArrayLike<number>, links: string): string {
  if (positions.length === 0) return '[]'
  const f = fragmentsOf(ds, links)
  let out = '['
  for (let i = 0; i < positions.length; i++) {
    const p = positions[i]
    out += (i === 0 ? '' : ',') + (f.minimal[p] ??= JSON.stringify(mapMinimalRecord(ds, p, links)))
  }
  return out + ']'
}
