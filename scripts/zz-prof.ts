import { Session } from 'node:inspector/promises'
import { writeFileSync } from 'node:fs'
import { buildApp } from '../src/app.ts'
import { loadConfig } from '../src/config.ts'
const config = loadConfig({ ...process.env, DATA_DIR: 'bench/data', NODE_ENV: 'production', LOG_LEVEL: 'info', CACHE_MAX_ENTRIES: '1000', PORT: '3999' })
const app = await buildApp(config)
await app.listen({ port: 3999, host: '127.0.0.1' })
const session = new Session(); session.connect()
console.log('profiling')
setTimeout(async () => { await session.post('Profiler.enable'); await session.post('Profiler.start') }, Number(process.env.PROFILE_DELAY ?? 0))
process.on('SIGINT', async () => {
  const { profile } = await session.post('Profiler.stop')
  writeFileSync('/tmp/prof/inproc.cpuprofile', JSON.stringify(profile)); process.exit(0)
})
