// Route.locate against an independent reference (test/route-reference.ts: per leg, the textbook
// cross-track and along-track formulas from haversine distances and bearings), on thousands of
// random routes and sites: across the antimeridian, over the poles, with zero-length legs and
// out-and-back routes, at the route's points, and the 1 µm tie rule. Then the two parsers of
// src/http/area-params.ts, result by result.
import t, { type Test } from 'tap'
import { Route, TIE_RADIANS, capBoxes, type Box, type LatLng } from '../../src/sites/route.ts'
import { parseBbox, parseRoutePath } from '../../src/http/area-params.ts'
import { seededRandom } from '../../src/sites/generator.ts'
import {
  EARTH_KM, bearing, destination, distance, nearestOnRoute, routeKm, type Point
} from '../route-reference.ts'

const RAD = Math.PI / 180
const OFFSET_KM = 1e-6 // 1 mm
const ALONG_KM = 1e-3 // 1 m

const wrap = (lng: number) => lng > 180 ? lng - 360 : lng < -180 ? lng + 360 : lng

type Kind = 'local' | 'antimeridian' | 'polar' | 'over-pole' | 'zero-leg' | 'out-and-back' | 'back-and-forth'
const KINDS: Kind[] = ['local', 'antimeridian', 'polar', 'over-pole', 'zero-leg', 'out-and-back', 'back-and-forth']

/** A random route of 2 to 8 points, legs of up to ~300 km, of the given kind. */
function randomRoute (random: () => number, kind: Kind): Point[] {
  const count = 2 + Math.floor(random() * 7)
  let start: Point
  if (kind === 'antimeridian') start = { lat: random() * 140 - 70, lng: wrap(178 + random() * 4) }
  else if (kind === 'polar') start = { lat: (random() < 0.5 ? 1 : -1) * (84 + random() * 6), lng: random() * 360 - 180 }
  else start = { lat: random() * 160 - 80, lng: random() * 360 - 180 }
  if (kind === 'over-pole') {
    // through a pole itself, or over it between two points on opposite meridians
    const north = random() < 0.5 ? 1 : -1
    const lng = random() * 360 - 180
    const far = wrap(lng + 180)
    const pole = random() < 0.5
      ? [{ lat: north * 90, lng: random() * 360 - 180 }]
      : []
    return [{ lat: north * (86 + random() * 3), lng }, ...pole, { lat: north * (86 + random() * 3), lng: far }]
  }
  const points = [start]
  for (let i = 1; i < count; i++) {
    const step = (random() < 0.2 ? 1 : 300) * random() / EARTH_KM
    points.push(destination(points[i - 1], random() * 2 * Math.PI, step))
  }
  if (kind === 'zero-leg') {
    const at = Math.floor(random() * points.length)
    points.splice(at, 0, { ...points[at] })
  }
  if (kind === 'out-and-back') points.push(...points.slice(0, -1).reverse())
  if (kind === 'back-and-forth') {
    // A→B→A→B…: every site is as near to each leg
    const [a, b] = points
    points.length = 0
    for (let i = 0; i < count; i++) points.push(i % 2 === 0 ? a : b)
  }
  return points
}

/** Sites near a route (around a point of a leg), at its points, and anywhere. */
function randomSites (random: () => number, points: Point[], count: number): Point[] {
  const sites: Point[] = []
  for (let k = 0; k < count; k++) {
    const kind = random()
    const i = Math.floor(random() * (points.length - 1))
    if (kind < 0.1) {
      sites.push({ ...points[Math.floor(random() * points.length)] })
    } else if (kind < 0.9) {
      const a = points[i]
      const b = points[i + 1]
      const d = distance(a, b)
      const on = destination(a, bearing(a, b), d * (random() * 1.4 - 0.2))
      const off = (random() < 0.3 ? 0.5 : 150) * random() / EARTH_KM
      sites.push(destination(on, random() * 2 * Math.PI, off))
    } else {
      sites.push({ lat: random() * 180 - 90, lng: random() * 360 - 180 })
    }
  }
  return sites
}

