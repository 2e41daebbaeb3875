// The product's import graph: no file reaches itself through its imports (type-only ones included), and plugins
// are wiring that only app.ts registers, so nothing else in src/ imports them.
import t from 'tap'
import { readFileSync, readdirSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'

const root = resolve(import.meta.dirname, '../..')
const files = ['src', 'plugins'].flatMap((dir) =>
  readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(dir, f)))

/** Each file's relative imports and re-exports, as paths from the root. */
const graph = new Map(files.map((file) => {
  const text = readFileSync(join(root, file), 'utf8')
  const targets = [...text.matchAll(/^(?:import|export)\b[^'"]*?from '(\.[^']+)'/gms)]
    .map((m) => relative(root, resolve(root, dirname(file), m[1])))
  return [file, targets]
}))

t.test('the graph was read: every import names a file of the product', async (t) => {
  t.ok(files.length > 50)
  t.ok(graph.get('src/app.ts')!.includes('plugins/partners.ts'))
  for (const [file, targets] of graph) {
    for (const target of targets) t.ok(graph.has(target), `${file} imports ${target}`, { diagnostic: false })
  }
})

t.test('no import circle', async (t) => {
  // depth-first, each file once: a target still on the path closes a circle
  const done = new Set<string>()
  const path: string[] = []
  const circles: string[] = []
  const visit = (file: string) => {
    if (done.has(file)) return
    const at = path.indexOf(file)
    if (at >= 0) {
      circles.push([...path.slice(at), file].join(' -> '))
      return
    }
    path.push(file)
    for (const target of graph.get(file) ?? []) visit(target)
    path.pop()
    done.add(file)
  }
  for (const file of files) visit(file)
  t.same(circles, [])
})

t.test('only app.ts imports plugins/', async (t) => {
  const importsPlugins = (file: string) => graph.get(file)!.some((target) => target.startsWith('plugins/'))
  const importers = files.filter((f) => !f.startsWith('plugins/') && importsPlugins(f))
  t.same(importers, ['src/app.ts'])
})
