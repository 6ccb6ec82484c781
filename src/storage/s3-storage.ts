import {
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type _Object,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { addAbortSignal, PassThrough, pipeline, Readable, Transform } from 'node:stream';
import { BatchScorerError, InputError, isAbortError, NotFoundError, UsageError } from '../errors.js';
import { formatLocation, type S3Location } from './location.js';
import { s3ClientConfig, type S3Settings } from './s3-settings.js';
import type { ListedFile, ObjectInfo, ReadOptions, WriteOptions } from './storage-types.js';

/**
 * Parts of 8 MiB, 2 in flight: about 24 MiB buffered per upload, objects up to 10,000 parts
 * (~78 GiB). With a size hint, parts are as small as S3 allows (5 MiB) while the object still
 * fits in 9,000 of them.
 */
const PART_SIZE = 8 * 1024 * 1024;
const MIN_PART_SIZE = 5 * 1024 * 1024;
const QUEUE_SIZE = 2;

function partSize(sizeHint: number | undefined): number {
  return sizeHint === undefined ? PART_SIZE : Math.max(MIN_PART_SIZE, Math.ceil(sizeHint / 9_000));
}

const DENIED = new Set(['AccessDenied', 'InvalidAccessKeyId', 'SignatureDoesNotMatch', 'ExpiredToken', 'InvalidToken']);
const THROTTLED = new Set(['SlowDown', 'Throttling', 'ThrottlingException', 'RequestLimitExceeded', 'RequestTimeout']);
const NETWORK = new Set(['ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

type Operation = 'stat' | 'read' | 'write' | 'list' | 'remove' | 'check';

interface SdkErrorFields {
  name?: string;
  code?: string;
  message?: string;
  $metadata?: { httpStatusCode?: number };
}

function notFound(loc: S3Location): NotFoundError {
  return new NotFoundError(`${formatLocation(loc)}: no such file or object`);
}

/** Turns SDK and socket errors into BatchScorerErrors whose messages never carry credentials. */
function storageError(op: Operation, loc: S3Location, err: unknown): Error {
  if (err instanceof BatchScorerError || isAbortError(err)) return err as Error;
  const { name = 'Error', code, message, $metadata } = (err ?? {}) as SdkErrorFields;
  const status = $metadata?.httpStatusCode;
  const where = `${op} ${formatLocation(loc)}`;
  const lookup = op === 'stat' || op === 'read';
  if (name === 'NoSuchBucket') {
    const text = `${where}: bucket '${loc.bucket}' does not exist`;
    return lookup ? new NotFoundError(text) : new BatchScorerError('E_STORAGE_REFUSED', text, { cause: err });
  }
  if (lookup && (name === 'NoSuchKey' || name === 'NotFound' || status === 404)) return notFound(loc);
  if (DENIED.has(name) || status === 403) {
    return new BatchScorerError(
      'E_STORAGE_REFUSED',
      `${where}: access denied (${name}); check the S3 credentials (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE) and the bucket policy`,
      { cause: err },
    );
  }
  if (name === 'CredentialsProviderError') {
    return new BatchScorerError('E_STORAGE_REFUSED', `${where}: no S3 credentials found; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE`, {
      cause: err,
    });
  }
  const retriable =
    (status !== undefined && (status >= 500 || status === 429)) || THROTTLED.has(name) || name === 'TimeoutError' || (code !== undefined && NETWORK.has(code));
  const reason = [name, message].filter((s) => s !== undefined && s !== '' && s !== 'UnknownError').join(': ');
  const suffix = status === undefined ? '' : ` (HTTP ${status})`;
  return new BatchScorerError(retriable ? 'E_STORAGE' : 'E_STORAGE_REFUSED', `${where}: ${reason}${suffix}`, { cause: err });
}

function changed(loc: S3Location, actual: ObjectInfo, expect: ObjectInfo): InputError {
  const what = actual.size !== expect.size ? `size ${expect.size} is now ${actual.size}` : `ETag ${expect.etag} is now ${actual.etag}`;
  return new InputError(`${formatLocation(loc)} changed while the run was reading it (${what})`, 'E_INPUT_CHANGED');
}

/** S3 preconditions cover the ETag; the size is compared too, for servers that ignore If-Match. */
function checkUnchanged(loc: S3Location, actual: ObjectInfo, expect: ObjectInfo | undefined): void {
  if (expect === undefined) return;
  const etagDiffers = expect.etag !== undefined && actual.etag !== undefined && actual.etag !== expect.etag;
  if (etagDiffers || actual.size !== expect.size) throw changed(loc, actual, expect);
}

function objectKey(loc: S3Location): string {
  if (loc.key === '' || loc.key.endsWith('/')) {
    throw new UsageError(`${formatLocation(loc)} names a bucket or folder, not an object`);
  }
  return loc.key;
}

/** The whole-folder prefix: `runs/1` lists `runs/1/...`, never `runs/10`. */
function folderPrefix(key: string): string {
  return key === '' || key.endsWith('/') ? key : `${key}/`;
}

/** The object's full size from `Content-Range: bytes 0-9/1234`, or the body length when not ranged. */
function objectSize(contentRange: string | undefined, contentLength: number | undefined): number {
  const total = contentRange === undefined ? undefined : /\/(\d+)$/.exec(contentRange)?.[1];
  return total === undefined ? (contentLength ?? 0) : Number(total);
}

/**
 * Hands out the response body behind a PassThrough so mid-stream socket errors arrive as
 * BatchScorerErrors, and destroying the returned stream (or aborting) destroys the response and
 * so frees its socket; a fully read response goes back to the keep-alive pool.
 */
function releasingStream(body: Readable, loc: S3Location, signal: AbortSignal | undefined): Readable {
  const out = new PassThrough();
  body.once('error', (err) => out.destroy(storageError('read', loc, err)));
  out.once('close', () => {
    if (!body.readableEnded) body.destroy();
  });
  body.pipe(out);
  return signal === undefined ? out : addAbortSignal(signal, out);
}

/** S3 and S3-compatible servers (MinIO, s3rver). */
export class S3Storage {
  readonly #client: S3Client;

  constructor(settings: S3Settings) {
    this.#client = new S3Client(s3ClientConfig(settings));
  }

  async stat(loc: S3Location, signal?: AbortSignal): Promise<ObjectInfo> {
    try {
      const out = await this.#client.send(new HeadObjectCommand({ Bucket: loc.bucket, Key: objectKey(loc) }), {
        abortSignal: signal,
      });
      return {
        size: out.ContentLength ?? 0,
        ...(out.ETag !== undefined && { etag: out.ETag }),
        ...(out.LastModified !== undefined && { mtimeMs: out.LastModified.getTime() }),
      };
    } catch (err) {
      throw storageError('stat', loc, err);
    }
  }

  async read(loc: S3Location, options: ReadOptions = {}): Promise<Readable> {
    const { start = 0, end, expect, signal } = options;
    if (end !== undefined && end <= start) {
      checkUnchanged(loc, await this.stat(loc, signal), expect);
      return Readable.from([]);
    }
    const ranged = start > 0 || end !== undefined;
    let out;
    try {
      out = await this.#client.send(
        new GetObjectCommand({
          Bucket: loc.bucket,
          Key: objectKey(loc),
          ...(ranged && { Range: `bytes=${start}-${end === undefined ? '' : end - 1}` }),
          ...(expect?.etag !== undefined && { IfMatch: expect.etag }),
        }),
        { abortSignal: signal },
      );
    } catch (err) {
      const { name, $metadata } = (err ?? {}) as SdkErrorFields;
      if (name === 'PreconditionFailed' || $metadata?.httpStatusCode === 412) {
        throw new InputError(`${formatLocation(loc)} changed while the run was reading it (its ETag is no longer ${expect?.etag})`, 'E_INPUT_CHANGED');
      }
      // The range starts at or past the end of the object: nothing to read, as with a local file.
      if (name === 'InvalidRange' || $metadata?.httpStatusCode === 416) return Readable.from([]);
      throw storageError('read', loc, err);
    }
    const body: unknown = out.Body;
    if (!(body instanceof Readable)) {
      throw new BatchScorerError('E_STORAGE_REFUSED', `read ${formatLocation(loc)}: the S3 client gave no Node stream`);
    }
    try {
      checkUnchanged(loc, { etag: out.ETag, size: objectSize(out.ContentRange, out.ContentLength) }, expect);
    } catch (err) {
      body.destroy();
      throw err;
    }
    return releasingStream(body, loc, signal);
  }

  async readText(loc: S3Location, signal?: AbortSignal): Promise<string> {
    try {
      const out = await this.#client.send(new GetObjectCommand({ Bucket: loc.bucket, Key: objectKey(loc) }), {
        abortSignal: signal,
      });
      if (out.Body === undefined) return '';
      return await out.Body.transformToString('utf-8');
    } catch (err) {
      throw storageError('read', loc, err);
    }
  }

  /** Streams through lib-storage's Upload: one PUT below 8 MiB, multipart above; aborted on failure. */
  async write(loc: S3Location, body: Readable | string | Uint8Array, options: WriteOptions = {}): Promise<{ bytes: number }> {
    const { contentType, signal } = options;
    let bytes = 0;
    let source: Readable | string | Uint8Array = body;
    if (body instanceof Readable) {
      const counter = new Transform({
        transform(chunk: Buffer, _encoding, done) {
          bytes += chunk.length;
          done(null, chunk);
        },
      });
      // Errors of either side destroy both; the upload then fails with the body's error.
      pipeline(body, counter, () => {});
      source = counter;
    } else {
      bytes = Buffer.byteLength(body);
    }
    const abortController = new AbortController();
    const onAbort = (): void => abortController.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      signal?.throwIfAborted();
      const upload = new Upload({
        client: this.#client,
        params: {
          Bucket: loc.bucket,
          Key: objectKey(loc),
          Body: source,
          ...(contentType !== undefined && { ContentType: contentType }),
        },
        queueSize: QUEUE_SIZE,
        partSize: partSize(options.sizeHint),
        abortController,
      });
      await upload.done();
      return { bytes };
    } catch (err) {
      abortController.abort();
      if (source instanceof Readable) source.destroy();
      throw storageError('write', loc, err);
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }

  async isEmpty(prefix: S3Location, signal?: AbortSignal): Promise<boolean> {
    // A console's zero-byte folder marker is a folder, as on disk.
    for await (const page of this.#pages(prefix, signal)) if (page.some((object) => object.Key !== undefined && !object.Key.endsWith('/'))) return false;
    return true;
  }

  async *list(prefix: S3Location, signal?: AbortSignal): AsyncGenerator<ListedFile & { location: S3Location }> {
    for await (const page of this.#pages(prefix, signal)) {
      for (const object of page) {
        // Zero-byte "folder" markers made by consoles are not files.
        if (object.Key === undefined || object.Key.endsWith('/')) continue;
        yield {
          location: { kind: 's3', bucket: prefix.bucket, key: object.Key },
          size: object.Size ?? 0,
          // As stat() has them: the ETag in its quotes, the modification time in ms.
          ...(object.ETag !== undefined && { etag: object.ETag }),
          ...(object.LastModified !== undefined && { mtimeMs: object.LastModified.getTime() }),
        };
      }
    }
  }

  /** One PUT asking `If-None-Match: *`: S3 answers 412 where the key exists, and of two such PUTs at once takes one. */
  async create(loc: S3Location, body: string, signal?: AbortSignal): Promise<boolean> {
    try {
      await this.#client.send(new PutObjectCommand({ Bucket: loc.bucket, Key: objectKey(loc), Body: body, IfNoneMatch: '*' }), { abortSignal: signal });
      return true;
    } catch (err) {
      const { name, $metadata } = (err ?? {}) as SdkErrorFields;
      if (name === 'PreconditionFailed' || $metadata?.httpStatusCode === 412) return false;
      throw storageError('write', loc, err);
    }
  }

  async remove(loc: S3Location): Promise<void> {
    try {
      await this.#client.send(new DeleteObjectCommand({ Bucket: loc.bucket, Key: objectKey(loc) }));
    } catch (err) {
      throw storageError('remove', loc, err);
    }
  }

  /**
   * A bucket that exists but refuses HeadBucket (403) is not called unwritable: writing may be
   * granted on a prefix alone, and the first write says so if it is not.
   */
  async whyUnwritable(prefix: S3Location, signal?: AbortSignal): Promise<string | undefined> {
    try {
      await this.#client.send(new HeadBucketCommand({ Bucket: prefix.bucket }), { abortSignal: signal });
      return undefined;
    } catch (err) {
      const { name, $metadata } = (err ?? {}) as SdkErrorFields;
      if (name === 'NotFound' || name === 'NoSuchBucket' || $metadata?.httpStatusCode === 404) return `bucket '${prefix.bucket}' does not exist`;
      if (DENIED.has(name ?? '') || $metadata?.httpStatusCode === 403) return undefined;
      throw storageError('check', prefix, err);
    }
  }

  /** S3 has no folders: only the keys named are deleted, a page of the listing at a time. */
  async removeFiles(prefix: S3Location, which: (name: string) => boolean): Promise<void> {
    const below = folderPrefix(prefix.key);
    for await (const page of this.#pages(prefix)) {
      const keys = page.flatMap((object) => (object.Key !== undefined && which(object.Key.slice(below.length)) ? [{ Key: object.Key }] : []));
      if (keys.length === 0) continue;
      let out;
      try {
        out = await this.#client.send(new DeleteObjectsCommand({ Bucket: prefix.bucket, Delete: { Objects: keys, Quiet: true } }));
      } catch (err) {
        throw storageError('remove', prefix, err);
      }
      const failed = out.Errors?.[0];
      if (failed !== undefined) {
        const where = formatLocation({ ...prefix, key: failed.Key ?? prefix.key });
        const transient = failed.Code === 'InternalError' || failed.Code === 'SlowDown';
        throw new BatchScorerError(transient ? 'E_STORAGE' : 'E_STORAGE_REFUSED', `remove ${where}: ${failed.Code}: ${failed.Message}`);
      }
    }
  }

  close(): void {
    this.#client.destroy();
  }

  /** ListObjectsV2 pages (up to 1000 keys each, the DeleteObjects limit), in key order. */
  async *#pages(prefix: S3Location, signal?: AbortSignal): AsyncGenerator<_Object[]> {
    let token: string | undefined;
    do {
      let page;
      try {
        page = await this.#client.send(
          new ListObjectsV2Command({
            Bucket: prefix.bucket,
            Prefix: folderPrefix(prefix.key),
            ...(token !== undefined && { ContinuationToken: token }),
          }),
          { abortSignal: signal },
        );
      } catch (err) {
        throw storageError('list', prefix, err);
      }
      yield page.Contents ?? [];
      token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
  }
}
