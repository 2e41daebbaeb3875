// What a partner may see: endpoints, categories, dataset. Derived once per partner load,
// never per request.
import type { DatasetName } from '../sites/dataset-file.ts'
import { effectiveLimits, type Partner } from './store.ts'
import { ratelimitPolicy, windowSpecs } from '../limits/limiter.ts'

export type Endpoint =
  'sites' | 'nearest' | 'by-tag' | 'along-route' | 'by-bbox' | 'site' | 'usage' | 'categories' | 'tags'

const FIRST_OTHER_CATEGORY = 8

/** The partner with what follows from its settings, as the service holds it. */
export type PartnerProfile = ReturnType<typeof profileOf>

export function profileOf (partner: Partner) {
  // the categories it is served, ascending: its allow-list less 1, and less 8+ unless other_categories
  const allowed: readonly number[] = Object.freeze([...new Set(partner.categories)]
    .filter((c) => c >= 2 && (c < FIRST_OTHER_CATEGORY || partner.otherCategories))
    .sort((a, b) => a - b))
  const limits = effectiveLimits(partner)
  const windows = windowSpecs(limits)
  return {
    ...partner,
    allowedCategories: allowed,
    limits,
    windows,
    ratelimitPolicy: ratelimitPolicy(windows), // '' when no window is limited
    // everything about the partner that shapes a result; part of the response cache key
    fingerprint: `${allowed.join(',')}|${partner.radiusCapKm}|${partner.maxResults}`
  }
}

/**
 * Demo tier: /sites, /sites/nearest, /usage, /categories and /tags only; /sites/{id} also needs
 * site_by_id.
 */
export function endpointOpen (partner: Pick<Partner, 'tier' | 'siteById'>, endpoint: Endpoint): boolean {
  switch (endpoint) {
    case 'sites': case 'nearest': case 'usage': case 'categories': case 'tags': return true
    case 'by-tag': case 'along-route': case 'by-bbox': return partner.tier !== 'demo'
    case 'site': return partner.tier !== 'demo' && partner.siteById
  }
}

/** The dataset that answers: sandbox for the demo tier or demo=true, else the partner's environment. */
export function datasetFor (partner: Pick<Partner, 'tier' | 'environment'>, demo: boolean): DatasetName {
  if (demo || partner.tier === 'demo') return 'sandbox'
  return partner.environment
}
