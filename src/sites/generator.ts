// Deterministic dummy sites near real towns on every continent: the sandbox dataset, and the
// large datasets of tests and benchmarks. Same seed and count → same sites, byte for byte.
import { obscure, type SiteRow } from './dataset-file.ts'

/** [town, country, region, latitude, longitude] */
const TOWNS: readonly (readonly [string, string, string, number, number])[] = [
  // Europe
  ['London', 'GB', 'EUR', 51.507, -0.128], ['Oxford', 'GB', 'EUR', 51.752, -1.258],
  ['Edinburgh', 'GB', 'EUR', 55.953, -3.189], ['Manchester', 'GB', 'EUR', 53.481, -2.243],
  ['Dublin', 'IE', 'EUR', 53.35, -6.26], ['Paris', 'FR', 'EUR', 48.857, 2.352], ['Lyon', 'FR', 'EUR', 45.764, 4.836],
  ['Nice', 'FR', 'EUR', 43.71, 7.262], ['Berlin', 'DE', 'EUR', 52.52, 13.405], ['Munich', 'DE', 'EUR', 48.137, 11.575],
  ['Hamburg', 'DE', 'EUR', 53.551, 9.994], ['Madrid', 'ES', 'EUR', 40.417, -3.704],
  ['Barcelona', 'ES', 'EUR', 41.385, 2.173], ['Lisbon', 'PT', 'EUR', 38.722, -9.139],
  ['Rome', 'IT', 'EUR', 41.903, 12.496], ['Milan', 'IT', 'EUR', 45.464, 9.19], ['Zurich', 'CH', 'EUR', 47.377, 8.542],
  ['Geneva', 'CH', 'EUR', 46.204, 6.143], ['Vienna', 'AT', 'EUR', 48.208, 16.373],
  ['Amsterdam', 'NL', 'EUR', 52.368, 4.904], ['Brussels', 'BE', 'EUR', 50.85, 4.352],
  ['Copenhagen', 'DK', 'EUR', 55.676, 12.568], ['Oslo', 'NO', 'EUR', 59.914, 10.752],
  ['Stockholm', 'SE', 'EUR', 59.329, 18.069], ['Helsinki', 'FI', 'EUR', 60.17, 24.938],
  ['Reykjavik', 'IS', 'EUR', 64.147, -21.942], ['Tromso', 'NO', 'EUR', 69.649, 18.956],
  ['Warsaw', 'PL', 'EUR', 52.23, 21.012], ['Prague', 'CZ', 'EUR', 50.076, 14.438],
  ['Budapest', 'HU', 'EUR', 47.498, 19.04], ['Athens', 'GR', 'EUR', 37.984, 23.728],
  ['Bucharest', 'RO', 'EUR', 44.427, 26.103], ['Kyiv', 'UA', 'EUR', 50.45, 30.523],
  ['Valletta', 'MT', 'EUR', 35.899, 14.514], ['Longyearbyen', 'SJ', 'EUR', 78.223, 15.647],
  // North and Central America, Caribbean
  ['New York', 'US', 'NAM', 40.713, -74.006], ['Boston', 'US', 'NAM', 42.36, -71.059],
  ['Washington', 'US', 'NAM', 38.907, -77.037], ['Miami', 'US', 'NAM', 25.762, -80.192],
  ['Chicago', 'US', 'NAM', 41.878, -87.63], ['Denver', 'US', 'NAM', 39.739, -104.99],
  ['Los Angeles', 'US', 'NAM', 34.052, -118.244], ['San Francisco', 'US', 'NAM', 37.775, -122.419],
  ['Seattle', 'US', 'NAM', 47.606, -122.332], ['Anchorage', 'US', 'NAM', 61.218, -149.9],
  ['Honolulu', 'US', 'NAM', 21.307, -157.858], ['Toronto', 'CA', 'NAM', 43.653, -79.383],
  ['Montreal', 'CA', 'NAM', 45.502, -73.567], ['Vancouver', 'CA', 'NAM', 49.283, -123.121],
  ['Mexico City', 'MX', 'NAM', 19.433, -99.133], ['Cancun', 'MX', 'NAM', 21.162, -86.851],
  ['Panama City', 'PA', 'NAM', 8.983, -79.517], ['Havana', 'CU', 'NAM', 23.113, -82.366],
  ['Nuuk', 'GL', 'NAM', 64.181, -51.694],
  // South America
  ['Sao Paulo', 'BR', 'SAM', -23.551, -46.633], ['Rio de Janeiro', 'BR', 'SAM', -22.907, -43.173],
  ['Buenos Aires', 'AR', 'SAM', -34.604, -58.382], ['Santiago', 'CL', 'SAM', -33.449, -70.669],
  ['Lima', 'PE', 'SAM', -12.046, -77.043], ['Bogota', 'CO', 'SAM', 4.711, -74.072],
  ['Quito', 'EC', 'SAM', -0.18, -78.468], ['Montevideo', 'UY', 'SAM', -34.901, -56.164],
  ['Ushuaia', 'AR', 'SAM', -54.801, -68.303],
  // Africa
  ['Cairo', 'EG', 'AFR', 30.044, 31.236], ['Marrakesh', 'MA', 'AFR', 31.629, -7.981],
  ['Lagos', 'NG', 'AFR', 6.524, 3.379], ['Accra', 'GH', 'AFR', 5.604, -0.187], ['Nairobi', 'KE', 'AFR', -1.292, 36.822],
  ['Addis Ababa', 'ET', 'AFR', 9.03, 38.74], ['Cape Town', 'ZA', 'AFR', -33.925, 18.424],
  ['Johannesburg', 'ZA', 'AFR', -26.204, 28.047], ['Dakar', 'SN', 'AFR', 14.717, -17.467],
  ['Libreville', 'GA', 'AFR', 0.416, 9.467], ['Tunis', 'TN', 'AFR', 36.806, 10.181],
  // Asia
  ['Tokyo', 'JP', 'ASI', 35.676, 139.65], ['Osaka', 'JP', 'ASI', 34.694, 135.502],
  ['Seoul', 'KR', 'ASI', 37.567, 126.978], ['Beijing', 'CN', 'ASI', 39.904, 116.407],
  ['Shanghai', 'CN', 'ASI', 31.23, 121.474], ['Hong Kong', 'HK', 'ASI', 22.319, 114.169],
  ['Singapore', 'SG', 'ASI', 1.352, 103.82], ['Bangkok', 'TH', 'ASI', 13.756, 100.502],
  ['Mumbai', 'IN', 'ASI', 19.076, 72.878], ['Delhi', 'IN', 'ASI', 28.704, 77.102],
  ['Dubai', 'AE', 'ASI', 25.205, 55.271], ['Istanbul', 'TR', 'ASI', 41.008, 28.978],
  ['Tel Aviv', 'IL', 'ASI', 32.085, 34.782], ['Almaty', 'KZ', 'ASI', 43.222, 76.851],
  ['Manila', 'PH', 'ASI', 14.6, 120.984], ['Jakarta', 'ID', 'ASI', -6.209, 106.846],
  ['Anadyr', 'RU', 'ASI', 64.735, 177.518], ['Petropavlovsk', 'RU', 'ASI', 53.037, 158.656],
  // Oceania
  ['Sydney', 'AU', 'OCE', -33.869, 151.209], ['Melbourne', 'AU', 'OCE', -37.814, 144.963],
  ['Perth', 'AU', 'OCE', -31.95, 115.86], ['Brisbane', 'AU', 'OCE', -27.47, 153.026],
  ['Auckland', 'NZ', 'OCE', -36.848, 174.763], ['Queenstown', 'NZ', 'OCE', -45.031, 168.663],
  ['Suva', 'FJ', 'OCE', -18.141, 178.442], ['Apia', 'WS', 'OCE', -13.833, -171.767],
  ['Nuku\'alofa', 'TO', 'OCE', -21.139, -175.204],
  // Antarctica
  ['McMurdo', 'AQ', 'ANT', -77.846, 166.676], ['Amundsen-Scott', 'AQ', 'ANT', -89.99, 139.27],
  ['Rothera', 'AQ', 'ANT', -67.568, -68.127]
]

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
  precision?: number
  /** sites lie within this many km of their town */
  spreadKm?: number
  /** share of sites placed near European towns (0..1); the rest near all towns alike */
  europeShare?: number
  /** override of the category weights, as [category, weight] pairs */
  categoryWeights?: [number, number][]
}

