// `npm start`'s command line (package.json), read by the benchmarks, which start a build's service as it does.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

/** The arguments `npm start` gives node in `root`: its Node flags, then the entry point as an absolute path. */
export function startArgs (root: string): string[] {
  const packageJson = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: { start: string } }
  const start = packageJson.scripts.start.split(/\s+/)
  if (start[0] !== 'node') throw new Error(`package.json's start script does not run node: ${start.join(' ')}`)
  return start.slice(1).map((arg) => arg.startsWith('-') ? arg : join(root, arg))
}
