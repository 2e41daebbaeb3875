// /sites and /sites/nearest over HTTP (inject) against brute force: thousands of random sites
// and queries, near the antimeridian and the poles, partners with different allow-lists and caps.
import t from 'tap'
import { seededRandom } from '../../src/sites/generator.ts'
import { UNLIMITED, bruteNearby, buildTestApp, randomSites } from '../helper.ts'

const sites = randomSites('http-property', 5000, 's')
const partners = [
  {
    name: 'Wide', slug: 'wide', tier: 'scale' as const, categories: [2, 3, 4, 5, 6, 7, 8, 9, 10], otherCategories: true,
    radiusCapKm: 5000, maxResults: 100, limitOverrides: UNLIMITED
  },
  {
    name: 'Narrow', slug: 'narrow', tier: 'growth' as const, categories: [4, 7, 9], radiusCapKm: 300, maxResults: 7,
    limitOverrides: UNLIMITED
  },
  {
    name: 'Most', slug: 'most', tier: 'growth' as const, categories: [2, 3, 4, 5, 6, 7], radiusCapKm: 1000,
    maxResults: 20, limitOverrides: UNLIMITED
  },
  {
    name: 'Rare', slug: 'rare', tier: 'growth' as const, categories: [10], otherCategories: true, radiusCapKm: 2000,
    maxResults: 3, limitOverrides: UNLIMITED
  }
]
const allowed: Record<string, number[]> = {
  wide: [2, 3, 4, 5, 6, 7, 8, 9, 10], most: [2, 3, 4, 5, 6, 7], narrow: [4, 7], rare: [10]
}
const { app, tokens } = await buildTestApp(t, { sandbox: sites, partners })

const fullRecord = (s: typeof sites[number]) => ({
  id: s.id, category: String(s.category), name: s.name, region: s.region, country: s.country,
  latitude: s.latitude, longitude: s.longitude, helipaddy_link: `https://pilot.test/pad/${s.id}`
})

t.test('random queries: same records, same order as brute force', async (t) => {
  const random = seededRandom('http-queries')
  let nonEmpty = 0
  const QUERIES = 1500
  for (let i = 0; i < QUERIES; i++) {
    const partner = partners[Math.floor(random() * partners.length)]
    const anchor = sites[Math.floor(random() * sites.length)]
    const near = random() < 0.7
    const lat = Math.round(
      (near ? Math.max(-90, Math.min(90, anchor.latitude + (random() - 0.5))) : random() * 180 - 90) * 1e6
    ) / 1e6
    let lng = near ? anchor.longitude + (random() - 0.5) : random() * 360 - 180
    lng = Math.round((lng > 180 ? lng - 360 : lng < -180 ? lng + 360 : lng) * 1e6) / 1e6
    const radius = Math.round((random() < 0.2 ? 25 : 1 + random() * 400) * 1000) / 1000
    const categoryId = random() < 0.2
      ? allowed[partner.slug][Math.floor(random() * allowed[partner.slug].length)]
      : undefined
    const tag = random() < 0.2 ? '~fuel' : undefined
    const useDefaultRadius = random() < 0.2
    let params = `lat=${lat}&lng=${lng}${useDefaultRadius ? '' : `&radius=${radius}`}`
    if (categoryId !== undefined) params += `&category_id=${categoryId}`
    if (tag) params += `&tag=${encodeURIComponent(tag)}`
    if (lat === 0 && lng === 0) continue
    const query = {
      lat, lng,
      radiusKm: Math.min(useDefaultRadius ? 25 : radius, partner.radiusCapKm),
      limit: partner.maxResults,
      categories: categoryId === undefined ? allowed[partner.slug] : [categoryId],
      tag
    }
    const expected = bruteNearby(sites, query)
    const res = await app.inject({
      method: 'GET', url: `/v1/sites?${params}`, headers: { authorization: `Bearer ${tokens[partner.slug]}` }
    })
    if (res.statusCode !== 200) { t.fail(`status ${res.statusCode} for ${params}: ${res.body}`); return }
    const body = JSON.parse(res.body)
    if (res.body !== JSON.stringify(expected.map((e) => fullRecord(e.site)))) { // byte for byte
      t.fail('/sites differs from brute force', {
        params, partner: partner.slug, got: body.map((r: { id: string }) => r.id),
        expected: expected.map((e) => e.site.id)
      })
      return
    }
    const nearest = await app.inject({
      method: 'GET', url: `/v1/sites/nearest?${params}`, headers: { authorization: `Bearer ${tokens[partner.slug]}` }
    })
    const first = expected[0]
    const want = first === undefined
      ? null
      : {
          id: first.site.id, category: String(first.site.category), name: first.site.name,
          latitude: first.site.latitude, longitude: first.site.longitude,
          distance_nm: Math.round(first.km / 1.852 * 1000) / 1000,
          helipaddy_link: `https://pilot.test/pad/${first.site.id}`
        }
    const got = JSON.parse(nearest.body)
    if (JSON.stringify(got) !== JSON.stringify(want)) {
      t.fail('/sites/nearest differs from brute force', { params, partner: partner.slug, got, want })
      return
    }
    if (body.length > 0) nonEmpty++
  }
  t.ok(nonEmpty > QUERIES / 3, `${nonEmpty} of ${QUERIES} queries found sites`)
  t.pass(`${QUERIES} queries agreed with brute force`)
})
