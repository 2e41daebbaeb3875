// What the operator CLI's commands return and throw, for scripts/admin.ts and the usage commands
// (scripts/admin-usage.ts): a UsageError exits 2, a FailedError (or anything else) 1.
import type { Config } from '../src/config.ts'
import { withoutCredentials } from '../src/http/redact.ts'
import { PartnerStoreError } from '../src/partners/store.ts'

export class UsageError extends Error {}
export class FailedError extends Error {}

export type Options = Record<string, string | boolean | undefined>
/** A command's outcome. A failure (exitCode) ends its text with its one-line reason, `error: ...`. */
export interface Result { text: string, json: unknown, exitCode?: number }

/** `--name`'s value as a whole number from min to max; `why` is added to the message. */
export function integer (
  name: string,
  value: string | boolean | undefined,
  min: number,
  max: number,
  why = ''
): number | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'string' || !/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new UsageError(`--${name} must be a whole number from ${min} to ${max}${why}`)
  }
  return Number(value)
}

/** A Redis command that failed or timed out, as the operator reads it. */
const sharedStateFailed = (config: Config, err: unknown) => new FailedError(
  `the shared state at STATE_URL (${withoutCredentials(config.stateUrl)}) did not answer: ${(err as Error).message}`)

/** An error met while working on the partners' store, as the CLI reports it. */
function storeFailure (config: Config, err: unknown): unknown {
  if (err instanceof PartnerStoreError) {
    return err.reason === 'invalid' ? new UsageError(err.message) : new FailedError(err.message)
  }
  if (config.stateUrl && !(err instanceof UsageError) && !(err instanceof FailedError)) {
    return sharedStateFailed(config, err)
  }
  return err
}

/**
 * Runs a command's work on what `open` gave (a store, a connection), reporting its errors as
 * storeFailure does, and closes it.
 */
export async function withOpened<S extends { close (): unknown }, T> (
  config: Config,
  open: () => S | Promise<S>,
  fn: (opened: S) => T | Promise<T>
): Promise<T> {
  const opened = await open()
  try {
    return await fn(opened)
  } catch (err) {
    throw storeFailure(config, err)
  } finally {
    opened.close()
  }
}
