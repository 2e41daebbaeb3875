import t from 'tap'
import { outageReporter } from '../../src/health/outage.ts'

t.test('an outage is reported once when it starts and once when it ends', async (t) => {
  const lines: string[] = []
  const report = outageReporter((err) => lines.push(`down: ${(err as Error).message}`), () => lines.push('up'))
  report()
  report(new Error('a'))
  report(new Error('b'))
  report()
  report()
  report(new Error('c'))
  t.same(lines, ['down: a', 'up', 'down: c'])
})
