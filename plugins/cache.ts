// The response cache (src/cache/response-cache.ts), emptied whenever a dataset is swapped. The
// partner routes look answers up and store them (src/routes/partner-api.ts).
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { ResponseCache, type ResponseCacheOptions } from '../src/cache/response-cache.ts'

declare module 'fastify' {
  interface FastifyInstance { responseCache: ResponseCache }
}

async function cache (app: FastifyInstance, options: ResponseCacheOptions) {
  const { datasets } = app
  const responseCache = new ResponseCache(options, (dataset) => datasets.get(dataset.name) === dataset, app.answerPool)
  datasets.onSwap(() => responseCache.clear())
  app.decorate('responseCache', responseCache)
}

export default fp(cache, { name: 'cache', dependencies: ['datasets', 'records'] })
