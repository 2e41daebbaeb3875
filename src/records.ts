// Site records of the three forms, built from a dataset's parallel arrays.
import type { MapMinimalRecord, NearestRecord, SiteRecord } from './schemas/records.ts'
import type { Dataset } from './sites/dataset.ts'
import { kmFromHaverSin } from './sites/spatial.ts'

export const KM_PER_NM = 1.852

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
