// The query parameters of several coordinates, a route's `path` and a map's `bbox`: each read into a value and its
// canonical text, or what is wrong in the words partners get in `data.params`.
import { KM_PER_NM } from '../answers/records.ts'
import { Route, type LatLng } from '../sites/route.ts'
import type { BoundingBox } from '../sites/areas.ts'

export type Parsed =
  | { value: unknown, text: string }
  | { malformed: string }
  | { coordinates: string }
  | { ambiguous: true }

const MIN_ROUTE_POINTS = 2
const MAX_ROUTE_POINTS = 100
const MAX_ROUTE_NM = 1000

export const DECIMAL = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/

/** A decimal number's value (-0 as 0; one beyond a double's range is infinite, so out of range), else undefined. */
const numberOf = (text: string) => DECIMAL.test(text) ? Number(text) + 0 : undefined

const LATITUDE_RULE = 'latitude must be a number from -90 to 90'
const LONGITUDE_RULE = 'longitude must be a number from -180 to 180'
const isLat = (n: number | undefined): n is number => n !== undefined && n >= -90 && n <= 90
const isLng = (n: number | undefined): n is number => n !== undefined && n >= -180 && n <= 180
const shown = (text: string) => JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text)

/** `lat,lng|lat,lng|…`: 2 to 100 points, a malformed pair reported before a bad coordinate, at most 1,000 nm. */
export function parseRoutePath (text: string): Parsed {
  const pieces = text.split('|')
  const count = text === '' ? 0 : pieces.length
  if (count < MIN_ROUTE_POINTS || count > MAX_ROUTE_POINTS) {
    const rule = `path must be ${MIN_ROUTE_POINTS} to ${MAX_ROUTE_POINTS} lat,lng points separated by |`
    return { malformed: `${rule}; it has ${count}` }
  }
  const pairs = pieces.map((piece) => piece.split(','))
  const notPair = pairs.findIndex((pair) => pair.length !== 2)
  if (notPair >= 0) return { malformed: `point ${notPair + 1}: ${shown(pieces[notPair])} is not a lat,lng pair` }
  const points: LatLng[] = []
  for (let i = 0; i < pairs.length; i++) {
    const lat = numberOf(pairs[i][0])
    const lng = numberOf(pairs[i][1])
    if (!isLat(lat)) return { coordinates: `point ${i + 1}: ${LATITUDE_RULE}` }
    if (!isLng(lng)) return { coordinates: `point ${i + 1}: ${LONGITUDE_RULE}` }
    points.push({ lat, lng })
  }
  if (points.some(({ lat, lng }) => lat === 0 && lng === 0)) return { ambiguous: true }
  const route = new Route(points)
  const nm = route.lengthKm / KM_PER_NM
  if (nm > MAX_ROUTE_NM) {
    return { malformed: `path is ${nm.toFixed(1)} nm long; a route may be at most ${MAX_ROUTE_NM} nm` }
  }
  return { value: route, text: points.map(({ lat, lng }) => `${lat},${lng}`).join('|') }
}

/** `west,south,east,north` in degrees; west > east crosses the antimeridian. */
export function parseBbox (text: string): Parsed {
  const parts = text.split(',')
  const numbers = parts.map(numberOf)
  if (parts.length !== 4 || numbers.some((n) => n === undefined)) {
    return { malformed: 'bbox must be four numbers: west,south,east,north (longitudes and latitudes in degrees)' }
  }
  const [west, south, east, north] = numbers as number[]
  if (!isLng(west)) return { coordinates: `west: ${LONGITUDE_RULE}` }
  if (!isLat(south)) return { coordinates: `south: ${LATITUDE_RULE}` }
  if (!isLng(east)) return { coordinates: `east: ${LONGITUDE_RULE}` }
  if (!isLat(north)) return { coordinates: `north: ${LATITUDE_RULE}` }
  if (south > north) return { coordinates: 'south must not be greater than north' }
  if (west === 0 && south === 0 && east === 0 && north === 0) return { ambiguous: true }
  const box: BoundingBox = { west, south, east, north }
  return { value: box, text: `${west},${south},${east},${north}` }
}

export const PARSERS: Record<string, (text: string) => Parsed> = { route: parseRoutePath, bbox: parseBbox }
