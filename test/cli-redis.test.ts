// The CLI against a Redis that hangs (SIGSTOP: connections accepted, nothing answered): every
// command that talks to Redis gives up with exit 1 and a reason naming the shared state, instead
// of waiting for as long as Redis hangs. The first command is a real process, which must also end
// (nothing left open keeps it alive); it is killed after 45 s (status -1 then): far beyond the 5 s
// bound, room for a slow start on a loaded machine. The others run the CLI's main() in this process,
// all four at once.
import t from 'tap'
import { tmpDataDir } from './helper.ts'
import { adminAsync, adminInProcess } from './run.ts'
import { skippedWithoutRedis, startRedis } from './redis.ts'

if (!skippedWithoutRedis(t)) {
  const redis = await startRedis(t)
  const env = { DATA_DIR: tmpDataDir(t), STATE_URL: redis.url }
  t.equal((await adminInProcess(['partners', 'create', '--name', 'Hotel', '--slug', 'hotel'], env)).status, 0)

  t.test('a Redis that hangs: exit 1 with the reason, for each command that uses it', async (t) => {
    redis.pause()
    t.teardown(() => redis.resume())
    const commands = [
      ['partners', 'update', 'hotel', '--status', 'suspended'],
      ['partners', 'list'],
      ['partners', 'rotate', 'hotel'],
      ['datasets', 'reload', '--all']
    ]
    // all at once: each waits out its own 5 s, so one after another would only add up the waits
    const results = await Promise.all(commands.map((args, i) =>
      i === 0 ? adminAsync(args, env, 45_000) : adminInProcess(args, env)))
    for (const [i, args] of commands.entries()) {
      const r = results[i]
      t.equal(r.status, 1, `${args.join(' ')}: ${r.stderr}`)
      t.match(r.stderr,
        /^error: cannot reach the shared state at STATE_URL \(redis:\/\/127\.0\.0\.1:\d+\/0\): no answer within 5 s\n$/,
        args.join(' '))
      t.equal(r.stdout, '')
    }
  })

  t.test('and once it answers again, the same commands work', async (t) => {
    const r = await adminInProcess(['partners', 'update', 'hotel', '--status', 'suspended', '--json'], env)
    t.equal(r.status, 0, r.stderr)
    t.equal(JSON.parse(r.stdout).status, 'suspended')
  })
}