t.test('locate agrees with the reference on random routes and sites', async (t) => {
  const random = seededRandom('route-locate')
  const counts: Record<string, number> = {}
  let compared = 0
  let worstOffset = 0
  let worstAlong = 0
  for (let r = 0; r < 3500; r++) {
    const kind = KINDS[r % KINDS.length]
    const points = randomRoute(random, kind)
    const route = new Route(points)
    if (Math.abs(route.lengthKm - routeKm(points)) > OFFSET_KM) {
      t.fail('route length differs', { points, got: route.lengthKm, expected: routeKm(points) })
      return
    }
    for (const site of randomSites(random, points, 12)) {
      const expected = nearestOnRoute(points, site)
      const hint = Math.floor(random() * (points.length - 1))
      const radians = route.locate(site.lat, site.lng, hint)
      const [offset, along, alongRadians] = [radians * EARTH_KM, route.along * EARTH_KM, route.along]
      worstOffset = Math.max(worstOffset, Math.abs(offset - expected.offsetKm))
      worstAlong = Math.max(worstAlong, Math.abs(along - expected.alongKm))
      if (Math.abs(offset - expected.offsetKm) > OFFSET_KM || Math.abs(along - expected.alongKm) > ALONG_KM) {
        const leg = route.leg
        t.fail('locate differs from the reference', { kind, points, site, hint, offset, along, leg, expected })
        return
      }
      const again = route.locate(site.lat, site.lng, 0)
      if (again !== radians || route.along !== alongRadians) {
        t.fail('the hint changed the answer', { points, site, hint })
        return
      }
      // the place found is on the route, at that distance from the site
      const place = route.pointAt(route.leg, route.t)
      if (Math.abs(distance(place, site) * EARTH_KM - offset) > OFFSET_KM) {
        t.fail('pointAt(leg, t) is not at offset from the site', { points, site, place })
        return
      }
      counts[kind] = (counts[kind] ?? 0) + 1
      compared++
    }
  }
  t.equal(compared, 3500 * 12)
  t.ok(KINDS.every((k) => counts[k] > 5000), `every kind of route compared: ${JSON.stringify(counts)}`)
  t.pass(`worst differences: offset ${(worstOffset * 1e9).toFixed(1)} µm, along ${(worstAlong * 1e6).toFixed(1)} mm`)
})

t.test('out-and-back: each site at its earlier nearest point', async (t) => {
  const random = seededRandom('out-and-back')
  for (let r = 0; r < 300; r++) {
    const out = randomRoute(random, 'local')
    const points = [...out, ...out.slice(0, -1).reverse()]
    const route = new Route(points)
    const outKm = routeKm(out)
    for (const site of randomSites(random, out, 10)) {
      route.locate(site.lat, site.lng, Math.floor(random() * (points.length - 1)))
      const expected = nearestOnRoute(out, site) // the outbound half alone
      if (route.along * EARTH_KM > outKm + ALONG_KM || Math.abs(route.along * EARTH_KM - expected.alongKm) > ALONG_KM) {
        t.fail('a site placed on the way back', { points, site, along: route.along * EARTH_KM, expected })
        return
      }
    }
  }
  // A→B→A→B: the point B is reached three times; the first counts
  const a = { lat: 47, lng: 8 }
  const b = { lat: 47.5, lng: 8.5 }
  const route = new Route([a, b, a, b])
  t.ok(route.locate(b.lat, b.lng, 2) < 1e-15)
  t.equal(route.leg, 0)
  t.ok(Math.abs(route.along - distance(a, b)) < 1e-15, 'B: along is the first leg')
  t.ok(route.locate(a.lat, a.lng, 2) < 1e-15)
  t.equal(route.leg, 0)
  t.ok(route.along < 1e-15, 'A: the start, not the end of leg 2')
})

