// A background job that keeps failing (Redis away, say) is reported once per outage, not once per
// attempt: `down` when it starts failing, `up` when it works again.
export function outageReporter (down: (err: unknown) => void, up: () => void): (err?: unknown) => void {
  let failing = false
  return (err?: unknown) => {
    if (err !== undefined) {
      if (!failing) down(err)
      failing = true
    } else if (failing) {
      failing = false
      up()
    }
  }
}
