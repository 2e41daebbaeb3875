// A request's logger, made when it first logs: Fastify's default makes a pino child for every request, which most
// never use (their access line is written apart, src/http/access-log.ts). Fastify's childLoggerFactory (src/app.ts).
import type { FastifyBaseLogger } from 'fastify'
import type { Bindings, ChildLoggerOptions } from 'pino'

type Method = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'
type Loose = (...args: unknown[]) => void

export class LazyChildLogger implements FastifyBaseLogger {
  private made: FastifyBaseLogger | undefined

  constructor (
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions
  ) {}

  /** The child pino would have made at the request's start: same parent, bindings and options. */
  get logger (): FastifyBaseLogger { return (this.made ??= this.parent.child(this.bindings, this.options)) }

  get level (): string { return this.made?.level ?? this.options.level ?? this.parent.level }
  set level (level: string) { this.logger.level = level }

  private call (method: Method, args: unknown[]) { (this.logger[method] as Loose).apply(this.logger, args) }
  fatal (...args: unknown[]) { this.call('fatal', args) }
  error (...args: unknown[]) { this.call('error', args) }
  warn (...args: unknown[]) { this.call('warn', args) }
  info (...args: unknown[]) { this.call('info', args) }
  debug (...args: unknown[]) { this.call('debug', args) }
  trace (...args: unknown[]) { this.call('trace', args) }
  silent () {} // pino's silent writes nothing: no child needed to call it
  child (bindings: Bindings, options?: ChildLoggerOptions) { return this.logger.child(bindings, options) }
}

/** Fastify's childLoggerFactory: the default one's result, made on first use. */
export const lazyChildLogger = (logger: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions) =>
  new LazyChildLogger(logger, bindings, options)
