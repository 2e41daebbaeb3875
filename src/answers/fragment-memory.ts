// The memory all record fragments may take (FRAGMENTS_MAX_MB). Fragment stores take their chunks
// here; when the chunks reach the limit, a chunk of some store is forgotten before the next answer
// is assembled (its sites' fragments are made again when next asked for) and its memory is used
// for the next chunk. Forgetting waits for an answer's start because an answer under way reads
// the spans of the fragments it has just made.
//
// Which chunk: the oldest not used since it last came up, a second chance (CLOCK) in place of
// least recently used. Reads go through spans, so the one place to note a use cheaply is the
// chunk: a mark per chunk, set when an answer copies out of it (unless that answer wrote to it). A chunk marked
// when it comes up has its mark cleared and goes behind the others. Records partners keep asking
// for are then not made again each time their chunk is the oldest, and chunks nobody used after
// they were made go first.

/** What holds chunks, by number: it drops every reference to a chunk it forgets and gives its bytes back. */
export interface ChunkHolder {
  forget (number: number): Buffer
  /** whether an answer that did not write to chunk `number` has copied out of it since last asked; clears the mark */
  wasRead (number: number): boolean
  /** the chunk it writes to, -1 for none */
  readonly fillingNumber: number
}

/** Bytes of a holder's chunks, kept apart from the holder so that its finalizer can read them. */
export interface ChunkAccount {
  bytes: number
}

interface Held {
  holder: WeakRef<ChunkHolder>
  account: ChunkAccount
  number: number
}

export class FragmentMemory {
  /** a chunk's offsets take the low 23 bits of a span's position, its number the 9 above */
  static readonly CHUNK_BITS = 23
  static readonly CHUNK_BYTES = 1 << FragmentMemory.CHUNK_BITS // 8 MB
  /** bytes of the chunks held and of the spare one */
  private allocated = 0
  /** chunks held, oldest first (a chunk given a second chance goes last); weak, so that a dataset dropped by a reload is not kept for its fragments */
  private held: Held[] = []
  private spare: Buffer | undefined
  private forgottenChunks = 0
  // A dropped dataset's chunks are freed with it; its bytes and entries leave the count then.
  private readonly finalizer = new FinalizationRegistry<ChunkAccount>((account) => {
    this.allocated -= account.bytes
    account.bytes = 0
    this.held = this.held.filter((held) => held.account !== account)
  })

  constructor (readonly limitBytes = Infinity) {}

  /** Counts `holder`'s chunks, through `account`, until the holder is collected. */
  register (holder: ChunkHolder, account: ChunkAccount): void {
    this.finalizer.register(holder, account)
  }

  /** Bytes of all chunks, held or spare: what the limit bounds. */
  get bytes (): number {
    return this.allocated
  }

  /** Chunks forgotten to stay within the limit, since the start. */
  get forgotten (): number {
    return this.forgottenChunks
  }

  /** Whether a chunk must be forgotten before the next answer (read at every answer's start). */
  get pressing (): boolean {
    return this.held.length > 0 && (this.overLimit() || this.noRoom())
  }

  /** A chunk of at least `bytes` for `holder`'s chunk `number`: the spare one, or a new one. */
  take (holder: ChunkHolder, account: ChunkAccount, number: number, bytes: number): Buffer {
    let chunk = this.spare
    if (chunk !== undefined && bytes <= chunk.length) {
      this.spare = undefined
    } else {
      // past the limit for now when an answer needs more than the spare: forgotten at the next answer
      chunk = Buffer.allocUnsafeSlow(Math.max(FragmentMemory.CHUNK_BYTES, bytes))
      this.allocated += chunk.length
    }
    account.bytes += chunk.length
    this.held.push({ holder: new WeakRef(holder), account, number })
    return chunk
  }

  /**
   * Forgets chunks until the chunks are within the limit with room for one more (the spare):
   * called at an answer's start while `pressing`. Each time the oldest chunk not used since it last
   * came up; a chunk still being written to goes last: forgetting it would make its store take a
   * chunk again at once.
   */
  settle (): void {
    while (this.pressing) {
      const held = this.takeNextToForget()
      const holder = held.holder.deref()
      if (holder === undefined) {
        // collected, its finalizer not run yet: its bytes leave the count now
        this.allocated -= held.account.bytes
        held.account.bytes = 0
        continue
      }
      const chunk = holder.forget(held.number)
      held.account.bytes -= chunk.length
      this.forgottenChunks++
      // kept for the next chunk (counted, so the loop goes on while past the limit), else freed
      if (this.spare === undefined && chunk.length === FragmentMemory.CHUNK_BYTES) this.spare = chunk
      else this.allocated -= chunk.length
    }
  }

  /**
   * Takes the chunk to forget out of `held`: the oldest full one not used since it last came up
   * (or of a collected store). The full chunks passed over on the way had their marks cleared by
   * asking; they go behind the others, in their order. If every full chunk was marked, the oldest
   * of them goes (its mark is clear now); if none is full, the oldest chunk.
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

  private overLimit (): boolean {
    return this.allocated > this.limitBytes
  }

  private noRoom (): boolean {
    return this.spare === undefined && this.allocated + FragmentMemory.CHUNK_BYTES > this.limitBytes
  }
}