t.test('sites at the route\'s points, zero-length legs', async (t) => {
  const points = [{ lat: 20, lng: 20 }, { lat: 20.5, lng: 20 }, { lat: 20.5, lng: 20 }, { lat: 21, lng: 21 }]
  const route = new Route(points)
  t.equal(route.legs[1], 0, 'the repeated point is a leg of length 0')
  const firstKm = distance(points[0], points[1]) * EARTH_KM
  for (const [i, p] of points.entries()) {
    t.ok(route.locate(p.lat, p.lng, 2) * EARTH_KM < 1e-9, `point ${i + 1} is on the route`)
    const expectedKm = i === 0 ? 0 : i < 3 ? firstKm : routeKm(points)
    t.ok(Math.abs(route.along * EARTH_KM - expectedKm) < 1e-9, `point ${i + 1}: along ${expectedKm} km`)
    t.equal(route.leg, i === 0 ? 0 : i < 3 ? 0 : 2, 'the earliest leg that reaches it')
  }
  // near the repeated point, on the side of the last leg
  const site = { lat: 20.6, lng: 20.3 }
  route.locate(site.lat, site.lng, 1)
  const expected = nearestOnRoute(points, site)
  t.ok(Math.abs(route.offset * EARTH_KM - expected.offsetKm) < OFFSET_KM)
  t.ok(Math.abs(route.along * EARTH_KM - expected.alongKm) < ALONG_KM)
  t.equal(expected.leg, 2)
  // a route of two equal points: every site measures to that point, along 0
  const still = new Route([{ lat: -33, lng: 151 }, { lat: -33, lng: 151 }])
  t.ok(Math.abs(still.locate(-33.1, 151) * EARTH_KM - distance({ lat: -33, lng: 151 }, { lat: -33.1, lng: 151 }) *
    EARTH_KM) < OFFSET_KM)
  t.same([still.along, still.length], [0, 0])
})

t.test('over a pole and across the antimeridian', async (t) => {
  // (88, 0) → (88, 180) passes over the north pole: 4° long, the pole at 2°
  const polar = new Route([{ lat: 88, lng: 0 }, { lat: 88, lng: 180 }])
  t.ok(Math.abs(polar.length - 4 * RAD) < 1e-15)
  const cases: [Point, number, number][] = [
    [{ lat: 89, lng: 0 }, 0, 1], [{ lat: 90, lng: 0 }, 0, 2], [{ lat: 90, lng: -123 }, 0, 2],
    [{ lat: 89, lng: 180 }, 0, 3], [{ lat: 89, lng: -180 }, 0, 3],
    // off the meridian by 90°: the cross-track distance is asin(cos 89.5°) = 0.5°, the foot the pole
    [{ lat: 89.5, lng: 90 }, 0.5, 2], [{ lat: 89.5, lng: -90 }, 0.5, 2],
    // beyond the ends
    [{ lat: 87, lng: 0 }, 1, 0], [{ lat: 87, lng: 180 }, 1, 4]
  ]
  for (const [site, offsetDeg, alongDeg] of cases) {
    const offset = polar.locate(site.lat, site.lng)
    t.ok(Math.abs(offset - offsetDeg * RAD) * EARTH_KM < OFFSET_KM, `${site.lat},${site.lng}: offset ${offsetDeg}°`)
    t.ok(Math.abs(polar.along - alongDeg * RAD) * EARTH_KM < ALONG_KM, `${site.lat},${site.lng}: along ${alongDeg}°`)
  }
  // (10, 179.5) → (10, -179.5): a 1° leg across the antimeridian, not 359° around the world
  const across = new Route([{ lat: 10, lng: 179.5 }, { lat: 10, lng: -179.5 }])
  t.ok(across.lengthKm < 110, `${across.lengthKm} km`)
  for (const lng of [179.5, 179.8, 180, -180, -179.9, -179.5]) {
    const site = { lat: 10.01, lng }
    const expected = nearestOnRoute(across.points, site)
    const offset = across.locate(site.lat, site.lng) * EARTH_KM
    t.ok(Math.abs(offset - expected.offsetKm) < OFFSET_KM && offset < 1.2, `${lng}: ${offset} km off`)
    t.ok(Math.abs(across.along * EARTH_KM - expected.alongKm) < ALONG_KM, `${lng}: along ${expected.alongKm} km`)
  }
  t.equal(across.locate(10, 180), across.locate(10, -180), '180 and -180 are the same place')
})

