// Child processes as an operator's shell would start them, without what tap adds to the test's processes.

/** This process's environment without tap's variables, then `env`. */
export const childEnv = (env: Record<string, string> = {}) => {
  const clean: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('TAP')) clean[k] = v
  return { ...clean, ...env }
}

/**
 * The command and arguments for spawn that run `node args` without NODE_OPTIONS: tap adds its process-info hook
 * to the NODE_OPTIONS of every child it sees spawned (an empty NODE_OPTIONS included), and the hook costs a child
 * more CPU than its own start.
 */
export const node = (args: string[]): [string, string[]] => bare(process.execPath, args)

/** `command args` for spawn, without NODE_OPTIONS (see `node`): for npm, bash and other commands that run node. */
export const bare = (command: string, args: string[]): [string, string[]] =>
  ['env', ['-u', 'NODE_OPTIONS', command, ...args]]
