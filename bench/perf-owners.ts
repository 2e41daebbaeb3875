// Who a CPU sample of `perf record -g` belongs to (bench/profile.ts): the collector, the
// kernel by what the process asked of it, else the innermost JavaScript frame that names an owner.
// V8's builtins and runtime carry no owner of their own: a megamorphic load or a string's
// flattening is charged to the JavaScript that caused it. Node's utility modules (buffer, crypto's
// wrappers) pass the sample up to their caller too, so that Buffer.byteLength of the access lines
// counts for the access line.

/** Owners, most specific first; a frame is tested against them in this order. */
const JS_OWNERS: Array<[string, RegExp]> = [
  ['the search', /src\/sites\/spatial\.js|findNearby/],
  ['answer assembly (record fragments)', /src\/answers\//],
  ['access line (made and written)', /access-log\.js|sonic-boom|log-destination\.js/],
  ['query validation', /src\/http\/query\.js/],
  ['compression (zlib)', /src\/http\/encoding\.js|node:zlib/],
  ['the limiter', /src\/limits\//],
  ['the cache (key, ETag, lookup, store)', /src\/cache\/|lru-cache/],
  ['the service\'s hooks and routes', /\/dist\/(src|plugins)\//],
  ['Fastify and its router', /node_modules\/(fastify|find-my-way|@fastify|avvio)/],
  [
    'Node\'s HTTP server, streams and sockets',
    /node:(_http|net|events|internal\/(streams|stream_base|http|process\/task_queues|timers))/
  ]
]

/** Frames that decide a sample wherever they are in its stack (native code called from anywhere). */
const ANYWHERE: Array<[string, RegExp]> = [
  ['the collector', new RegExp([
    'Scaveng', 'ConcurrentMarking', 'MarkCompact', 'MinorMark', 'Heap::Collect', 'GCTracer', 'Sweeper',
    'IncrementalMarking', 'Heap::PerformGarbage', 'MarkingVisitor'
  ].join('|'))],
  ['digests (token SHA-256, ETag SHA-1)', /node::crypto::Hash|EVP_Digest|sha1_block|sha256_block|SHA1_|SHA256_/],
  ['request id (randomUUID)', /CSPRNG|RandomBytes|EVP_RAND/],
  ['compression (zlib)', /deflate|longest_match|compress_block|BrotliEncoder|crc32/]
]

/** A kernel sample, by the kernel function under it (kernel frames only, whole names). */
const KERNEL: Array<[string, RegExp]> = [
  ['kernel: socket send (on loopback the receiver\'s side runs in it)', /^(tcp_sendmsg|sock_sendmsg|sock_write_iter) /],
  ['kernel: reads (the requests; libuv\'s wake-ups)', /^(tcp_recvmsg|sock_read_iter|ksys_read) /],
  ['kernel: log write', /^(ksys_write|vfs_write) /],
  ['kernel: epoll', /^(do_epoll_wait|ep_poll|__x64_sys_epoll_\w+) /],
  ['kernel: futex (threads)', /^(futex_\w+|do_futex|__x64_sys_futex) /],
  [
    'kernel: memory (mmap, page faults)',
    /^(__x64_sys_(mmap|munmap|madvise)|do_user_addr_fault|exc_page_fault|handle_mm_fault) /
  ],
  ['kernel: scheduling', /^(schedule|__schedule|finish_task_switch\S*) /]
]

/** Native code without a JavaScript frame that has an owner: V8's helper threads, Node's parser and streams. */
const NATIVE: Array<[string, RegExp]> = [
  ['V8\'s compilers (helper thread)', /compiler::|Compiler|Maglev|Turbofan|PlatformWorker/],
  [
    'Node\'s HTTP server, streams and sockets',
    /llhttp|Parser::|StreamBase|LibuvStreamWrap|TCPWrap|uv__read|uv__write|uv__stream_io/
  ]
]

export const OTHER = 'other (V8 runtime, libc, the event loop)'

/** The owner of one sample; `frames` from the innermost out, each "symbol (dso)" as perf script prints them. */
export function ownerOf (frames: string[]): string {
  if (frames.length === 0) return OTHER
  if (frames[0].includes('[kernel')) {
    const kernel = frames.filter((f) => f.includes('[kernel'))
    for (const [name, rx] of KERNEL) if (kernel.some((f) => rx.test(f))) return name
    return 'kernel: other'
  }
  for (const [name, rx] of ANYWHERE) if (frames.some((f) => rx.test(f))) return name
  for (const frame of frames) {
    if (!frame.startsWith('JS:') && !frame.startsWith('RegExp:')) continue
    for (const [name, rx] of JS_OWNERS) if (rx.test(frame)) return name
  }
  // every main-thread stack ends in the event loop (uv_run, node::Start): only what a frame does counts
  for (const [name, rx] of NATIVE) if (frames.some((f) => rx.test(f))) return name
  return OTHER
}

/**
 * Samples by owner from `perf script -F comm,tid,ip,sym,dso` output (a sample's header line
 * unindented, then a line per frame, indented; samples separated by a blank line).
 */
export function samplesByOwner (script: string): Map<string, number> {
  const counts = new Map<string, number>()
  let frames: string[] = []
  const end = () => {
    if (frames.length > 0) {
      const owner = ownerOf(frames)
      counts.set(owner, (counts.get(owner) ?? 0) + 1)
    }
    frames = []
  }
  for (const line of script.split('\n')) {
    if (line.trim() === '') end()
    else if (/^\s/.test(line)) frames.push(line.trim().replace(/^[0-9a-f]+\s+/, ''))
  }
  end()
  return counts
}