t.test('ties: within 1 µm the earlier point counts, beyond it the nearer', async (t) => {
  // A U open to the south, mirrored about the equator: legs 1 and 3 are mirror images, and a site
  // on the equator is as near to both (leg 2 is ~4.5° away)
  const points = [{ lat: -1, lng: 0 }, { lat: -1, lng: 5 }, { lat: 1, lng: 5 }, { lat: 1, lng: 0 }]
  const route = new Route(points)
  const leg3 = route.starts[2]
  const nearerTo3By = (µm: number) => (µm * 1e-9 / EARTH_KM / 2) / RAD // latitude that moves the site so
  for (const [µm, leg] of [[0, 0], [0.5, 0], [0.9, 0], [-0.5, 0], [-5, 0], [1.5, 2], [5, 2]] as const) {
    const lat = nearerTo3By(µm)
    for (const hint of [0, 1, 2]) {
      route.locate(lat, 0.5, hint)
      t.equal(route.leg, leg, `${µm} µm nearer to leg 3, hint ${hint}: leg ${leg + 1}`)
    }
    const expected = nearestOnRoute(points, { lat, lng: 0.5 })
    t.equal(expected.leg, leg, 'and the reference agrees')
    t.ok(Math.abs(route.along * EARTH_KM - expected.alongKm) < ALONG_KM)
    if (leg === 2) t.ok(route.along > leg3)
  }
  // both ends of a leg of the U as near: its start, and the route's start before its end
  route.locate(0, -1)
  t.same([route.leg, route.t, route.along], [0, 0, 0], 'the route\'s two ends as near: the first')
  // the reference's own tie rule, at the route's scale
  const mirrored = nearestOnRoute(points, { lat: 0, lng: 2 })
  t.equal(mirrored.leg, 0)
  // the two ends of one leg as near (a site at the antipode of its middle): the start
  const leg = new Route([{ lat: 10, lng: 20 }, { lat: 10, lng: 22 }])
  const middle = leg.pointAt(0, leg.length / 2)
  const antipode = { lat: -middle.lat, lng: middle.lng - 180 }
  t.ok(Math.abs(leg.locate(antipode.lat, antipode.lng) - (Math.PI - leg.length / 2)) < 1e-12)
  t.same([leg.t, leg.along], [0, 0], 'the antipode of a leg\'s middle: its start, not its end')
  t.same(nearestOnRoute(leg.points, antipode).alongKm, 0, 'and the reference agrees')
})

t.test('capBoxes hold every point of the cap', async (t) => {
  const random = seededRandom('cap-boxes')
  for (let i = 0; i < 20000; i++) {
    const center = i % 3 === 0
      ? { lat: random() * 180 - 90, lng: wrap(179 + random() * 2) }
      : { lat: random() * 180 - 90, lng: random() * 360 - 180 }
    const radius = [0.001, 0.01, 0.1, 1][i % 4] * random()
    const point = destination(center, random() * 2 * Math.PI, radius * Math.sqrt(random()))
    const boxes = capBoxes(center as LatLng, radius)
    const inside = (b: Box) =>
      point.lng >= b.west && point.lng <= b.east && point.lat >= b.south && point.lat <= b.north
    if (!boxes.some(inside)) {
      t.fail('a point of the cap outside its boxes', { center, radius, point, boxes })
      return
    }
  }
  t.pass('20,000 points inside')
})

