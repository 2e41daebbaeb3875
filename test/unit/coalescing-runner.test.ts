// The coalescing runner: requests made while a run is under way cost one more run, not one each,
// and every caller is answered by a run that started after its request.
import t from 'tap'
import { coalescing } from '../../src/instances/coalescing-runner.ts'
import { seededRandom } from '../../src/sites/generator.ts'

/** A run that waits until the test ends it; the runs made so far, in order. */
function controlledRuns () {
  const runs: { requests: string[], end: (value: number) => void, fail: (err: Error) => void }[] = []
  const runner = coalescing((requests: string[]) => new Promise<number>((resolve, reject) => {
    runs.push({ requests: [...requests], end: resolve, fail: reject })
  }))
  return { runs, runner }
}

const settle = () => new Promise<void>((resolve) => setImmediate(resolve))

t.test('any number of requests during a run cause exactly one more run, after it', async (t) => {
  const { runs, runner } = controlledRuns()
  const first = runner('a')
  t.same(runs.map((r) => r.requests), [['a']], 'an idle runner starts at once')
  const later = ['b', 'c', 'd', 'e', 'f'].map((r) => runner(r))
  await settle()
  t.equal(runs.length, 1, 'nothing more runs while the first run is under way')
  runs[0].end(1)
  t.equal(await first, 1)
  await settle()
  t.same(runs.map((r) => r.requests), [['a'], ['b', 'c', 'd', 'e', 'f']],
    'the waiting requests are merged into one run')
  const during = runner('g')
  runs[1].end(2)
  t.same(await Promise.all(later), [2, 2, 2, 2, 2], 'each waiting caller gets the outcome of the run after its request')
  await settle()
  t.same(runs.map((r) => r.requests), [['a'], ['b', 'c', 'd', 'e', 'f'], ['g']])
  runs[2].end(3)
  t.equal(await during, 3)
  await settle()
  t.equal(runs.length, 3, 'an idle runner stays idle')
})

t.test('a failed run answers its callers with the failure; the next run still comes', async (t) => {
  const { runs, runner } = controlledRuns()
  const first = runner('a')
  const second = runner('b')
  runs[0].fail(new Error('bad file'))
  await t.rejects(first, /bad file/)
  await settle()
  t.equal(runs.length, 2)
  runs[1].end(7)
  t.equal(await second, 7)
  let calls = 0
  const throwing = coalescing(async (requests: number[]) => {
    calls++
    if (requests[0] === 0) throw new Error('thrown')
    return requests.length
  })
  await t.rejects(throwing(0), /thrown/)
  t.equal(await throwing(1), 1, 'the runner is idle again after a throw')
  t.equal(calls, 2)
})

t.test('random interleavings: one run at a time, each caller answered by a run started after its request, ' +
  'no run without a request', async (t) => {
  const random = seededRandom('coalesce')
  for (let round = 0; round < 200; round++) {
    let clock = 0
    let active = 0
    const started: number[] = [] // when each run started
    const ends: (() => void)[] = []
    let overlap = false
    const runner = coalescing((requests: number[]) => {
      if (active > 0) overlap = true
      active++
      const run = started.length
      started.push(++clock)
      return new Promise<{ run: number, requests: number[] }>((resolve) => {
        ends.push(() => { active--; resolve({ run, requests }) })
      })
    })
    const answers: Promise<void>[] = []
    const bad: string[] = []
    let asked = 0
    let ended = 0
    for (let step = 0; step < 30; step++) {
      if (random() < 0.6) {
        const at = ++clock
        const id = asked++
        answers.push(runner(id).then(({ run, requests }) => {
          if (started[run] <= at) bad.push(`request ${id} at ${at} answered by run ${run}, started at ${started[run]}`)
          if (!requests.includes(id)) bad.push(`request ${id} answered by a run not given it`)
        }))
      } else if (ended < ends.length) {
        ends[ended++]()
      }
      await settle()
    }
    while (ended < ends.length) { ends[ended++](); await settle() }
    await Promise.all(answers)
    if (overlap || bad.length > 0 || started.length > asked) {
      const runs = `(${started.length} runs for ${asked} requests)`
      t.fail(`round ${round}: ${overlap ? 'two runs at once; ' : ''}${bad.join('; ')} ${runs}`)
      return
    }
  }
  t.pass('200 random rounds')
})
