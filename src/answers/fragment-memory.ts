// The memory all record fragments may take (FRAGMENTS_MAX_MB). At the limit a chunk is forgotten before the next
// answer, not within one (it reads the spans it has just made); its sites' fragments are made again when asked for.
// The chunk is the oldest not copied from since it last came up (a second chance), so records in demand stay.

/** What holds chunks, by number: it drops every reference to a chunk it forgets and gives its bytes back. */
export interface ChunkHolder {
  forget (number: number): Buffer
  /** whether an answer that did not write to chunk `number` has read it since last asked; clears the mark */
  wasRead (number: number): boolean
  /** the chunk it writes to, -1 for none */
  readonly fillingNumber: number
}

/** Bytes of a holder's chunks, kept apart from the holder so that its finalizer can read them. */
export interface ChunkAccount { bytes: number }

interface Held { holder: WeakRef<ChunkHolder>, account: ChunkAccount, number: number }

export class FragmentMemory {
  /** a chunk's offsets take the low 23 bits of a span's position, its number the bits above */
  static readonly CHUNK_BITS = 23
  static readonly CHUNK_BYTES = 1 << FragmentMemory.CHUNK_BITS
  /** Bytes of all chunks, held or spare: what the limit bounds. */
  bytes = 0
  /** Chunks forgotten since the start. */
  forgotten = 0
  /** oldest first (a second chance goes last); weak, so that a dataset dropped by a reload is not kept */
  private held: Held[] = []
  private spare: Buffer | undefined
  // A dropped dataset's chunks are freed with it; its bytes and entries leave the count then.
  private readonly finalizer = new FinalizationRegistry<ChunkAccount>((account) => {
    this.bytes -= account.bytes
    account.bytes = 0
    this.held = this.held.filter((held) => held.account !== account)
  })

  constructor (readonly limitBytes = Infinity) {}

  register (holder: ChunkHolder, account: ChunkAccount): void {
    this.finalizer.register(holder, account)
  }

  /** Whether a chunk must be forgotten before the next answer (read at its start): past the limit, or no room left. */
  get pressing (): boolean {
    return this.held.length > 0 && (this.bytes > this.limitBytes ||
      (this.spare === undefined && this.bytes + FragmentMemory.CHUNK_BYTES > this.limitBytes))
  }

  /** A chunk of at least `bytes` for `holder`'s chunk `number`: the spare one, or a new one. */
  take (holder: ChunkHolder, account: ChunkAccount, number: number, bytes: number): Buffer {
    let chunk = this.spare
    if (chunk !== undefined && bytes <= chunk.length) {
      this.spare = undefined
    } else {
      // past the limit for now when an answer needs more than the spare: forgotten at the next answer
      chunk = Buffer.allocUnsafeSlow(Math.max(FragmentMemory.CHUNK_BYTES, bytes))
      this.bytes += chunk.length
    }
    account.bytes += chunk.length
    this.held.push({ holder: new WeakRef(holder), account, number })
    return chunk
  }

  /** Forgets chunks until within the limit with room for the spare (at an answer's start, while `pressing`). */
  settle (): void {
    while (this.pressing) {
      const held = this.takeNextToForget()
      const holder = held.holder.deref()
      if (holder === undefined) {
        // collected, its finalizer not run yet: its bytes leave the count now
        this.bytes -= held.account.bytes
        held.account.bytes = 0
        continue
      }
      const chunk = holder.forget(held.number)
      held.account.bytes -= chunk.length
      this.forgotten++
      // kept for the next chunk (counted, so the loop goes on while past the limit), else freed
      if (this.spare === undefined && chunk.length === FragmentMemory.CHUNK_BYTES) this.spare = chunk
      else this.bytes -= chunk.length
    }
  }

  /**
   * Takes out of `held` the oldest full chunk (not being written) not read since it last came up, or of a collected
   * store; those passed over go last, in order. All marked: the oldest full one; none full: the oldest.
   */
  private takeNextToForget (): Held {
    const passed: Held[] = []
    let at = 0
    for (; at < this.held.length; at++) {
      const { holder, number } = this.held[at]
      const store = holder.deref()
      if (store === undefined || store.fillingNumber !== number) {
        if (store === undefined || !store.wasRead(number)) break
        passed.push(this.held[at])
      }
    }
    const victim = at < this.held.length ? this.held[at] : (passed[0] ?? this.held[0])
    const behind = new Set(passed)
    behind.add(victim)
    this.held = [...this.held.filter((held) => !behind.has(held)), ...passed.filter((held) => held !== victim)]
    return victim
  }
}
