// Site records of the three forms and their JSON. Each site's JSON is made once, on first use,
// kept as a string and joined into answers: no record object is serialised on the request path.
import type { MapMinimalRecord, NearestRecord, SiteRecord } from '../schemas/records.ts'
import type { Dataset } from '../sites/dataset.ts'
import { kmFromHaverSin } from '../sites/spatial.ts'

export const KM_PER_NM = 1.852
export const JSON_TYPE = 'application/json; charset=utf-8'
export const GEOJSON_TYPE = 'application/geo+json; charset=utf-8'

/** Nautical miles, rounded to 3 decimals (1.852 m): finer would pretend a precision the data lacks. */
export const nmFromKm = (km: number) => Math.round((km / KM_PER_NM) * 1000) / 1000

/** `${PILOT_APP_URL}/pad/` */
export const linkPrefix = (pilotAppUrl: string) => `${pilotAppUrl}/pad/`

export function siteRecord (ds: Dataset, position: number, links: string): SiteRecord {
  const id = ds.ids.at(position)
  return {
    id,
    category: String(ds.categories[position]),
    name: ds.names.at(position),
    region: ds.regions.at(position),
    country: ds.countries.at(position),
    latitude: ds.lats[position],
    longitude: ds.lngs[position],
    helipaddy_link: links + id
  }
}

export function nearestRecord (ds: Dataset, position: number, h: number, links: string): NearestRecord {
  const id = ds.ids.at(position)
  return {
    id,
    category: String(ds.categories[position]),
    name: ds.names.at(position),
    latitude: ds.lats[position],
    longitude: ds.lngs[position],
    distance_nm: nmFromKm(kmFromHaverSin(h)),
    helipaddy_link: links + id
  }
}

export function mapMinimalRecord (ds: Dataset, position: number, links: string): MapMinimalRecord {
  const id = ds.ids.at(position)
  return {
    id,
    category: String(ds.categories[position]),
    latitude: ds.lats[position],
    longitude: ds.lngs[position],
    helipaddy_link: links + id
  }
}

/** A GeoJSON Feature around a record. */
export const feature = (ds: Dataset, position: number, properties: object) => ({
  type: 'Feature',
  id: ds.ids.at(position),
  geometry: { type: 'Point', coordinates: [ds.lngs[position], ds.lats[position]] },
  properties
})

type Form = 'full' | 'minimal' | 'fullFeature' | 'minimalFeature'

/** The JSON of one record form for every site of a dataset, each made on first use. */
class FormJson {
  readonly json: (string | undefined)[] = []
  bytes = 0
  lastUsed = 0

  constructor (readonly dataset: Dataset, readonly make: (position: number) => string) {
    for (let i = 0; i < dataset.count; i++) this.json.push(undefined)
  }
}

/**
 * The records' JSON for one pilot-app URL (their links), every dataset's, kept within `maxBytes`: past it, the
 * forms least recently used are dropped whole, and their sites' JSON made again when next asked for.
 */
export class RecordJson {
  private readonly forms: FormJson[] = []
  private readonly byDataset = new WeakMap<Dataset, Partial<Record<Form, FormJson>>>()
  private readonly links: string
  private answers = 0
  private keptBytes = 0
  private droppedForms = 0

  constructor (pilotAppUrl: string, readonly maxBytes = Infinity) {
    this.links = linkPrefix(pilotAppUrl)
  }

  /** JSON of a full record. */
  site (ds: Dataset, position: number): string {
    return this.jsonOf(this.form(ds, 'full'), position)
  }

  /** JSON of a nearest record (its distance depends on the query, so it is not kept). */
  nearest (ds: Dataset, position: number, h: number): string {
    return JSON.stringify(nearestRecord(ds, position, h, this.links))
  }

  /** JSON array of full records. */
  sites (ds: Dataset, positions: ArrayLike<number>): string {
    return this.array(this.form(ds, 'full'), positions)
  }

  /** GeoJSON FeatureCollection of full records. */
  sitesGeo (ds: Dataset, positions: ArrayLike<number>): string {
    return `{"type":"FeatureCollection","features":${this.array(this.form(ds, 'fullFeature'), positions)}}`
  }

  /** JSON array of map-minimal records. */
  minimal (ds: Dataset, positions: ArrayLike<number>): string {
    return this.array(this.form(ds, 'minimal'), positions)
  }

  /** JSON array of map-minimal GeoJSON features. */
  minimalFeatures (ds: Dataset, positions: ArrayLike<number>): string {
    return this.array(this.form(ds, 'minimalFeature'), positions)
  }

  /** Bytes of a dataset's records' JSON kept now, every form. */
  datasetBytes (ds: Dataset): number {
    let bytes = 0
    for (const form of Object.values(this.byDataset.get(ds) ?? {})) bytes += form.bytes
    return bytes
  }

  /** Bytes of all records' JSON kept now: what FRAGMENTS_MAX_MB bounds. */
  get bytes (): number {
    return this.keptBytes
  }

  /** Forms dropped to stay within the bound, since the start. */
  get dropped (): number {
    return this.droppedForms
  }

  /** Forgets the forms of datasets no longer served (a reload swapped them out). */
  keepOnly (served: readonly Dataset[]): void {
    for (const form of [...this.forms]) if (!served.includes(form.dataset)) this.drop(form)
  }

  private array (form: FormJson, positions: ArrayLike<number>): string {
    const parts = new Array<string>(positions.length)
    for (let i = 0; i < positions.length; i++) parts[i] = this.jsonOf(form, positions[i])
    return `[${parts.join(',')}]`
  }

  private jsonOf (form: FormJson, position: number): string {
    let json = form.json[position]
    if (json === undefined) {
      json = form.json[position] = form.make(position)
      form.bytes += json.length
      this.keptBytes += json.length
    }
    return json
  }

  /** The form's strings, a new answer noted as its latest use, after making room if the bound is reached. */
  private form (ds: Dataset, name: Form): FormJson {
    if (this.keptBytes > this.maxBytes) this.makeRoom()
    let forms = this.byDataset.get(ds)
    if (forms === undefined) this.byDataset.set(ds, forms = {})
    let form = forms[name]
    if (form === undefined) {
      form = forms[name] = new FormJson(ds, this.maker(ds, name))
      this.forms.push(form)
    }
    form.lastUsed = ++this.answers
    return form
  }

  /** Drops the least recently used forms until the rest are within the bound. */
  private makeRoom (): void {
    const oldestFirst = [...this.forms].sort((a, b) => a.lastUsed - b.lastUsed)
    for (const form of oldestFirst) {
      if (this.keptBytes <= this.maxBytes) break
      this.drop(form)
      this.droppedForms++
    }
  }

  private drop (form: FormJson): void {
    this.forms.splice(this.forms.indexOf(form), 1)
    const forms = this.byDataset.get(form.dataset)!
    for (const name of Object.keys(forms) as Form[]) if (forms[name] === form) delete forms[name]
    this.keptBytes -= form.bytes
  }

  private maker (ds: Dataset, name: Form): (position: number) => string {
    const links = this.links
    switch (name) {
      case 'full': return (p) => JSON.stringify(siteRecord(ds, p, links))
      case 'minimal': return (p) => JSON.stringify(mapMinimalRecord(ds, p, links))
      case 'fullFeature': return (p) => JSON.stringify(feature(ds, p, siteRecord(ds, p, links)))
      case 'minimalFeature': return (p) => JSON.stringify(feature(ds, p, mapMinimalRecord(ds, p, links)))
    }
  }
}
