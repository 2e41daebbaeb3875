// Every example of README.md and docs/partner-guide.md, read from the docs themselves and run as a
// reader would: a real server's first boot on an empty DATA_DIR, the curl commands through bash and
// real curl, the CLI commands the docs show, the guide's TypeScript and Python examples saved as
// files. Each answer shown is compared with the real one: exactly, but where the doc shortens with
// "…" (the parts shown must then come in order) and for the values that differ on every run (the
// token, timestamps, partner ids, ETags, seconds to wait). A code block the test does not know fails
// it: a new example is run here, or listed below with the reason it cannot be.
import { spawn, spawnSync } from 'node:child_process'
import { readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { REPO_ROOT, tmpDataDir } from '../helper.ts'
import { until } from '../latency.ts'
import { adminInProcess, bare, childEnv, startServer, type CliResult } from '../run.ts'

interface Block { file: string, line: number, lang: string, text: string, section: string, before: string }

/** The fenced code blocks of a markdown file, each with its heading and the prose since the last block. */
function blocksOf (file: string): Block[] {
  const lines = readFileSync(join(REPO_ROOT, file), 'utf8').split('\n')
  const blocks: Block[] = []
  let section = ''
  let prose: string[] = []
  for (let i = 0; i < lines.length; i++) {
    const heading = /^#{1,3} (.*)$/.exec(lines[i])
    if (heading) section = heading[1]
    const fence = /^```(\w*)$/.exec(lines[i])
    if (!fence) {
      prose.push(lines[i])
      continue
    }
    const start = i + 1
    while (lines[++i] !== '```') if (i >= lines.length) throw new Error(`${file}:${start}: unclosed block`)
    const text = lines.slice(start, i).join('\n')
    blocks.push({ file, line: start, lang: fence[1], text, section, before: prose.join('\n') })
    prose = []
  }
  return blocks
}

const README = blocksOf('README.md')
const GUIDE = blocksOf('docs/partner-guide.md')
const where = (b: Block) => `${b.file}:${b.line} (${b.section})`
const isAnswer = (b: Block) => b.lang === 'json' || b.lang === ''

/** The logical lines of a shell block (continuations joined), comments and blank lines left out. */
const commandsOf = (b: Block) =>
  b.text.replace(/\\\n/g, ' ').split('\n').filter((l) => l.trim() !== '' && !/^\s*#/.test(l))

// Values that differ on every run, and what an actual value must look like in their place. The
// first match at a position wins: a token's "…" is a token, any other "…" stands for anything.
const VARYING: Array<[RegExp, string]> = [
  [/lsp_(?:…|\.\.\.|[\w-]{43})/, 'lsp_[\\w-]{43}'], // the token
  [/…/, '[\\s\\S]*?'], // shortened by the doc
  [/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/, '\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z'], // the clock
  [/ptn_[0-9a-f]{12}/, 'ptn_[0-9a-f]{12}'], // a partner's random id
  [/(?<=^etag: )"[\w-]+"/m, '"[\\w-]+"'], // digests salted by the dataset's build time
  [/(?<="resets_in_seconds":|"retry_after":|;t=|^retry-after: |^x-ratelimit-reset: |Retry after )\d+/m, '\\d+'],
  [/(?<="duration_ms":)[\d.]+/, '[\\d.]+']
]
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** The shown answer as a pattern the whole actual answer must match. */
function patternOf (shown: string): RegExp {
  let source = ''
  for (let at = 0; at < shown.length;) {
    let first: { index: number, length: number, replacement: string } | undefined
    for (const [re, replacement] of VARYING) {
      const global = new RegExp(re.source, re.flags + 'g')
      global.lastIndex = at
      const m = global.exec(shown)
      if (m && (!first || m.index < first.index)) first = { index: m.index, length: m[0].length, replacement }
    }
    if (!first) {
      source += escape(shown.slice(at))
      break
    }
    source += escape(shown.slice(at, first.index)) + first.replacement
    at = first.index + first.length
  }
  return new RegExp(`^${source}$`)
}

interface Run { command: string, output: string, status: number }

// What the shell example blocks are run with: the address in place of the docs' port 3000.
let origin = ''
const tokens: Record<string, string> = {}
const local = (text: string) => text.replaceAll('http://127.0.0.1:3000', origin)

/** A block's commands in one bash, in turn (variables carry over), each one's output and status. */
function runBlock (b: Block, token: string, cwd = REPO_ROOT): Run[] {
  const commands = commandsOf(b).map((c) => local(c).replace(/lsp_(?:…|\.\.\.)/g, token))
  const script = commands.map((c) => `${c}\nprintf '\\n@@%s@@\\n' "$?"`).join('\n')
  const r = spawnSync(...bare('bash', ['-c', script]), {
    cwd, encoding: 'utf8', timeout: 60_000, env: childEnv({ BASE: `${origin}/v1`, TOKEN: token })
  })
  const parts = r.stdout.split(/\n@@(\d+)@@\n/)
  return commands.map((command, i) => ({ command, output: parts[2 * i], status: Number(parts[2 * i + 1]) }))
}

const ORDINALS = ['first', 'second', 'third', 'fourth', 'fifth']
const normal = (text: string) => text.replace(/\r\n/g, '\n').trim()

/** Compares each answer block that follows `b` with the answer of the command it belongs to. */
type Checks = Pick<typeof t, 'equal' | 'match' | 'ok' | 'notOk'>

/** The answer block right after `b`, if any. */
const answerAfter = (b: Block, blocks: Block[]) => {
  const next = blocks[blocks.indexOf(b) + 1]
  return next && isAnswer(next) ? next : undefined
}

/** Compares the answer block that follows `b` with the answers of the commands it shows. */
function check (tt: Checks, b: Block, blocks: Block[], runs: Run[]) {
  const answers: Array<{ shown: string, block: Block }> = []
  const a = answerAfter(b, blocks)
  if (a) {
    const said = /The (\w+) request answers/.exec(a.before)
    const lines = a.text.split('\n')
    if (a.lang === 'json' && runs.length > 1 && lines.length === runs.length) {
      lines.forEach((line, n) => { answers[n] = { shown: line, block: a } })
    } else {
      const shown = a.lang === 'json' ? a.text.replace(/\n\s*/g, '') : a.text
      // "The second request answers": the second curl command of the block
      const requests = runs.flatMap((run, i) => /^curl /.test(run.command) ? [i] : [])
      const n = said ? requests[ORDINALS.indexOf(said[1].toLowerCase())] : runs.length - 1
      tt.ok(n !== undefined && n >= 0, `${where(a)}: the answer shown is that of a command of the block above` +
        (said ? ` ("${said[0]}")` : ''))
      answers[n] = { shown, block: a }
    }
  }
  runs.forEach((run, n) => {
    tt.equal(run.status, 0, `${where(b)}: \`${run.command}\` exits 0`)
    const answer = answers[n]
    if (answer) {
      tt.match(normal(run.output), patternOf(normal(local(answer.shown))),
        `${where(answer.block)}: the answer shown is the answer of \`${run.command}\``)
    } else if (run.output.trim() !== '') {
      // no answer shown: the request must still work
      const body = JSON.parse(run.output) as unknown
      tt.notOk(body !== null && typeof body === 'object' && 'code' in body,
        `${where(b)}: \`${run.command}\` answers no error`)
    }
  })
}

const hasCurl = spawnSync('curl', ['--version']).status === 0
const hasPython = spawnSync('python3', ['--version']).status === 0

t.test('every example of README.md and docs/partner-guide.md, from a fresh first boot', {
  skip: hasCurl ? false : 'NO CURL: install curl (.ci/run does) to run the docs\' curl examples'
}, async (t) => {
  const done = new Set<Block>()
  const skipped = new Map<Block, string>()
  const find = (blocks: Block[], section: string, lang: string, has = '') => {
    const found = blocks.find((b) => b.section === section && b.lang === lang && b.text.includes(has) &&
      !done.has(b) && !skipped.has(b))
    if (!found) throw new Error(`no ${lang} block in "${section}" holding "${has}"`)
    return found
  }
  const skip = (b: Block, reason: string) => { skipped.set(b, reason); t.comment(`skipped ${where(b)}: ${reason}`) }

  // the TypeScript example is type-checked meanwhile (a compiler takes seconds): saved as get.ts in a
  // folder of its own, whose node_modules are this project's (what the guide's npm install gives)
  const tsBlock = find(GUIDE, 'Rate limits', 'ts')
  const tsRun = find(GUIDE, 'Rate limits', 'sh', 'get.ts')
  const folder = tmpDataDir(t, 'lsp-get-')
  symlinkSync(join(REPO_ROOT, 'node_modules'), join(folder, 'node_modules'))
  writeFileSync(join(folder, 'get.ts'), tsBlock.text + '\n')
  const tsCommands = commandsOf(tsRun)
  t.match(tsCommands[0], /^npm install --save-dev typescript tsx @types\/node$/,
    'the guide installs what this project has: the test runs in a folder with its node_modules')
  const typeCheck = tsCommands.find((c) => c.startsWith('npx tsc '))!
  const typeChecked = new Promise<CliResult>((resolve) => {
    const child = spawn(...bare('bash', ['-c', typeCheck]), { cwd: folder })
    let out = ''
    child.stdout.on('data', (d) => { out += d })
    child.stderr.on('data', (d) => { out += d })
    child.on('close', (code) => resolve({ status: code ?? -1, stdout: out, stderr: '' }))
  })

  // 1. the first boot, exactly as `npm start` on a fresh clone does it, on an empty DATA_DIR
  const dir = tmpDataDir(t)
  const env = { DATA_DIR: dir, NODE_ENV: 'development' }
  const server = await startServer(env)
  t.teardown(() => server.stop('SIGKILL'))
  origin = new URL(server.url).origin
  const printed = () => server.output().split('\n').filter((l) => !l.startsWith('{')).join('\n').trim()
  // the token is printed just after the listening line, maybe in the next chunk of output
  await until('the first boot\'s token', () => /First request:\n {2}curl '[^']*'/.test(printed()), 5000)
  const bootOutput = find(README, 'First request', '')
  t.match(printed(), patternOf(local(bootOutput.text)), `${where(bootOutput)}: what the first boot prints`)
  done.add(bootOutput)
  tokens.demo = /keep it:\n {2}(lsp_[\w-]{43})\n/.exec(printed())![1]

  // README: the first requests, with the demo token
  const first = find(README, 'First request', 'sh', 'export TOKEN')
  check(t, first, README, runBlock(first, tokens.demo))
  done.add(first)

  // the growth partner of the guide's examples, made by the README's own commands
  const cli = find(README, 'Operator CLI', 'sh')
  const cliLines = commandsOf(cli)
  const cliRun = new Set<string>()
  const runCli = async (line: string) => {
    const args = line.replace(/\s+#.*$/, '').match(/"[^"]*"|\S+/g)!.map((a) => a.replace(/^"(.*)"$/, '$1'))
    t.same(args.slice(0, 3), ['npm', 'run', 'admin'], `${where(cli)}: \`${line}\` is the CLI`)
    cliRun.add(line)
    // a --file is the operator's, in the folder the command runs from (INIT_CWD, as npm names it)
    return await adminInProcess(args.slice(4), { ...env, INIT_CWD: folder })
  }
  const created = await runCli(cliLines.find((l) => l.includes('partners create'))!)
  t.equal(created.status, 0, 'partners create --tier growth')
  tokens.growth = /(lsp_[\w-]{43})/.exec(created.stdout)![1]
  t.equal((await runCli(cliLines.find((l) => l.includes('--site-by-id on'))!)).status, 0, 'and --site-by-id on')
  // usage is never counted nor in the telemetry: the partner is known once it answers 200
  await until('the growth partner known to the service', async () => {
    const usage = await fetch(`${origin}/v1/usage`, { headers: { authorization: `Bearer ${tokens.growth}` } })
    await usage.arrayBuffer()
    return usage.status === 200
  })

  // the partner guide, in its order; the examples it says need another state get it first
  const guideText = readFileSync(join(REPO_ROOT, 'docs/partner-guide.md'), 'utf8')
  t.match(guideText, /the quick start's with the `demo`\npartner's token, the others with the token of a growth/,
    'the guide says which partner each example is')
  t.ok(guideText.includes('`npm run admin -- partners create --name "Acme Medevac" --tier growth`') &&
    cliLines.some((l) => l.includes('partners create --name "Acme Medevac" --tier growth')),
  'made as the README shows')
  for (const b of GUIDE) {
    if (done.has(b) || skipped.has(b)) continue
    if (b === tsBlock || b === tsRun) continue // run below
    if (b.lang === 'python') {
      t.match(guideText, /Saved as `get.py`, it runs with `python3 get.py`/, 'the guide says how to run it')
      if (!hasPython) {
        skip(b, 'python3 is not installed')
        continue
      }
      writeFileSync(join(folder, 'get.py'), b.text + '\n')
      const r = spawnSync('python3', ['get.py'], {
        cwd: folder, encoding: 'utf8', env: childEnv({ BASE: `${origin}/v1`, TOKEN: tokens.growth })
      })
      t.equal(r.status, 0, `${where(b)}: python3 get.py exits 0 ${r.stderr}`)
      t.match(r.stdout, /'id': 'sbx-\d{7}'/, 'and prints the nearest site')
      done.add(b)
      continue
    }
    if (b.section === 'Quick start') {
      t.match(b.before, /prints the `demo` partner's token/, `${where(b)}: the quick start is the demo partner's`)
      check(t, b, GUIDE, runBlock(b, tokens.demo))
    } else if (b.section === 'Rate limits' && b.lang === 'sh') {
      // the demo partner, its minute window full: the same request, until refused
      t.match(b.before, /the `demo` partner's once 30 requests were accepted within a minute/, `${where(b)}: its state`)
      for (let n = 0; n < 31; n++) {
        const [run] = runBlock(b, tokens.demo)
        if (run.output.startsWith('HTTP/1.1 429')) break
      }
      check(t, b, GUIDE, runBlock(b, tokens.demo))
    } else if (b.section === 'Rate limits' && b.lang === '' && b.text.startsWith('HTTP/1.1 503 ')) {
      skip(b, 'needs the shared state (Redis) out of reach while the instance knows nothing of the partner\'s ' +
        'windows; test/e2e/redis-outage.test.ts makes that 503 with a real redis-server')
      continue
    } else if (b.lang === 'sh') {
      if (b.section === 'GET /v1/sites/{id}') {
        t.match(b.before, /once approved\n\(`npm run admin -- partners update acme-medevac --site-by-id on`\)/,
          `${where(b)}: its state, made above with the README's command`)
      }
      check(t, b, GUIDE, runBlock(b, tokens.growth))
    } else {
      t.fail(`${where(b)}: a ${b.lang || 'plain'} block that no example here runs (an answer without its request?)`)
    }
    done.add(b)
    const a = answerAfter(b, GUIDE)
    if (a) done.add(a)
  }

  // the TypeScript example: type-checked (above) and run as the guide says
  const checked = await typeChecked
  t.equal(checked.status, 0, `${where(tsRun)}: \`${typeCheck}\` passes ${checked.stdout}`)
  const run = spawnSync(...bare('bash', ['-c', tsCommands.find((c) => c.startsWith('npx tsx '))!]), {
    cwd: folder, encoding: 'utf8', env: childEnv({ BASE: `${origin}/v1`, TOKEN: tokens.growth })
  })
  t.equal(run.status, 0, `${where(tsRun)}: npx tsx get.ts exits 0 ${run.stderr}`)
  t.match(run.stdout, /id: 'sbx-\d{7}'/, 'and prints the nearest site')
  done.add(tsBlock).add(tsRun)

  // the rest of the README's CLI block, against this DATA_DIR and the running server
  writeFileSync(join(folder, 'sites.csv'), 'id,category,name,region,country,latitude,longitude,tags\n' +
    'p-1,4,Example Hotel,EUR,GB,51.5,-0.12,~helipad|~fuel\n')
  t.match(readFileSync(join(REPO_ROOT, 'README.md'), 'utf8'),
    /header `id,category,name,region,country,latitude,longitude,tags`/, 'a sites.csv as the README describes it')
  for (const line of cliLines) {
    if (cliRun.has(line)) continue
    const r = await runCli(line)
    t.equal(r.status, 0, `${where(cli)}: \`${line}\` exits 0 ${r.stderr}`)
    if (/ --json( |$)/.test(line.replace(/\s+#.*$/, ''))) t.doesNotThrow(() => JSON.parse(r.stdout), 'and prints JSON')
  }
  done.add(cli)

  // what cannot be run here, and why
  for (const b of README) {
    if (done.has(b)) continue
    if (b.text.startsWith('npm install && npm start')) {
      skip(b, 'installing and the whole test suite: this test is part of npm test, and boots as npm start does')
    } else if (b.text.startsWith('npm ci --omit=dev')) {
      skip(b, 'a production install: test/slow/production-install.test.ts runs the Dockerfile\'s steps')
    } else {
      t.fail(`${where(b)}: a block that no example here runs`)
    }
  }
  t.equal(await server.stop('SIGTERM'), 0, 'the server closes cleanly')
})
