#!/usr/bin/env node
// The operator CLI as a package bin: loads the TypeScript entry through tsx and runs it.
import { register } from 'tsx/esm/api'

register()
const { main } = await import('./admin.ts')
process.exitCode = await main(process.argv.slice(2), { name: 'lsp-admin' })
