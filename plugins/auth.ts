// Step 1 and 2 of every partner request (contract section 5): token → partner → status →
// endpoint open. Routes say which endpoint they are in `config.endpoint`; a route without it
// is public. Runs in onRequest, before the rate limiter, so a refused token counts against nothing.
import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { ApiError } from '../src/errors.ts'
import { endpointOpen, type Endpoint, type PartnerProfile } from '../src/partners/permissions.ts'

declare module 'fastify' {
  interface FastifyContextConfig {
    endpoint?: Endpoint
  }
  interface FastifyRequest {
    partner: PartnerProfile
  }
}

const BEARER = /^Bearer[ \t]+([^\s]+)[ \t]*$/i

/**
 * The token of the Authorization headers, every one as sent (Node keeps only the first in
 * `headers`, so a second with another token would go unseen); false if one is not Bearer or two differ.
 */
function headerToken (rawHeaders: string[]): string | undefined | false {
  let token: string | undefined
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]
    if (name.length !== 13 || name.toLowerCase() !== 'authorization') continue
    const match = BEARER.exec(rawHeaders[i + 1])
    if (!match || (token !== undefined && match[1] !== token)) return false
    token = match[1]
  }
  return token
}

/** The token from api_key or Authorization: Bearer headers; null if none, false if unusable. */
export function tokenOf (request: FastifyRequest): string | null | false {
  const fromQuery = (request.query as Record<string, unknown>).api_key
  const fromHeader = request.headers.authorization === undefined ? undefined : headerToken(request.raw.rawHeaders)
  if (fromHeader === false) return false
  if (fromQuery === undefined || fromQuery === '') return fromHeader ?? null
  if (typeof fromQuery !== 'string') return false // given more than once
  if (fromHeader !== undefined && fromHeader !== fromQuery) return false
  return fromQuery
}

async function auth (app: FastifyInstance) {
  app.decorateRequest('partner', null as unknown as PartnerProfile)
  app.addHook('onRequest', (request, reply, done) => {
    const endpoint = request.route.config.endpoint
    if (endpoint === undefined) return done()
    const token = tokenOf(request)
    if (token === null) return done(new ApiError('svc_partner_api_missing_key'))
    const partner = token === false ? undefined : app.partners.byToken(token)
    if (!partner) return done(new ApiError('svc_partner_api_invalid_key'))
    if (partner.status !== 'active') return done(new ApiError('svc_partner_api_inactive_partner'))
    if (!endpointOpen(partner, endpoint)) return done(new ApiError('svc_partner_api_feature_disabled'))
    request.partner = partner
    done()
  })
}

export default fp(auth, { name: 'auth', dependencies: ['partners', 'route-config'] })
