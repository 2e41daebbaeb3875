#!/usr/bin/env node
// npm's prepare (npm install, npm ci, npm pack) and prestart: compiles the TypeScript sources into
// dist/ when the compiler and the sources are here. A production install (npm ci --omit=dev, or the
// packed package, which ships dist/ and no sources) has neither, and runs the dist/ it was given.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))

function compiler () {
  try {
    return createRequire(import.meta.url).resolve('typescript/bin/tsc')
  } catch {
    return undefined
  }
}

const tsc = existsSync(`${root}tsconfig.build.json`) ? compiler() : undefined
if (tsc) {
  const built = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' })
  process.exit(built.status ?? 1)
}
if (!existsSync(`${root}dist/src/server.js`) || !existsSync(`${root}dist/scripts/admin.js`)) {
  process.stderr.write('dist/ is not built, and there is no TypeScript compiler and sources to build it: ' +
    'install with the dev dependencies (npm install), or install a built package\n')
  process.exit(1)
}
