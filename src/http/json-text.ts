// JSON text for the few values written by hand on every request (the access line, error bodies): most
// need no escape, so the JSON.stringify call is skipped; the text is the same, byte for byte.

/** JSON.stringify(text), without the call when no character needs escaping. */
export function jsonString (text: string): string {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    // quote, backslash, control characters and surrogates (a lone one is escaped) take the slow way
    if (c < 0x20 || c === 0x22 || c === 0x5c || (c >= 0xd800 && c <= 0xdfff)) return JSON.stringify(text)
  }
  return '"' + text + '"'
}

/** JSON.stringify(value) for a flat value, strings and finite numbers without the call. */
export function jsonValue (value: unknown): string {
  if (typeof value === 'string') return jsonString(value)
  if (typeof value === 'number' && Number.isFinite(value)) return String(value)
  return JSON.stringify(value)
}
