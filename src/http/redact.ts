// Tokens never reach a log line: every logged URL passes through here.
import { TOKEN_PREFIX } from '../partners/tokens.ts'

const SECRET_PARAM = /^(api[_-]?key|key|token|access[_-]?token)$/i
/** A token put where none belongs (a path segment, another parameter), plain or %-encoded. */
const TOKEN_LIKE = new RegExp(`${TOKEN_PREFIX}[A-Za-z0-9_%-]{8,}`, 'g')

/** The same, once its %-escapes are decoded (`%6Csp_…` hides the prefix from TOKEN_LIKE). */
const DECODED_TOKEN_LIKE = new RegExp(`${TOKEN_PREFIX}[A-Za-z0-9_-]{8,}`)
/** A part of a URL that holds a token once decoded: redacted whole. */
const hidesToken = (part: string) => part.includes('%') && DECODED_TOKEN_LIKE.test(decodeName(part))

function decodeName (name: string): string {
  try {
    return decodeURIComponent(name.replace(/\+/g, ' '))
  } catch {
    return name
  }
}

/** The URL with secret-looking parameters' values, and anything shaped like our tokens, as [REDACTED]. */
export function redactUrl (url: string): string {
  if (url.includes(TOKEN_PREFIX)) url = url.replace(TOKEN_LIKE, '[REDACTED]')
  const q = url.indexOf('?')
  const end = q < 0 ? url.length : q
  // the path is looked at again only when it has an escape (most requests' has none: no new string)
  const path = url.lastIndexOf('%', end - 1) < 0
    ? undefined
    : url.slice(0, end).split('/').map((segment) => hidesToken(segment) ? '[REDACTED]' : segment).join('/')
  // fast path: no query, or none with a name that could be secret (nor an escape that could hide one)
  if (q < 0 || !/key|token|%/i.test(url.slice(q))) return path === undefined ? url : path + url.slice(end)
  const pairs = url.slice(q + 1).split('&').map((pair) => {
    const eq = pair.indexOf('=')
    const name = eq < 0 ? pair : pair.slice(0, eq)
    if (SECRET_PARAM.test(decodeName(name))) return `${name}=[REDACTED]`
    if (hidesToken(name)) return '[REDACTED]'
    return eq >= 0 && hidesToken(pair.slice(eq + 1)) ? `${name}=[REDACTED]` : pair
  })
  return `${path ?? url.slice(0, q)}?${pairs.join('&')}`
}

/** A URL as it may be shown: user and password replaced (a STATE_URL may carry Redis credentials). */
export function withoutCredentials (url: string): string {
  try {
    const u = new URL(url)
    if (u.username) u.username = '[REDACTED]'
    if (u.password) u.password = '[REDACTED]'
    return u.toString()
  } catch {
    return '[unparseable URL]'
  }
}
