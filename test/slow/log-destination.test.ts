// The log's destination (src/http/log-destination.ts) in a process of its own, on a real pipe.
// Stalled and failing readers are covered with the whole service in test/e2e/log-stall.test.ts.
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { retryDelay } from '../../src/http/log-destination.ts'
import { node } from '../child.ts'

const fixture = fileURLToPath(new URL('../fixtures/log-oversized.ts', import.meta.url))

t.test('one line longer than LOG_BUFFER_MB, while nothing is held: dropped and reported without another line ' +
  'to carry the report, and the exit holds nothing', async (t) => {
  const child = spawnSync(...node(['--import', 'tsx', fixture]), { encoding: 'utf8' })
  t.equal(child.status, 0)
  t.equal(child.stdout,
    '{"dropped_lines":1,"msg":"1 log lines were dropped: their reader did not keep up and more than LOG_BUFFER_MB ' +
    'were waiting"}\n', 'the warning, and no part of the long line')
  t.equal(child.stderr, '', 'no note of lines held at exit')
})

t.test('a full pipe is tried again after a tenth of the time the writer has been still, 1 to 50 ms', async (t) => {
  t.same([-5, 0, 4, 10, 11, 200, 499, 500, 60_000].map(retryDelay), [1, 1, 1, 1, 2, 20, 50, 50, 50])
})
