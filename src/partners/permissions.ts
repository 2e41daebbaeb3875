// What a partner may see: endpoints, categories, dataset. Derived once per partner load,
// never per request.
import type { DatasetName } from '../sites/dataset-file.ts'
import { effectiveLimits, type Partner } from './store.ts'
import type { Limits } from './tiers.ts'
import { ratelimitPolicy, windowSpecs, type WindowSpec } from '../limits/limiter.ts'

export type Endpoint =
  'sites' | 'nearest' | 'by-tag' | 'along-route' | 'by-bbox' | 'site' | 'usage' | 'categories' | 'tags'

/** The partner with what follows from its settings, as the service holds it. */
export interface PartnerProfile extends Partner {
  /** Categories it is served, ascending: its allow-list less 1, and less 8+ unless other_categories. */
  allowedCategories: readonly number[]
  limits: Limits
  /** its limits as the limiter's windows */
  windows: WindowSpec[]
  /** the RateLimit-Policy field of its windows ('' when none is limited) */
  ratelimitPolicy: string
  /** Everything about the partner that shapes a result; part of the response cache key. */
  fingerprint: string
}

const FIRST_OTHER_CATEGORY = 8

export function profileOf (partner: Partner): PartnerProfile {
  const allowed = Object.freeze([...new Set(partner.categories)]
    .filter((c) => c >= 2 && (c < FIRST_OTHER_CATEGORY || partner.otherCategories))
    .sort((a, b) => a - b))
  const limits = effectiveLimits(partner)
  const windows = windowSpecs(limits)
  return {
    ...partner,
    allowedCategories: allowed,
    limits,
    windows,
    ratelimitPolicy: ratelimitPolicy(windows),
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
