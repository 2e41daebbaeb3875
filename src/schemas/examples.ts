// Example answers for the OpenAPI document, shaped as the service answers (made with a sandbox
// dataset; test/routes/openapi.test.ts checks each against its schema).

const site = (id: string, category: string, name: string, latitude: number, longitude: number) => ({
  id, category, name, region: 'EUR', country: 'GB', latitude, longitude,
  helipaddy_link: `https://helipaddy.com/pad/${id}`
})
const hotel = site('sbx-0004217', '4', 'Riverside Hotel Helipad', 51.508, -0.126)
const aerodrome = site('sbx-0011830', '7', 'Battersea Heliport', 51.47, -0.179)
const feature = (record: { id: string, latitude: number, longitude: number }) => ({
  type: 'Feature', id: record.id, geometry: { type: 'Point', coordinates: [record.longitude, record.latitude] },
  properties: record
})
const minimal = ({ id, category, latitude, longitude, helipaddy_link: link }: typeof hotel) =>
  ({ id, category, latitude, longitude, helipaddy_link: link })
const nearest = ({ id, category, name, latitude, longitude, helipaddy_link: link }: typeof hotel, distance: number) =>
  ({ id, category, name, latitude, longitude, distance_nm: distance, helipaddy_link: link })

/** An answer's format=geojson form: its records as features, a page's paging fields beside them. */
export function geoOf (value: unknown) {
  const { sites, ...paging } = (Array.isArray(value) ? { sites: value } : value) as { sites: typeof hotel[] }
  return { type: 'FeatureCollection', ...paging, features: sites.map(feature) }
}

const NOW = '2026-11-23T10:15:02.118Z'
/** A window of the usage example at NOW: what is left and when it resets follow from the rest. */
const usageWindow = (limit: number, used: number, seconds: number, resetsIn: number, rows: number) => ({
  limit, used, remaining: limit - used, window_seconds: seconds, resets_in_seconds: resetsIn,
  resets_at: new Date(Date.parse(NOW) + resetsIn * 1000).toISOString(), rows
})

/** An example answer of the OpenAPI document. */
export interface Example { summary: string, value: unknown }

const one = (summary: string, value: unknown): Record<string, Example> => ({ answer: { summary, value } })

export const EXAMPLES = {
  sites: one('Sites near Westminster, nearest first', [hotel, aerodrome]),
  nearest: {
    found: { summary: 'The nearest site', value: nearest(hotel, 0.108) },
    none: { summary: 'Nothing within the radius', value: null }
  },
  byTag: one('Page 1 of the sites tagged ~helipad', {
    tag: '~helipad', page: 1, per_page: 2, total: 3, total_pages: 2, sites: [minimal(hotel), minimal(aerodrome)]
  }),
  alongRoute: one('Sites within 2 km of the route 51.47,-0.179|51.52,-0.1 (Battersea Heliport to the City)', [
    { ...aerodrome, along_nm: 0, offset_nm: 0 },
    { ...hotel, along_nm: 3.016, offset_nm: 0.187 }
  ]),
  byBbox: one('Page 1 of the sites in a box over central London', {
    bbox: [-0.2, 51.45, -0.05, 51.55], page: 1, per_page: 200, total: 2, total_pages: 1,
    sites: [minimal(hotel), minimal(aerodrome)]
  }),
  site: {
    found: { summary: 'A site', value: hotel },
    none: { summary: 'Unknown, or outside the allow-list', value: null }
  },
  usage: one('The three windows', {
    timestamp: NOW,
    partner: {
      id: 'ptn_3f2a9c0d71be', slug: 'acme-air', name: 'Acme Air Ambulance', environment: 'sandbox', is_sandbox: true
    },
    client: { ip: '203.0.113.7' },
    windows: {
      minute: usageWindow(90, 12, 60, 41, 640),
      hour: usageWindow(1200, 310, 3600, 2980, 15020),
      day: usageWindow(12000, 2411, 86400, 50123, 118300)
    }
  }),
  categories: one('A partner of hotels and aerodromes', {
    categories: [{ id: 4, name: 'Hotel' }, { id: 7, name: 'Aerodrome' }]
  }),
  tags: one('Tags with their sites this partner may see', {
    tags: [{ tag: '~fuel', sites: 214 }, { tag: '~helipad', sites: 1830 }, { tag: '~night-landing', sites: 97 }]
  })
}
