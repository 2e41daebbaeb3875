// Dependencies are declared, not implied by order: a plugin registered before one whose
// decorator it uses stops the boot, naming what is missing.
import Fastify from 'fastify'
import t from 'tap'
import metrics from '../../plugins/metrics.ts'
import health from '../../plugins/health.ts'
import partnerApi from '../../src/routes/partner-api.ts'

t.test('metrics before the plugins whose objects it reads', async (t) => {
  const app = Fastify()
  await app.register(health)
  await t.rejects(async () => { await app.register(metrics, { port: 0 }) },
    /The dependency '(shared-state|records|datasets|partners|cache)' of plugin 'metrics' is not registered/)
  await app.close()
})

t.test('the partner API before the plugins whose objects its pipeline uses', async (t) => {
  const app = Fastify()
  await t.rejects(async () => { await app.register(partnerApi, { prefix: '/v1' }) }, {
    code: 'FST_ERR_PLUGIN_DEPENDENCY_NOT_REGISTERED',
    message: 'The dependency \'partners\' of plugin \'partner-api\' is not registered'
  })
  await app.close()
})
