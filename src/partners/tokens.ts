import { createHash, randomBytes } from 'node:crypto'

export const TOKEN_PREFIX = 'lsp_'

/** 256 random bits; shown once, never stored. */
export const newToken = () => TOKEN_PREFIX + randomBytes(32).toString('base64url')

/** What is stored and looked up: a token is found by its digest, never compared by prefix. */
export const tokenDigest = (token: string) => createHash('sha256').update(token, 'utf8').digest('hex')
