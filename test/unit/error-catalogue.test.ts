// docs/errors.md's catalogue table against the catalogue the service sends from (src/errors.ts):
// every code with the same status, no code missing and none extra, so the two cannot drift apart.
import { readFileSync } from 'node:fs'
import t from 'tap'
import { ERRORS } from '../../src/errors.ts'

const DOC = new URL('../../docs/errors.md', import.meta.url)

interface DocRow { code: string, status: number, cause: string, action: string }

/** The rows of the first table under the `## Catalogue` heading. */
function catalogueRows (markdown: string): DocRow[] {
  const lines = markdown.split('\n')
  const heading = lines.findIndex((line) => line.trim() === '## Catalogue')
  if (heading < 0) throw new Error('docs/errors.md has no "## Catalogue" heading')
  const start = lines.findIndex((line, i) => i > heading && line.startsWith('|'))
  if (start < 0) throw new Error('docs/errors.md has no table under "## Catalogue"')
  const table: string[] = []
  for (let i = start; i < lines.length && lines[i].startsWith('|'); i++) table.push(lines[i])
  // header, separator, then one row per code; cells split on " | " (the causes hold no such text)
  return table.slice(2).map((line) => {
    const cells = line.slice(1, line.endsWith('|') ? -1 : undefined).split(' | ').map((c) => c.trim())
    const code = /^`([a-z_]+)`$/.exec(cells[0])?.[1]
    if (cells.length !== 4 || code === undefined || !/^\d{3}$/.test(cells[1])) {
      throw new Error('docs/errors.md: a catalogue row not of the form ' +
        `| \`code\` | status | cause | what to do |: ${line}`)
    }
    return { code, status: Number(cells[1]), cause: cells[2], action: cells[3] }
  })
}

t.test('docs/errors.md lists every code of src/errors.ts with its status, and no other', async (t) => {
  const rows = catalogueRows(readFileSync(DOC, 'utf8'))
  const documented = rows.map((r) => `${r.code} ${r.status}`).sort()
  const served = Object.entries(ERRORS).map(([code, e]) => `${code} ${e.status}`).sort()
  t.strictSame(documented, served)
  t.equal(new Set(rows.map((r) => r.code)).size, rows.length, 'each code listed once')
  t.strictSame(rows.filter((r) => r.cause === '' || r.action === '').map((r) => r.code), [],
    'every code has a cause and what to do')
})
