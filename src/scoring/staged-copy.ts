import { PassThrough } from 'node:stream';
import { formatLimit, type Limits, LIMITS } from '../config/index.js';
import { BatchScorerError } from '../errors.js';
import { formatLocation, type Location, type ObjectInfo, type Storage } from '../storage/index.js';
import { drainedWrite } from './drained-write.js';
import { rangeRead } from './input-bytes.js';

/** Bytes written between two looks at the disk's free space. */
const FREE_SPACE_EVERY = 64 * 1024 * 1024;

/** gzip's trailer ends with ISIZE: the inflated size mod 2^32, in 4 bytes (RFC 1952). */
const GZIP_TRAILER_SIZE = 4;

/** What the copy of a file should take, as far as can be told before it is read. */
export interface ExpectedSize {
  bytes: number;
  /** How the size is known, for messages. */
  how: string;
}

/**
 * The bytes a staged copy of a file should take: a gzipped file's ISIZE, a lower bound (it is the
 * inflated size mod 4 GiB, and only the last member's when the file has several); else the file's
 * own size, about what its UTF-8 copy takes.
 */
export async function expectedSize(storage: Storage, file: Location, info: ObjectInfo, gzip: boolean, signal?: AbortSignal): Promise<ExpectedSize> {
  if (!gzip || info.size < 18) return { bytes: info.size, how: `its ${info.size.toLocaleString('en-US')} bytes` };
  const trailer = await rangeRead(storage, file, info, signal)(info.size - GZIP_TRAILER_SIZE, info.size);
  const bytes = Buffer.from(trailer).readUInt32LE(0);
  return { bytes, how: `the ${bytes.toLocaleString('en-US')} bytes gzip declares it inflates to, a lower bound (the size mod 4 GiB)` };
}

/**
 * A UTF-8, uncompressed copy of an input written into the run's `_work/inputs/` as planning reads
 * it (see InputFilePlan.staged). On local disk it must leave MIN_STAGING_FREE_BYTES free: checked
 * before its first byte against the size expected, and again every 64 MiB written. S3 has no
 * such check. A copy abandoned, or refused for room, leaves nothing (storage writes whole files
 * or none).
 */
export class StagedCopy {
  private readonly stream = new PassThrough();
  private readonly written: Promise<unknown>;
  private bytes = 0;
  private nextLook = FREE_SPACE_EVERY;

  private constructor(
    private readonly storage: Storage,
    private readonly location: Location,
    private readonly name: string,
    private readonly minFree: number,
    private readonly signal?: AbortSignal,
  ) {
    this.written = storage.write(location, this.stream, { signal });
    this.written.catch(() => undefined); // Heard through write and end.
  }

  /**
   * Starts a copy of the file `name` at `location`, once its disk has room for the size `expected`
   * answers (asked only where storage has a free space) and MIN_STAGING_FREE_BYTES besides.
   */
  static async start(
    storage: Storage,
    location: Location,
    name: string,
    expected: () => Promise<ExpectedSize>,
    limits: Limits,
    signal?: AbortSignal,
  ): Promise<StagedCopy> {
    const free = await storage.freeBytes(location, signal);
    if (free !== undefined) {
      const { bytes, how } = await expected();
      if (free - bytes < limits.stagingFreeBytes) {
        throw tooLittleRoom(
          `${name}: its staged copy in ${formatLocation(location)} (${how}) would leave ${Math.max(0, free - bytes).toLocaleString('en-US')} bytes free`,
          limits.stagingFreeBytes,
        );
      }
    }
    return new StagedCopy(storage, location, name, limits.stagingFreeBytes, signal);
  }

  /** Writes the next bytes, looking at the free space again every 64 MiB. */
  async write(chunk: Buffer): Promise<void> {
    await drainedWrite(this.stream, chunk, this.written);
    this.bytes += chunk.length;
    if (this.bytes < this.nextLook) return;
    this.nextLook = this.bytes + FREE_SPACE_EVERY;
    const free = await this.storage.freeBytes(this.location, this.signal);
    if (free !== undefined && free < this.minFree) {
      throw tooLittleRoom(
        `${this.name}: its staged copy in ${formatLocation(this.location)} left ${free.toLocaleString('en-US')} bytes free after ${this.bytes.toLocaleString('en-US')} bytes`,
        this.minFree,
      );
    }
  }

  /** Ends the copy; answers it as stored. */
  async end(): Promise<ObjectInfo> {
    this.stream.end();
    await this.written;
    return this.storage.stat(this.location, this.signal);
  }

  /** Stops the copy, leaving nothing of it. */
  async abandon(): Promise<void> {
    this.stream.destroy();
    await this.written.catch(() => undefined);
  }
}

/** E_LIMIT for a disk left with less than MIN_STAGING_FREE_BYTES, a bound that is lowered, not raised. */
function tooLittleRoom(what: string, minFree: number): BatchScorerError {
  const { setting } = LIMITS.stagingFreeBytes;
  return new BatchScorerError(
    'E_LIMIT',
    `${what}, less than ${setting} (${formatLimit('stagingFreeBytes', minFree)}): free some space, write the run elsewhere, or lower ${setting}`,
  );
}
