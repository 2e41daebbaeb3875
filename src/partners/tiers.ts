// Tiers, their default limits, and the partner fields that follow from them.
export const TIERS = ['demo', 'growth', 'scale'] as const
export const STATUSES = ['pending', 'active', 'suspended'] as const
export const ENVIRONMENTS = ['sandbox', 'production'] as const
export const WINDOWS = ['minute', 'hour', 'day'] as const
export type WindowName = typeof WINDOWS[number]
export const WINDOW_SECONDS: Record<WindowName, number> = { minute: 60, hour: 3600, day: 86400 }

/** Each window's limit: a number of requests, or null for unlimited. */
export type Limits = Record<WindowName, number | null>

export const TIER_LIMITS: Record<typeof TIERS[number], Limits> = {
  demo: { minute: 30, hour: 200, day: 1000 },
  growth: { minute: 90, hour: 1200, day: 12000 },
  scale: { minute: 240, hour: 4000, day: 50000 }
}

export const DEFAULT_CATEGORIES = [4, 7]
export const DEFAULT_RADIUS_CAP_KM = 75
export const DEFAULT_MAX_RESULTS = 100
/** The largest max_results a partner may have (the CLI and imports check the same bound). */
export const MAX_RESULTS_CEILING = 10_000
/** The largest limit of a window: the CLI, the store and both export versions check this bound. */
export const MAX_LIMIT = 1_000_000_000