export function * generateSites (options: GenerateOptions): Generator<SiteRow> {
  const random = seededRandom(`${options.seed}`)
  const precision = options.precision ?? 3
  const spreadKm = options.spreadKm ?? 40
  const weights = options.categoryWeights ?? CATEGORY_WEIGHTS
  const totalWeight = weights.reduce((sum, [, w]) => sum + w, 0)
  const europe = TOWNS.filter((t) => t[2] === 'EUR')
  const width = Math.max(7, String(options.count).length)
  const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]

  for (let n = 1; n <= options.count; n++) {
    const town = options.europeShare !== undefined && random() < options.europeShare ? pick(europe) : pick(TOWNS)
    let r = random() * totalWeight
    let category = weights[weights.length - 1][0]
    for (const [c, w] of weights) {
      if ((r -= w) < 0) { category = c; break }
    }
    const distanceKm = spreadKm * Math.sqrt(random())
    const bearing = random() * 2 * Math.PI
    const latitude = Math.max(-90, Math.min(90, town[3] + (distanceKm * Math.cos(bearing)) / 111.32))
    const cosLat = Math.max(Math.cos(latitude * Math.PI / 180), 0.01)
    let longitude = town[4] + (distanceKm * Math.sin(bearing)) / (111.32 * cosLat)
    longitude = ((((longitude + 180) % 360) + 360) % 360) - 180
    const tags = new Set<string>()
    const tagCount = Math.floor(random() * 4)
    for (let t = 0; t < tagCount; t++) tags.add(pick(TAGS))
    const label = CATEGORY_NAMES[category] ?? 'Site'
    yield {
      id: `${options.prefix}-${String(n).padStart(width, '0')}`,
      category,
      name: `${town[0]} ${pick(NAME_WORDS)} ${label}`,
      region: town[2],
      country: town[1],
      latitude: obscure(latitude, precision),
      longitude: obscure(longitude, precision),
      tags: [...tags].sort()
    }
  }
}
