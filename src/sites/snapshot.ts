// The index snapshot: a dataset as held in memory, written beside its checked file (`production.db.index`) and read
// back much faster than the SQLite rows. It names the file's size, mtime and meta; one that does not match is ignored.
import {
  closeSync, fstatSync, fsyncSync, openSync, readSync, renameSync, rmSync, statSync, writeFileSync
} from 'node:fs'
import KDBush from 'kdbush'
import { readDatasetMeta, type DatasetMeta, type DatasetName } from './dataset-file.ts'
import { removeStaleTempFiles, tempPathFor } from '../setup/replace-file.ts'
import { datasetOf, withDatasetFile, type Dataset, type DatasetParts } from './dataset.ts'
import { CodeColumn, StringColumn } from './columns.ts'
import { identity, subIndexOf, type SubIndex } from './spatial.ts'

// changed with every change of layout: a snapshot of another layout is not read, the file is
const MAGIC = 'LSPIDX06'
export const snapshotPath = (datasetFile: string) => `${datasetFile}.index`

interface SectionTable { [name: string]: [offset: number, length: number] }
interface Header {
  file: { size: number, mtimeMs: number }
  meta: DatasetMeta
  digest: string
  count: number
  categories: number[]
  tags: string[]
  indexedTags: string[]
  /** what computed the per-slot cosines: they are read back only where Math.cos gives the same bits */
  math: string
  sections: SectionTable
}

/** Math.cos is V8's own: the same V8 on the same architecture gives the same bits, another one's are made again. */
export const SNAPSHOT_MATH = `${process.arch} v8 ${process.versions.v8}`

/** Bytes to the next multiple of 8: the layout starts every section at one. */
const padTo8 = (length: number) => (8 - (length % 8)) % 8

/** The dataset file's size and mtime as the header holds them (part of this snapshot format). */
function fileStamp (path: string) {
  const s = statSync(path)
  return { size: s.size, mtimeMs: s.mtimeMs }
}

/** What a snapshot holds: a dataset's columns and indexes, as the index worker reads them from the file. */
type SnapshotParts = DatasetParts & Pick<Dataset, 'path' | 'digest'>

export function writeSnapshot (ds: SnapshotParts) {
  const target = snapshotPath(ds.path)
  const parts: Buffer[] = []
  const sections: SectionTable = {}
  let offset = 0
  const add = (name: string, data: Buffer | ArrayBufferView | ArrayBuffer) => {
    const buf = data instanceof ArrayBuffer
      ? Buffer.from(data)
      : Buffer.from(data.buffer, data.byteOffset, data.byteLength)
    sections[name] = [offset, buf.length]
    parts.push(buf)
    offset += buf.length
    const pad = padTo8(offset)
    if (pad) { parts.push(Buffer.alloc(pad)); offset += pad }
  }
  add('ids', ds.ids.bytes)
  add('idEnds', ds.ids.ends)
  add('names', ds.names.bytes)
  add('nameEnds', ds.names.ends)
  add('regionTable', Buffer.from(JSON.stringify(ds.regions.table)))
  add('regionIdx', ds.regions.codes)
  add('countryTable', Buffer.from(JSON.stringify(ds.countries.table)))
  add('countryIdx', ds.countries.codes)
  add('categories', ds.categories)
  add('lats', ds.lats)
  add('lngs', ds.lngs)
  // an index: its kdbush data and its per-slot tables (kept, as making them at load slows a boot)
  const addIndex = (key: string, index: SubIndex) => {
    add(key, index.kd.data as ArrayBuffer)
    add(`${key}:cos`, index.slotCosLats)
    add(`${key}:slots`, index.slotPositions)
  }
  if (ds.all) addIndex('all', ds.all)
  const categories = [...ds.byCategory.keys()]
  for (const c of categories) {
    add(`cat:${c}:positions`, ds.byCategory.get(c)!.positions)
    addIndex(`cat:${c}:kd`, ds.byCategory.get(c)!)
  }
  const tags = [...ds.tagSites.keys()]
  for (const tag of tags) add(`tag:${tag}`, ds.tagSites.get(tag)!)
  const indexedTags = [...ds.tagIndexes.keys()]
  for (const tag of indexedTags) addIndex(`tagkd:${tag}`, ds.tagIndexes.get(tag)!)

  const header: Header = {
    file: fileStamp(ds.path), meta: ds.meta, digest: ds.digest, count: ds.count, categories, tags, indexedTags,
    math: SNAPSHOT_MATH, sections
  }
  const headerBytes = Buffer.from(JSON.stringify(header))
  const lead = Buffer.alloc(16)
  lead.write(MAGIC, 0, 'latin1')
  lead.writeUInt32LE(headerBytes.length, 8)
  const headerPad = Buffer.alloc(padTo8(16 + headerBytes.length))
  // named as the dataset writers' are: one left by a killed service is removed, a concurrent writer's left alone
  removeStaleTempFiles(target)
  const tmp = tempPathFor(target)
  const fd = openSync(tmp, 'w')
  try {
    for (const chunk of [lead, headerBytes, headerPad, ...parts]) writeFileSync(fd, chunk)
    fsyncSync(fd)
  } catch (err) {
    closeSync(fd)
    rmSync(tmp, { force: true })
    throw err
  }
  closeSync(fd)
  renameSync(tmp, target)
}

/**
 * The header, where the sections start and the snapshot's size, if it names the dataset file as it is now (size,
 * mtime, meta). Lengths read from the file are checked against its size before anything that long is allocated.
 */
