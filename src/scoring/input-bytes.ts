import { createGunzip } from 'node:zlib';
import type { Readable } from 'node:stream';
import { BatchScorerError, InputError, NotFoundError } from '../errors.js';
import { decodeToUtf8 } from '../formats/index.js';
import { formatLocation, type Location, type ObjectInfo, type Storage } from '../storage/index.js';
import type { InflationCap } from './input-bounds.js';

/** Where to read: the file, its identity at planning (so a changed file is noticed), its compression and encoding. */
export interface InputSource {
  location: Location;
  info: ObjectInfo;
  gzip: boolean;
  /** A text encoding other than UTF-8, whose bytes are decoded to UTF-8 before the range is taken. */
  encoding?: string;
}

/** Times a broken ranged read is re-opened at the byte it reached before the segment fails. */
const READ_RESUMES = 3;

/**
 * The decompressed, UTF-8 bytes of `[start, end)` of an input. Plain files are read by range (an
 * S3 ranged GET); gzip has no random access, nor has a range of UTF-8 in a file of another
 * encoding, so such a file is inflated and decoded from its start and the bytes before `start`
 * are dropped (a run reads a staged UTF-8 copy instead; a dry run reads the file itself). Inflating
 * stops at `range.end`, within the bytes planning inflated under its cap (see inflationCap).
 */
export async function* inputBytes(storage: Storage, source: InputSource, range: { start: number; end: number }, signal?: AbortSignal): AsyncGenerator<Buffer> {
  if (range.end <= range.start) return;
  if (!source.gzip && source.encoding === undefined) {
    // A long read held back by a slow model may be cut by the server: re-open from where it broke.
    let position = range.start;
    for (let resumes = 0; ; resumes++) {
      try {
        const bytes = await storage.read(source.location, { start: position, end: range.end, expect: source.info, signal }).catch(inputMissing);
        for await (const chunk of bytes as AsyncIterable<Buffer>) {
          position += chunk.length;
          yield chunk;
        }
        return;
      } catch (err) {
        if (!(err instanceof BatchScorerError && err.retriable) || resumes >= READ_RESUMES || signal?.aborted) throw err;
      }
    }
  }
  const raw = await storage.read(source.location, { expect: source.info, signal }).catch(inputMissing);
  const inflated = source.gzip ? gunzip(raw, formatLocation(source.location)) : (raw as AsyncIterable<Buffer>);
  const decoded = source.encoding === undefined ? inflated : decodeToUtf8(inflated, source.encoding);
  let position = 0;
  for await (const chunk of decoded) {
    const from = Math.max(0, range.start - position);
    const to = Math.min(chunk.length, range.end - position);
    position += chunk.length;
    if (from < to) yield chunk.subarray(from, to);
    if (position >= range.end) break;
  }
}

/**
 * Reads `[start, end)` of a file whole, for formats read by parts (a Parquet footer, one row
 * group): a ranged read (an S3 ranged GET), checked against the file's identity at planning.
 */
export function rangeRead(storage: Storage, location: Location, info: ObjectInfo, signal?: AbortSignal): (start: number, end: number) => Promise<Uint8Array> {
  return async (start, end) => {
    if (end <= start) return new Uint8Array(0);
    const chunks: Buffer[] = [];
    for await (const chunk of inputBytes(storage, { location, info, gzip: false }, { start, end }, signal)) chunks.push(chunk);
    return Buffer.concat(chunks);
  };
}

/**
 * Storage's "no such file" where the user's input is read: the input the command named is
 * missing (E_INPUT_NOT_FOUND, exit 2), said with the path storage gave. Other failures stand.
 */
export function inputMissing(err: unknown): never {
  throw err instanceof NotFoundError ? new InputError(err.message, 'E_INPUT_NOT_FOUND') : err;
}

/**
 * Inflates a gzip stream, naming the file when the data is not valid gzip. Past `cap`, it stops
 * with the cap's error: the bytes are counted as they come, so no more than a chunk past it is
 * ever inflated.
 */
export async function* gunzip(raw: Readable, name: string, cap?: InflationCap): AsyncGenerator<Buffer> {
  const inflate = createGunzip();
  raw.on('error', (err) => inflate.destroy(err));
  raw.pipe(inflate);
  let inflated = 0;
  try {
    for await (const chunk of inflate as AsyncIterable<Buffer>) {
      inflated += chunk.length;
      if (cap && inflated > cap.bytes) throw cap.refuse();
      yield chunk;
    }
  } catch (err) {
    if ((err as { code?: string }).code?.startsWith('Z_')) throw new InputError(`${name}: not valid gzip data (${(err as Error).message})`);
    throw err;
  } finally {
    raw.destroy();
    inflate.destroy();
  }
}
