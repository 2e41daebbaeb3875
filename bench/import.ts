// Imports a CSV file into a dataset file and prints the time and this process's peak RSS.
import { importSites } from '../src/sites/import.ts'

const [file, target] = process.argv.slice(2)
const started = performance.now()
const result = await importSites({ file, format: 'csv', target, precision: 3 })
if (!result.ok) throw new Error(result.errors.join('\n'))
process.stdout.write(JSON.stringify({
  seconds: Math.round((performance.now() - started) / 100) / 10,
  maxRssKb: process.resourceUsage().maxRSS,
  sites: result.siteCount
}) + '\n')