t.test('behindBoxes hold every point within reach whose nearest point of the route is its start', async (t) => {
  const random = seededRandom('behind-boxes')
  let behind = 0
  let edge = 0
  for (let i = 0; i < 6000; i++) {
    const points = randomRoute(random, KINDS[i % KINDS.length])
    // a first leg of 2.5 TIE_RADIANS to 60 m: its end's tie rule gives along 0 to points in front of the start
    const short = Math.exp(Math.log(2.5 * TIE_RADIANS) + random() * Math.log(1e-5 / (2.5 * TIE_RADIANS)))
    if (i % 5 === 4) points[1] = destination(points[0], random() * 2 * Math.PI, short)
    const route = new Route(points)
    const start = points[0]
    const reach = [1e-5, 1e-4, 0.001, 0.01, 0.1, 0.5][i % 6] * (0.1 + random())
    const boxes = route.behindBoxes(reach)
    const ahead = bearing(start, points[1])
    for (let k = 0; k < 48; k++) {
      // anywhere in the cap; on the line across the first leg at its start, or a hair either side of it; in front
      // of that line by less than TIE_RADIANS (along 0 still), by it or near the start
      const side = (random() < 0.5 ? 1 : -1) * Math.PI / 2
      const turn = [random() * 2 * Math.PI, ahead + side, ahead + side * (1 - 1e-7), ahead + side * (1 + 1e-7)][k % 4]
      let point = destination(start, turn, reach * Math.sqrt(random()))
      if (k % 6 === 4) point = destination(point, ahead, TIE_RADIANS * random())
      if (k % 6 === 5) point = destination(start, ahead + (random() - 0.5) * Math.PI, 3 * TIE_RADIANS * random())
      if (route.locate(point.lat, point.lng) > reach || route.along > TIE_RADIANS) continue
      behind++
      if (k % 6 !== 0) edge++
      const inside = (b: Box) =>
        point.lng >= b.west && point.lng <= b.east && point.lat >= b.south && point.lat <= b.north
      if (!boxes.some(inside)) {
        t.fail('a point behind the start outside the boxes', { points, reach, point, boxes })
        return
      }
    }
  }
  t.ok(behind > 50000 && edge > 20000, `${behind} points behind the start inside, ${edge} of them by its line`)
})

const pathIs = (t: Test, text: string, points: LatLng[], canonical: string) => {
  const parsed = parseRoutePath(text)
  if (!('value' in parsed)) return t.fail(`${text}: ${JSON.stringify(parsed)}`)
  t.ok(parsed.value instanceof Route, text)
  t.same((parsed.value as Route).points, points, text)
  t.equal(parsed.text, canonical, text)
}

t.test('parseRoutePath: routes and their canonical text', async (t) => {
  pathIs(t, '51.47,-0.454|50.95,1.85|48.857,2.352', [
    { lat: 51.47, lng: -0.454 }, { lat: 50.95, lng: 1.85 }, { lat: 48.857, lng: 2.352 }
  ], '51.47,-0.454|50.95,1.85|48.857,2.352')
  pathIs(t, '51.50,-0.4540|+5.15e1,-.5', [{ lat: 51.5, lng: -0.454 }, { lat: 51.5, lng: -0.5 }],
    '51.5,-0.454|51.5,-0.5')
  pathIs(t, '-0,10|0.000,11', [{ lat: 0, lng: 10 }, { lat: 0, lng: 11 }], '0,10|0,11')
  pathIs(t, '10,20|10,20', [{ lat: 10, lng: 20 }, { lat: 10, lng: 20 }], '10,20|10,20')
  pathIs(t, '90,0|89,180|88,180', [{ lat: 90, lng: 0 }, { lat: 89, lng: 180 }, { lat: 88, lng: 180 }],
    '90,0|89,180|88,180')
  pathIs(t, '10,-180|10,180', [{ lat: 10, lng: -180 }, { lat: 10, lng: 180 }], '10,-180|10,180')
  const hundred = Array.from({ length: 100 }, (_, i) => ({ lat: 40 + i / 100, lng: 5 }))
  const text = hundred.map((p) => `${p.lat},${p.lng}`).join('|')
  pathIs(t, text, hundred, text)
  pathIs(t, '10,20|26.65,20', [{ lat: 10, lng: 20 }, { lat: 26.65, lng: 20 }], '10,20|26.65,20') // 999.7 nm
})

