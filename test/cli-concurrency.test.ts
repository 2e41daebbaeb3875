// Operators at once: eleven real `partners update` processes, each changing one field of the same
// partner, all take effect, on control.db and on Redis (STATE_URL). Every round starts from other
// values, so a lost change shows as a field left at the round before's value. (The partner is
// created and read back through the CLI's main() in this process: those need no process.)
import t, { type Test } from 'tap'
import { tmpDataDir } from './helper.ts'
import { adminAsync, adminInProcess } from './run.ts'
import { skippedWithoutRedis, startRedis } from './redis.ts'

// Two rounds: each changes every field away from the values before it; a third would only repeat
// the first's values, a second try at the same race.
const ROUNDS = 2

// 44 real CLI processes, eleven at a time: on a machine shared with other test runs, more than the
// tap config's timeout allows.
t.setTimeout(480_000)

/** The eleven changes of round `r`, each one field, and what `partners show --json` must then say. */
function round (r: number) {
  const odd = r % 2 === 1
  const changes: string[][] = [
    ['--name', `Name ${r}`],
    ['--tier', odd ? 'scale' : 'growth'],
    ['--environment', odd ? 'production' : 'sandbox'],
    ['--status', odd ? 'suspended' : 'active'],
    ['--categories', odd ? '2,3' : '4,7'],
    ['--other-categories', odd ? 'on' : 'off'],
    ['--site-by-id', odd ? 'on' : 'off'],
    ['--radius-cap', String(10 + r)],
    ['--max-results', String(20 + r)],
    ['--limit-minute', String(100 + r)],
    ['--limit-day', String(5000 + r)]
  ]
  const expected = {
    name: `Name ${r}`,
    tier: odd ? 'scale' : 'growth',
    environment: odd ? 'production' : 'sandbox',
    status: odd ? 'suspended' : 'active',
    categories: odd ? [2, 3] : [4, 7],
    other_categories: odd,
    site_by_id: odd,
    radius_cap_km: 10 + r,
    max_results: 20 + r,
    limit_overrides: { minute: 100 + r, hour: null, day: 5000 + r }
  }
  return { changes, expected }
}

async function rounds (t: Test, env: Record<string, string>) {
  const created = await adminInProcess(['partners', 'create', '--name', 'Busy', '--slug', 'busy', '--tier', 'growth'],
    env)
  t.equal(created.status, 0, created.stderr)
  for (let r = 1; r <= ROUNDS; r++) {
    const { changes, expected } = round(r)
    const results = await Promise.all(changes.map((change) =>
      adminAsync(['partners', 'update', 'busy', ...change], env)))
    const stderr = results.map((x) => x.stderr).join('')
    t.same(results.map((x) => x.status), changes.map(() => 0), `round ${r}: every command exits 0 ${stderr}`)
    const shown = JSON.parse((await adminInProcess(['partners', 'show', 'busy', '--json'], env)).stdout)
    const got = Object.fromEntries(Object.keys(expected).map((k) => [k, shown[k]]))
    t.same(got, expected, `round ${r}: all eleven changes took effect`)
  }
}

t.test('control.db', async (t) => {
  await rounds(t, { DATA_DIR: tmpDataDir(t) })
})

t.test('Redis', async (t) => {
  if (skippedWithoutRedis(t)) return
  const redis = await startRedis(t)
  await rounds(t, { DATA_DIR: tmpDataDir(t), STATE_URL: redis.url })
})
