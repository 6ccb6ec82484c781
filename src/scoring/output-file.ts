import { createHash } from 'node:crypto';
import { PassThrough, pipeline, Transform } from 'node:stream';
import { constants, createGzip } from 'node:zlib';
import { encodeFromUtf8, isUtf8 } from '../formats/index.js';
import { formatLocation, type Location, type Storage } from '../storage/index.js';
import { drainedWrite } from './drained-write.js';
import type { OutputFile } from './manifest.js';

/**
 * One file of a run's output being written: what goes into `stream` (UTF-8) is encoded and compressed (gzip) when asked,
 * hashed and counted as stored, and uploaded as it comes; `finish` ends it and answers what the
 * manifest lists. Node's gzip gives the same bytes for the same data however it is cut into
 * writes, so compressed outputs stay byte-identical from run to run.
 */
export class OutputFileWriter {
  /** Where the file's content goes; end it (or let a format writer end it) before `finish`. */
  readonly stream: PassThrough = new PassThrough();
  private readonly hash = createHash('sha256');
  private bytes = 0;
  private readonly written: Promise<unknown>;

  /**
   * @param name the file's name in the manifest: its path below the run folder
   */
  constructor(
    storage: Storage,
    private readonly target: Location,
    private readonly name: string,
    options: { gzip: boolean; encoding?: string; sizeHint?: number; signal?: AbortSignal },
  ) {
    const counted = new Transform({
      transform: (chunk: Buffer, _encoding, done) => {
        this.hash.update(chunk);
        this.bytes += chunk.length;
        done(null, chunk);
      },
    });
    // pipeline destroys every stage when one fails, so the upload reading `counted` fails too.
    const encode = options.encoding !== undefined && !isUtf8(options.encoding) ? [encodeFromUtf8(options.encoding, name)] : [];
    // zlib's fastest level: about a third of the default level's CPU, for a scored CSV about 13%
    // larger. At the default level, compressing was about 80% of a gzipped output's assembly.
    const gzip = options.gzip ? [createGzip({ level: constants.Z_BEST_SPEED })] : [];
    const stages = [this.stream, ...encode, ...gzip, counted];
    pipeline(stages, () => undefined);
    // The size is known only of the bytes as they come: neither compressed nor encoded anew.
    const sized = !options.gzip && encode.length === 0 && options.sizeHint !== undefined;
    this.written = storage.write(target, counted, { signal: options.signal, ...(sized && { sizeHint: options.sizeHint }) });
    // Awaited in finish or abandon; a failure meanwhile must not be an unhandled rejection.
    this.written.catch(() => undefined);
  }

  /** Writes with backpressure: waits for the upload to drain before taking more; its failure is thrown. */
  write(data: string | Buffer): Promise<void> {
    return drainedWrite(this.stream, data, this.written);
  }

  /** Ends the file (unless a format writer ended it) and waits until it is stored. */
  async finish(rows: number): Promise<OutputFile> {
    if (!this.stream.writableEnded) this.stream.end();
    await this.written;
    return { file: this.name, location: formatLocation(this.target), rows, bytes: this.bytes, sha256: this.hash.digest('hex') };
  }

  /** Stops writing after a failure: the file is not stored (writes are atomic). */
  async abandon(err: Error): Promise<void> {
    this.stream.destroy(err);
    await this.written.catch(() => undefined);
  }
}
