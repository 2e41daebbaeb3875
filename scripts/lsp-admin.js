#!/usr/bin/env node
// The operator CLI as a package bin: loads the TypeScript entry through tsx.
import { register } from 'tsx/esm/api'

register()
await import('./admin.ts')
