// control.db failing under a running service, for real. Disk full: the server runs on a small
// tmpfs of its own (a private mount namespace) that the test fills to the last byte. Read-only:
// the test makes control.db and its WAL immutable (chattr +i), so every write fails as on a file
// system remounted read-only. Either way the service must keep answering from memory, say so in
// /readyz and its log, and save the counters it kept once control.db takes writes again.
import t, { type Test } from 'tap'
import { spawnSync } from 'node:child_process'
import { closeSync, openSync, rmSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { childEnv, startServer, type Server } from '../run.ts'
import { REPO_ROOT, tmpDataDir } from '../helper.ts'

const ENV = { NODE_ENV: 'development', SANDBOX_SITE_COUNT: '2000', PARTNER_REFRESH_MS: '100', COUNTER_SAVE_MS: '200' }
const NAMESPACE = ['unshare', '--mount', '--propagation', 'private']

/** Whether this machine lets the test make a private tmpfs, and make an open file immutable. */
function canFillDisk () {
  const r = spawnSync(NAMESPACE[0],
    [...NAMESPACE.slice(1), 'sh', '-c', 'd=$(mktemp -d) && mount -t tmpfs -o size=1m tmpfs "$d"'], { encoding: 'utf8' })
  return r.status === 0 ? true : `a private mount namespace with a tmpfs (root with CAP_SYS_ADMIN): ${r.stderr.trim()}`
}
function canMakeImmutable (dir: string) {
  const file = join(dir, 'probe')
  const fd = openSync(file, 'w')
  try {
    const r = spawnSync('chattr', ['+i', file], { encoding: 'utf8' })
    if (r.status !== 0) return `chattr +i (CAP_LINUX_IMMUTABLE on a file system with the flag): ${r.stderr.trim()}`
    try {
      writeSync(fd, 'x')
      return 'a file system that refuses writes to an immutable file through an open descriptor'
    } catch {
      return true
    } finally {
      spawnSync('chattr', ['-i', file])
    }
  } finally {
    closeSync(fd)
    rmSync(file)
  }
}

interface Harness {
  server: Server
  token: string
  /** a shell command where the server sees its files */
  shell (script: string): { status: number | null, out: string }
  sites (): Promise<number>
  readyz (): Promise<{ status: number, body: any }>
  usedMinute (): Promise<number>
  savedRequests (): number
  until<T> (what: string, check: () => Promise<T | undefined> | T | undefined): Promise<T>
}

async function harness (t: Test, dataDir: string, inNamespace: boolean): Promise<Harness> {
  const wrap = inNamespace
    ? [...NAMESPACE, 'sh', '-c', 'mount -t tmpfs -o size=24m tmpfs "$DATA_DIR" && exec "$@"', 'sh']
    : []
  const server = await startServer({ DATA_DIR: dataDir, ...ENV }, 60_000, { wrap })
  t.teardown(() => server.stop('SIGKILL'))
  const enter = inNamespace ? ['nsenter', '-t', String(server.child.pid), '-m'] : []
  const run = (command: string[]) => {
    const full = [...enter, ...command]
    const r = spawnSync(full[0], full.slice(1), {
      encoding: 'utf8', cwd: REPO_ROOT, env: childEnv({ D: dataDir })
    })
    return { status: r.status, out: r.stdout + r.stderr }
  }
  const token = /Its token is shown this once; keep it:\n {2}(\S+)/.exec(server.output())![1]
  const h: Harness = {
    server,
    token,
    shell: (script) => run(['sh', '-c', script]),
    async sites () {
      const res = await fetch(`${server.url}/v1/sites?lat=51.507&lng=-0.128&radius=75`, {
        headers: { authorization: `Bearer ${token}` }
      })
      await res.arrayBuffer()
      return res.status
    },
    async readyz () {
      const res = await fetch(`${server.url}/readyz`)
      return { status: res.status, body: await res.json() }
    },
    async usedMinute () {
      return (await (await fetch(`${server.url}/v1/usage?api_key=${token}`)).json()).windows.minute.used
    },
    savedRequests () {
      const sqlite = JSON.stringify(join(REPO_ROOT, 'node_modules/better-sqlite3'))
      const script = `const D = require(${sqlite}); ` +
        'const db = new D(process.argv[1], { readonly: true, fileMustExist: true });\n        ' +
        "process.stdout.write(String(db.prepare('SELECT coalesce(sum(requests), 0) FROM rate_buckets').pluck().get()))"
      const r = run(['env', '-u', 'NODE_OPTIONS', process.execPath, '-e', script, join(dataDir, 'control.db')])
      if (r.status !== 0) throw new Error(r.out)
      return Number(r.out)
    },
    async until (what, check) {
      const deadline = Date.now() + 10_000
      for (;;) {
        const v = await check()
        if (v !== undefined) return v
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${server.output().slice(-3000)}`)
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    }
  }
  t.equal((await h.readyz()).status, 200, 'ready at start')
  return h
}

const serve = async (t: Test, h: Harness, n: number) => {
  for (let i = 0; i < n; i++) t.equal(await h.sites(), 200, 'still serving')
}

async function breakAndMend (t: Test, h: Harness, breakIt: () => void, mendIt: () => void, reason: RegExp) {
  await serve(t, h, 3)
  await h.until('the first counters saved', () => h.savedRequests() === 3 ? true : undefined)
  breakIt()
  await serve(t, h, 4)
  const down = await h.until('readyz to say not ready',
    async () => { const r = await h.readyz(); return r.status === 503 ? r : undefined })
  t.equal(down.body.status, 'not_ready')
  t.equal(down.body.control_db.writable, false)
  t.match(down.body.control_db.failures.map((f: { error: string }) => f.error).join(' | '), reason)
  // logged before /readyz changes, but read here through a pipe: wait for it rather than race it
  await h.until('the failure to be logged',
    () => /"msg":"control\.db: (heartbeat|counters) failed; serving on/.test(h.server.output()) ? true : undefined)
  t.match(h.server.output(), /"msg":"control\.db: (heartbeat|counters) failed; serving on/, 'logged')
  await serve(t, h, 3)
  t.equal(await h.usedMinute(), 10, '/usage counts every request while control.db refuses writes')
  t.equal(h.savedRequests(), 3, 'nothing new reached control.db meanwhile')

  mendIt()
  await h.until('readyz to say ready again', async () => (await h.readyz()).status === 200 ? true : undefined)
  await h.until('the recovery to be logged',
    () => /"msg":"control\.db: (heartbeat|counters) works again"/.test(h.server.output()) ? true : undefined)
  t.match(h.server.output(), /"msg":"control\.db: (heartbeat|counters) works again"/, 'logged')
  await h.until('the counters kept in memory to be saved', () => h.savedRequests() === 10 ? true : undefined)
  t.pass('all 10 requests saved once control.db took writes again')
  t.equal(await h.server.stop('SIGTERM'), 0, 'a clean stop after all that')
}

const fullDisk = canFillDisk()
t.test('disk full', { skip: fullDisk === true ? false : `needs ${fullDisk}` }, async (t) => {
  const dataDir = tmpDataDir(t, 'lsp-full-')
  const h = await harness(t, dataDir, true)
  await breakAndMend(t, h, () => {
    t.match(h.shell('dd if=/dev/zero of="$D/filler" bs=64k').out, /No space left on device/, 'the file system is full')
  }, () => {
    t.equal(h.shell('rm "$D/filler"').status, 0)
  }, /database or disk is full|disk I\/O error/)
})

const immutable = canMakeImmutable(tmpDataDir(t, 'lsp-probe-'))
t.test('read-only control.db', { skip: immutable === true ? false : `needs ${immutable}` }, async (t) => {
  const dataDir = tmpDataDir(t, 'lsp-ro-')
  const h = await harness(t, dataDir, false)
  const files = ['control.db', 'control.db-wal'].map((f) => join(dataDir, f))
  t.teardown(() => spawnSync('chattr', ['-i', ...files]))
  await breakAndMend(t, h, () => {
    t.equal(spawnSync('chattr', ['+i', ...files]).status, 0)
  }, () => {
    t.equal(spawnSync('chattr', ['-i', ...files]).status, 0)
  }, /disk I\/O error|readonly/)
})
