/**
 * Wraps `run` (a dataset reload) so that it never runs twice at once: requests made while it runs
 * are merged into one more run after it, given to that run. Every caller gets the outcome of a run
 * that started after its request (a run under way may have read what the caller asks to be read anew).
 */
export function coalescing<Request, Result> (
  run: (requests: Request[]) => Promise<Result>
): (request: Request) => Promise<Result> {
  let running = false
  let queued: { requests: Request[], result: Promise<Result>, begin: () => void } | undefined

  const launch = (requests: Request[]): Promise<Result> => {
    running = true
    const result = new Promise<Result>((resolve) => resolve(run(requests))) // a synchronous throw rejects too
    const done = () => {
      running = false
      const next = queued
      queued = undefined
      next?.begin()
    }
    result.then(done, done)
    return result
  }

  return (request) => {
    if (!running) return launch([request])
    if (!queued) {
      const requests: Request[] = []
      let begin = () => {}
      const result = new Promise<Result>((resolve) => { begin = () => resolve(launch(requests)) })
      queued = { requests, result, begin }
    }
    queued.requests.push(request)
    return queued.result
  }
}
