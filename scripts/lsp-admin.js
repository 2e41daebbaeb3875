#!/usr/bin/env node
// The operator CLI as a package bin: runs the compiled CLI (dist/, built by npm install).
import { main } from '../dist/scripts/admin.js'

process.exitCode = await main(process.argv.slice(2), { name: 'lsp-admin' })
