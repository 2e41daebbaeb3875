// Deterministic dummy sites near real towns on every continent: the sandbox dataset, and the
// large datasets of tests and benchmarks. Same seed and count → same sites, byte for byte.
import { obscure, type SiteRow } from './dataset-file.ts'

/** [town, country, latitude, longitude], by region */
const TOWNS_BY_REGION: Record<string, [string, string, number, number][]> = {
  EUR: [
    ['London', 'GB', 51.507, -0.128], ['Oxford', 'GB', 51.752, -1.258], ['Edinburgh', 'GB', 55.953, -3.189],
    ['Manchester', 'GB', 53.481, -2.243], ['Dublin', 'IE', 53.35, -6.26], ['Paris', 'FR', 48.857, 2.352],
    ['Lyon', 'FR', 45.764, 4.836], ['Nice', 'FR', 43.71, 7.262], ['Berlin', 'DE', 52.52, 13.405],
    ['Munich', 'DE', 48.137, 11.575], ['Hamburg', 'DE', 53.551, 9.994], ['Madrid', 'ES', 40.417, -3.704],
    ['Barcelona', 'ES', 41.385, 2.173], ['Lisbon', 'PT', 38.722, -9.139], ['Rome', 'IT', 41.903, 12.496],
    ['Milan', 'IT', 45.464, 9.19], ['Zurich', 'CH', 47.377, 8.542], ['Geneva', 'CH', 46.204, 6.143],
    ['Vienna', 'AT', 48.208, 16.373], ['Amsterdam', 'NL', 52.368, 4.904], ['Brussels', 'BE', 50.85, 4.352],
    ['Copenhagen', 'DK', 55.676, 12.568], ['Oslo', 'NO', 59.914, 10.752], ['Stockholm', 'SE', 59.329, 18.069],
    ['Helsinki', 'FI', 60.17, 24.938], ['Reykjavik', 'IS', 64.147, -21.942], ['Tromso', 'NO', 69.649, 18.956],
    ['Warsaw', 'PL', 52.23, 21.012], ['Prague', 'CZ', 50.076, 14.438], ['Budapest', 'HU', 47.498, 19.04],
    ['Athens', 'GR', 37.984, 23.728], ['Bucharest', 'RO', 44.427, 26.103], ['Kyiv', 'UA', 50.45, 30.523],
    ['Valletta', 'MT', 35.899, 14.514], ['Longyearbyen', 'SJ', 78.223, 15.647]
  ],
  NAM: [
    ['New York', 'US', 40.713, -74.006], ['Boston', 'US', 42.36, -71.059], ['Washington', 'US', 38.907, -77.037],
    ['Miami', 'US', 25.762, -80.192], ['Chicago', 'US', 41.878, -87.63], ['Denver', 'US', 39.739, -104.99],
    ['Los Angeles', 'US', 34.052, -118.244], ['San Francisco', 'US', 37.775, -122.419],
    ['Seattle', 'US', 47.606, -122.332], ['Anchorage', 'US', 61.218, -149.9], ['Honolulu', 'US', 21.307, -157.858],
    ['Toronto', 'CA', 43.653, -79.383], ['Montreal', 'CA', 45.502, -73.567], ['Vancouver', 'CA', 49.283, -123.121],
    ['Mexico City', 'MX', 19.433, -99.133], ['Cancun', 'MX', 21.162, -86.851], ['Panama City', 'PA', 8.983, -79.517],
    ['Havana', 'CU', 23.113, -82.366], ['Nuuk', 'GL', 64.181, -51.694]
  ],
  SAM: [
    ['Sao Paulo', 'BR', -23.551, -46.633], ['Rio de Janeiro', 'BR', -22.907, -43.173],
    ['Buenos Aires', 'AR', -34.604, -58.382], ['Santiago', 'CL', -33.449, -70.669], ['Lima', 'PE', -12.046, -77.043],
    ['Bogota', 'CO', 4.711, -74.072], ['Quito', 'EC', -0.18, -78.468], ['Montevideo', 'UY', -34.901, -56.164],
    ['Ushuaia', 'AR', -54.801, -68.303]
  ],
  AFR: [
    ['Cairo', 'EG', 30.044, 31.236], ['Marrakesh', 'MA', 31.629, -7.981], ['Lagos', 'NG', 6.524, 3.379],
    ['Accra', 'GH', 5.604, -0.187], ['Nairobi', 'KE', -1.292, 36.822], ['Addis Ababa', 'ET', 9.03, 38.74],
    ['Cape Town', 'ZA', -33.925, 18.424], ['Johannesburg', 'ZA', -26.204, 28.047], ['Dakar', 'SN', 14.717, -17.467],
    ['Libreville', 'GA', 0.416, 9.467], ['Tunis', 'TN', 36.806, 10.181]
  ],
  ASI: [
    ['Tokyo', 'JP', 35.676, 139.65], ['Osaka', 'JP', 34.694, 135.502], ['Seoul', 'KR', 37.567, 126.978],
    ['Beijing', 'CN', 39.904, 116.407], ['Shanghai', 'CN', 31.23, 121.474], ['Hong Kong', 'HK', 22.319, 114.169],
    ['Singapore', 'SG', 1.352, 103.82], ['Bangkok', 'TH', 13.756, 100.502], ['Mumbai', 'IN', 19.076, 72.878],
    ['Delhi', 'IN', 28.704, 77.102], ['Dubai', 'AE', 25.205, 55.271], ['Istanbul', 'TR', 41.008, 28.978],
    ['Tel Aviv', 'IL', 32.085, 34.782], ['Almaty', 'KZ', 43.222, 76.851], ['Manila', 'PH', 14.6, 120.984],
    ['Jakarta', 'ID', -6.209, 106.846], ['Anadyr', 'RU', 64.735, 177.518], ['Petropavlovsk', 'RU', 53.037, 158.656]
  ],
  OCE: [
    ['Sydney', 'AU', -33.869, 151.209], ['Melbourne', 'AU', -37.814, 144.963], ['Perth', 'AU', -31.95, 115.86],
    ['Brisbane', 'AU', -27.47, 153.026], ['Auckland', 'NZ', -36.848, 174.763], ['Queenstown', 'NZ', -45.031, 168.663],
    ['Suva', 'FJ', -18.141, 178.442], ['Apia', 'WS', -13.833, -171.767], ['Nuku\'alofa', 'TO', -21.139, -175.204]
  ],
  ANT: [
    ['McMurdo', 'AQ', -77.846, 166.676], ['Amundsen-Scott', 'AQ', -89.99, 139.27], ['Rothera', 'AQ', -67.568, -68.127]
  ]
}
const TOWNS = Object.entries(TOWNS_BY_REGION)
  .flatMap(([region, towns]) => towns.map(([town, country, lat, lon]) => ({ town, country, region, lat, lon })))

