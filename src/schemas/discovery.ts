// The answers of /usage, /categories and /tags.
import { Type } from '@sinclair/typebox'
import { Nullable } from './common.ts'

export const CategoryList = Type.Object({
  categories: Type.Array(Type.Object({
    id: Type.Integer({ description: 'Category ID, as category_id takes it' }),
    name: Type.String()
  }), { description: 'The categories this partner may search, ascending' })
}, { description: 'The categories this partner may use' })

export const TagList = Type.Object({
  tags: Type.Array(Type.Object({
    tag: Type.String({ description: 'The tag, as tag= takes it' }),
    sites: Type.Integer({ description: 'Sites with this tag that this partner may see' })
  }), { description: 'Tags with at least one such site, by tag' })
}, { description: 'The tags of the dataset this partner is served from' })

const UsageWindow = Type.Object({
  limit: Nullable(Type.Integer({ description: 'Configured limit; null when the window is unlimited' })),
  used: Type.Integer({ description: 'Requests counted in the window' }),
  remaining: Nullable(Type.Integer({ description: 'Requests left; null when unlimited' })),
  window_seconds: Type.Integer({ description: 'Window length: 60, 3600 or 86400' }),
  resets_in_seconds: Nullable(Type.Integer({
    description: 'Seconds until the next request frees up in the window; null when unlimited'
  })),
  resets_at: Nullable(Type.String({
    description: 'ISO 8601 UTC time when the next request frees up; null when unlimited'
  })),
  rows: Type.Integer({ description: 'Records returned during the window' })
})

const TelemetryWindow = Type.Object({ requests: Type.Integer(), rows: Type.Integer(), errors: Type.Integer() })

const Telemetry = Type.Object({
  feed_size: Type.Integer({ description: 'Events the feed keeps (the latest 200)' }),
  events: Type.Integer({ description: 'Events in the feed now' }),
  windows: Type.Object({ minute: TelemetryWindow, hour: TelemetryWindow, day: TelemetryWindow }),
  recent_events: Type.Array(Type.Object({
    timestamp: Type.String(), endpoint: Type.String(), status: Type.Integer(), rows: Type.Integer(),
    duration_ms: Type.Number(), dataset: Nullable(Type.String()), cache: Type.String()
  }), { description: 'Newest first, at most 10' })
})

export const UsageReport = Type.Object({
  timestamp: Type.String({ description: 'ISO 8601 UTC time of the report' }),
  partner: Type.Object({
    id: Type.String(), slug: Type.String(), name: Type.String(),
    environment: Type.String({ description: 'The dataset that serves the partner' }), is_sandbox: Type.Boolean()
  }),
  client: Type.Object({ ip: Type.String() }),
  windows: Type.Object({ minute: UsageWindow, hour: UsageWindow, day: UsageWindow }),
  telemetry: Type.Optional(Telemetry)
})