t.test('parseRoutePath: what is wrong, in order', async (t) => {
  const count = (n: number) => ({ malformed: `path must be 2 to 100 lat,lng points separated by |; it has ${n}` })
  const pair = (n: number, shown: string) =>
    ({ malformed: `point ${n}: ${JSON.stringify(shown)} is not a lat,lng pair` })
  const lat = (n: number) => ({ coordinates: `point ${n}: latitude must be a number from -90 to 90` })
  const lng = (n: number) => ({ coordinates: `point ${n}: longitude must be a number from -180 to 180` })
  const cases: [string, object][] = [
    ['', count(0)],
    ['51.5,-0.1', count(1)],
    [Array.from({ length: 101 }, (_, i) => `${40 + i / 100},5`).join('|'), count(101)],
    ['51.5,-0.1|', pair(2, '')],
    ['|51.5,-0.1', pair(1, '')],
    ['51.5;-0.1|50,1', pair(1, '51.5;-0.1')],
    ['51.5,-0.1,3|50,1', pair(1, '51.5,-0.1,3')],
    ['51.5,-0.1|50,1|49', pair(3, '49')],
    [`51.5,-0.1|${'9'.repeat(50)}`, pair(2, `${'9'.repeat(40)}…`)],
    // a malformed pair before a bad coordinate, wherever each is
    ['91,0|50,1|x', pair(3, 'x')],
    ['0,0|50,1,2', pair(2, '50,1,2')],
    ['91,0|50,1', lat(1)],
    ['50,1|-90.0001,1', lat(2)],
    ['50,181|50,1', lng(1)],
    ['50,1|50,-180.5', lng(2)],
    ['50,1|x,1', lat(2)],
    ['50,1|50,', lng(2)],
    ['50,1|,1', lat(2)],
    ['50,1| 50,1', lat(2)],
    ['50,1|50,1e400', lng(2)],
    ['50,1|Infinity,1', lat(2)],
    ['50,1|0x10,1', lat(2)],
    // a bad coordinate before 0,0, and 0,0 before a route too long
    ['0,0|91,1', lat(2)],
    ['0,0|50,1', { ambiguous: true }],
    ['50,1|-0.0,+0', { ambiguous: true }],
    ['0,1|0,20|0,0', { ambiguous: true }],
    ['0,1|0,20', { malformed: 'path is 1140.8 nm long; a route may be at most 1000 nm' }],
    ['10,20|26.67,20', { malformed: 'path is 1000.9 nm long; a route may be at most 1000 nm' }],
    ['10,20|10.5,20|26.66,20', { malformed: 'path is 1000.3 nm long; a route may be at most 1000 nm' }]
  ]
  for (const [text, expected] of cases) t.same(parseRoutePath(text), expected, text.slice(0, 60))
})

t.test('parseBbox', async (t) => {
  const box = (west: number, south: number, east: number, north: number, text: string) =>
    ({ value: { west, south, east, north }, text })
  const malformed = {
    malformed: 'bbox must be four numbers: west,south,east,north (longitudes and latitudes in degrees)'
  }
  const rule = (what: string) => ({
    coordinates: `${what}: ${what === 'west' || what === 'east'
      ? 'longitude must be a number from -180 to 180'
      : 'latitude must be a number from -90 to 90'}`
  })
  const cases: [string, object][] = [
    ['-0.2,51.45,-0.05,51.55', box(-0.2, 51.45, -0.05, 51.55, '-0.2,51.45,-0.05,51.55')],
    ['-0.20,51.450,-5e-2,+51.55', box(-0.2, 51.45, -0.05, 51.55, '-0.2,51.45,-0.05,51.55')],
    ['170,-10,-170,10', box(170, -10, -170, 10, '170,-10,-170,10')],
    ['-180,-90,180,90', box(-180, -90, 180, 90, '-180,-90,180,90')],
    ['10,5,10,5', box(10, 5, 10, 5, '10,5,10,5')],
    ['0,0,0,1', box(0, 0, 0, 1, '0,0,0,1')],
    ['-0,0,0.0,0', { ambiguous: true }],
    ['0,0,0,0', { ambiguous: true }],
    ['', malformed],
    ['1,2,3', malformed],
    ['1,2,3,4,5', malformed],
    ['1,2,3,', malformed],
    ['1,2,3,x', malformed],
    ['1 ,2,3,4', malformed],
    ['1,2,3,1e400', rule('north')],
    ['-1e400,2,3,4', rule('west')],
    ['x,91,0,0', malformed],
    ['181,0,1,1', rule('west')],
    ['1,-91,1,1', rule('south')],
    ['1,0,-180.1,1', rule('east')],
    ['1,0,1,90.5', rule('north')],
    ['181,91,0,0', rule('west')],
    ['0,91,0,0', rule('south')],
    ['0,10,1,5', { coordinates: 'south must not be greater than north' }],
    ['0,1,0,0', { coordinates: 'south must not be greater than north' }]
  ]
  for (const [text, expected] of cases) t.same(parseBbox(text), expected, text)
})