const CATEGORY_NAMES: Record<number, string> = {
  2: 'B&B', 3: 'Landing Site', 4: 'Hotel', 5: 'Pub', 6: 'Restaurant', 7: 'Aerodrome', 8: 'Estate', 9: 'Heliport'
}

/** Relative weights of categories 2..9. */
const CATEGORY_WEIGHTS: [number, number][] = [[2, 12], [3, 25], [4, 15], [5, 12], [6, 12], [7, 8], [8, 8], [9, 8]]

const NAME_WORDS = [
  'Oak', 'Rose', 'Mill', 'Lake', 'River', 'Hill', 'Manor', 'Park', 'Bridge', 'Castle', 'Forest', 'Harbour', 'Meadow',
  'Valley', 'Stone', 'Willow', 'Crown', 'Eagle', 'North', 'South', 'East', 'West', 'Old', 'Grand', 'Royal', 'Summit'
]
const TAGS = [
  '~helipad', '~grass', '~hard-surface', '~fuel', '~night-landing', '~ppr', '~customs', '~evtol-charging', '~uav',
  '~medical', '~parking', '~golf', '~wedding', '~coastal', '~mountain', '~restaurant-on-site'
]

/** sfc32, seeded from a string: small, fast and the same on every platform. */
export function seededRandom (seed: string): () => number {
  let h = 1779033703 ^ seed.length
  for (let i = 0; i < seed.length; i++) {
    h = Math.imul(h ^ seed.charCodeAt(i), 3432918353)
    h = (h << 13) | (h >>> 19)
  }
  const next = () => {
    h = Math.imul(h ^ (h >>> 16), 2246822507)
    h = Math.imul(h ^ (h >>> 13), 3266489909)
    return (h ^= h >>> 16) >>> 0
  }
  let a = next(); let b = next(); let c = next(); let d = next()
  return () => {
    a |= 0; b |= 0; c |= 0; d |= 0
    const t = (((a + b) | 0) + d) | 0
    d = (d + 1) | 0
    a = b ^ (b >>> 9)
    b = (c + (c << 3)) | 0
    c = (c << 21) | (c >>> 11)
    c = (c + t) | 0
    return (t >>> 0) / 4294967296
  }
}

export interface GenerateOptions {
  count: number
  seed: string
  /** id prefix, e.g. "sbx" → sbx-0000001 */
  prefix: string
  /** share of sites placed near European towns (0..1); the rest near all towns alike */
  europeShare?: number
  /** override of the category weights, as [category, weight] pairs */
  categoryWeights?: [number, number][]
}

/** Decimals of the generated coordinates, as a generated file's meta records. */
export const GENERATED_PRECISION = 3
/** Sites lie within this many km of their town. */
const SPREAD_KM = 40

export function * generateSites (options: GenerateOptions): Generator<SiteRow> {
  const random = seededRandom(options.seed)
  const weights = options.categoryWeights ?? CATEGORY_WEIGHTS
  const totalWeight = weights.reduce((sum, [, w]) => sum + w, 0)
  const europe = TOWNS.filter((t) => t.region === 'EUR')
  const width = Math.max(7, String(options.count).length)
  const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]

  for (let n = 1; n <= options.count; n++) {
    const town = options.europeShare !== undefined && random() < options.europeShare ? pick(europe) : pick(TOWNS)
    let r = random() * totalWeight
    let category = weights[weights.length - 1][0]
    for (const [c, w] of weights) {
      if ((r -= w) < 0) { category = c; break }
    }
    const distanceKm = SPREAD_KM * Math.sqrt(random())
    const bearing = random() * 2 * Math.PI
    const latitude = Math.max(-90, Math.min(90, town.lat + (distanceKm * Math.cos(bearing)) / 111.32))
    const cosLat = Math.max(Math.cos(latitude * Math.PI / 180), 0.01)
    let longitude = town.lon + (distanceKm * Math.sin(bearing)) / (111.32 * cosLat)
    longitude = ((((longitude + 180) % 360) + 360) % 360) - 180
    const tags = new Set<string>()
    const tagCount = Math.floor(random() * 4)
    for (let t = 0; t < tagCount; t++) tags.add(pick(TAGS))
    const label = CATEGORY_NAMES[category] ?? 'Site'
    yield {
      id: `${options.prefix}-${String(n).padStart(width, '0')}`,
      category,
      name: `${town.town} ${pick(NAME_WORDS)} ${label}`,
      region: town.region,
      country: town.country,
      latitude: obscure(latitude, GENERATED_PRECISION),
      longitude: obscure(longitude, GENERATED_PRECISION),
      tags: [...tags].sort()
    }
  }
}