function currentHeader (fd: number, path: string) {
  const lead = Buffer.alloc(16)
  if (readSync(fd, lead, 0, 16, 0) !== 16 || lead.toString('latin1', 0, 8) !== MAGIC) {
    throw new Error(`not an index snapshot of this format (${MAGIC}): ` +
      'another version of the service wrote it, or it is damaged')
  }
  const headerLength = lead.readUInt32LE(8)
  const size = fstatSync(fd).size
  if (16 + headerLength > size) throw new Error('snapshot header runs past the end of the file')
  const headerBytes = Buffer.alloc(headerLength)
  if (readSync(fd, headerBytes, 0, headerLength, 16) !== headerLength) throw new Error('snapshot is cut short')
  const header = JSON.parse(headerBytes.toString('utf8')) as Header
  const current = fileStamp(path)
  if (current.size !== header.file.size || current.mtimeMs !== header.file.mtimeMs) {
    throw new Error('made from another version of the dataset file (its size or modification time differ)')
  }
  const meta = withDatasetFile(path, readDatasetMeta)
  if (JSON.stringify(meta) !== JSON.stringify(header.meta)) {
    throw new Error('made from another version of the dataset file (its meta differs)')
  }
  return { header, sectionsAt: 16 + headerLength + padTo8(16 + headerLength), size, meta }
}

/** The dataset from its snapshot; undefined when there is none, or `unusable` is told why it does not fit the file. */
export function readSnapshot (
  path: string, name: DatasetName, unusable?: (reason: string) => void
): Dataset | undefined {
  return withSnapshotFile(path, undefined, unusable, (fd) => {
    const { header, sectionsAt, size, meta } = currentHeader(fd, path)
    // each section read into a buffer of its own: no copy of the whole file, kdbush read into its own ArrayBuffers
    const read = (key: string): ArrayBuffer => {
      const entry = header.sections[key]
      if (!entry) throw new Error(`snapshot has no section ${key}`)
      const [offset, length] = entry
      if (sectionsAt + offset + length > size) throw new Error('snapshot is cut short')
      const out = new ArrayBuffer(length)
      const view = new Uint8Array(out)
      let done = 0
      while (done < length) {
        const n = readSync(fd, view, done, length - done, sectionsAt + offset + done)
        if (n <= 0) throw new Error('snapshot is cut short')
        done += n
      }
      return out
    }
    const json = <T>(key: string): T => JSON.parse(Buffer.from(read(key)).toString('utf8')) as T
    const count = header.count
    const column = (bytesKey: string, endsKey: string) =>
      new StringColumn(Buffer.from(read(bytesKey)), new Uint32Array(read(endsKey)))
    const ids = column('ids', 'idEnds')
    const names = column('names', 'nameEnds')
    const codes = (tableKey: string, idxKey: string) =>
      new CodeColumn(json<string[]>(tableKey), new Uint16Array(read(idxKey)))
    const regions = codes('regionTable', 'regionIdx')
    const countries = codes('countryTable', 'countryIdx')
    const categories = new Int32Array(read('categories'))
    const lats = new Float64Array(read('lats'))
    const lngs = new Float64Array(read('lngs'))
    const columns = [ids, names, lats, lngs, categories, regions, countries]
    if (columns.some((c) => c.length !== count)) throw new Error('snapshot columns do not match its site count')

    const index = (key: string, positions: Uint32Array): SubIndex => {
      const kd = KDBush.from(read(key))
      if (kd.numItems !== positions.length) throw new Error(`snapshot index ${key} does not match its sites`)
      if (header.math !== SNAPSHOT_MATH) return subIndexOf(kd, positions)
      const slotCosLats = new Float64Array(read(`${key}:cos`))
      const slotPositions = new Uint32Array(read(`${key}:slots`))
      if (slotCosLats.length !== kd.numItems || slotPositions.length !== kd.numItems) {
        throw new Error(`snapshot index ${key} has tables of another size`)
      }
      return { kd, positions, slotCosLats, slotPositions }
    }
    const all: SubIndex | undefined = count === 0 ? undefined : index('all', identity(count))
    const byCategory = new Map<number, SubIndex>()
    for (const c of header.categories) {
      byCategory.set(c, index(`cat:${c}:kd`, new Uint32Array(read(`cat:${c}:positions`))))
    }
    const tagSites = new Map<string, Uint32Array>()
    for (const tag of header.tags) tagSites.set(tag, new Uint32Array(read(`tag:${tag}`)))
    const tagIndexes = new Map<string, SubIndex>()
    for (const tag of header.indexedTags) tagIndexes.set(tag, index(`tagkd:${tag}`, tagSites.get(tag)!))

    return datasetOf(name, path, header.digest, {
      meta, count, ids, names, regions, countries, categories, lats, lngs, all, byCategory, tagSites, tagIndexes
    })
  })
}

/** Whether a snapshot names the file as it is now and was made by this V8 (another's is read, and written again). */
export function snapshotCurrent (path: string): boolean {
  return withSnapshotFile(path, false, undefined, (fd) => currentHeader(fd, path).header.math === SNAPSHOT_MATH)
}

/** `read` on the open snapshot; `otherwise` when it is missing or unusable (`unusable` told why, unless missing). */
function withSnapshotFile<T> (
  path: string, otherwise: T, unusable: ((reason: string) => void) | undefined, read: (fd: number) => T
): T {
  let fd: number
  try {
    fd = openSync(snapshotPath(path), 'r')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
      unusable?.(`cannot open ${snapshotPath(path)}: ${(err as Error).message}`)
    }
    return otherwise
  }
  try {
    return read(fd)
  } catch (err) {
    unusable?.((err as Error).message)
    return otherwise // the slow way rebuilds it
  } finally {
    closeSync(fd)
  }
}
