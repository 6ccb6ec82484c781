import { mkdtemp, open, rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { S3Settings } from '../../src/storage/s3-settings.js';

/** The slice of s3rver (CommonJS, untyped) this helper uses. */
interface KoaContext {
  method: string;
  path: string;
  querystring: string;
  query: Record<string, string | string[] | undefined>;
  headers: Record<string, string | string[] | undefined>;
  status: number;
  body: unknown;
  response: { get(name: string): string };
  set(name: string, value: string): void;
}
type Middleware = (ctx: KoaContext, next: () => Promise<void>) => Promise<void>;
interface S3rverInstance {
  middleware: Middleware[];
  store: {
    getMetadata(bucket: string, key: string): Promise<Record<string, string | number>>;
    getResourcePath(bucket: string, key: string | undefined, resource: string): string;
  };
  httpServer: Server;
  run(): Promise<AddressInfo>;
  close(): Promise<void>;
}
type S3rverClass = new (options: Record<string, unknown>) => S3rverInstance;
type S3ErrorClass = new (code: string, message: string, detail?: Record<string, unknown>) => Error;

const require = createRequire(import.meta.url);
const S3rver = require('s3rver') as S3rverClass;
const S3Error = require('s3rver/lib/models/error') as S3ErrorClass;

/** One request as the server saw it, so tests can tell e.g. a multipart upload from a single PUT. */
export interface SeenRequest {
  method: string;
  path: string;
  query: string;
  ifMatch?: string;
}

export interface S3Server {
  endpoint: string;
  settings: S3Settings;
  /** The environment a CLI child process reaches this server with. */
  env: Record<string, string>;
  requests: SeenRequest[];
  close(): Promise<void>;
}

function objectOf(ctx: KoaContext): { bucket: string; key: string } | undefined {
  const [, bucket, ...rest] = ctx.path.split('/');
  if (bucket === undefined || bucket === '' || rest.length === 0) return undefined;
  return { bucket: decodeURIComponent(bucket), key: rest.map(decodeURIComponent).join('/') };
}

const unquote = (etag: string): string => etag.replace(/"/g, '');

/**
 * s3rver 3.7 ignores If-Match on GET/HEAD (it only knows If-None-Match and If-Modified-Since):
 * answer 412 PreconditionFailed like S3 does.
 */
function ifMatch(server: S3rverInstance): Middleware {
  return async (ctx, next) => {
    const wanted = ctx.headers['if-match'];
    const target = objectOf(ctx);
    if ((ctx.method === 'GET' || ctx.method === 'HEAD') && typeof wanted === 'string' && target !== undefined) {
      const metadata = await server.store.getMetadata(target.bucket, target.key).catch(() => undefined);
      if (metadata !== undefined && wanted !== '*' && unquote(wanted) !== unquote(String(metadata.etag))) {
        throw new S3Error('PreconditionFailed', 'At least one of the pre-conditions you specified did not hold', {
          Condition: 'If-Match',
        });
      }
    }
    await next();
  };
}

/**
 * s3rver 3.7 ignores If-None-Match on PUT (it knows it on GET only): a conditional write of a key
 * that exists is answered 412 PreconditionFailed, as S3 and MinIO do.
 */
function ifNoneMatchPut(server: S3rverInstance): Middleware {
  return async (ctx, next) => {
    const target = objectOf(ctx);
    if (ctx.method === 'PUT' && ctx.headers['if-none-match'] === '*' && target !== undefined) {
      const metadata = await server.store.getMetadata(target.bucket, target.key).catch(() => undefined);
      if (metadata !== undefined) {
        throw new S3Error('PreconditionFailed', 'At least one of the pre-conditions you specified did not hold', { Condition: 'If-None-Match' });
      }
    }
    await next();
  };
}

/** s3rver 3.7 answers AbortMultipartUpload with 405 MethodNotAllowed: drop the parts like S3 does. */
function abortMultipartUpload(server: S3rverInstance): Middleware {
  return async (ctx, next) => {
    const uploadId = ctx.query.uploadId;
    const target = objectOf(ctx);
    if (ctx.method !== 'DELETE' || typeof uploadId !== 'string' || target === undefined) return next();
    if (!/^[0-9a-f]+$/.test(uploadId)) throw new S3Error('NoSuchUpload', 'The specified upload does not exist.');
    await rm(path.join(server.store.getResourcePath(target.bucket, undefined, 'uploads'), uploadId), {
      recursive: true,
      force: true,
    });
    ctx.status = 204;
    ctx.body = '';
  };
}

/**
 * s3rver 3.7 gets two ranged GETs wrong; answer them as S3 does. A range on an empty object
 * announces one byte and sends none (the client hangs): S3 says 416 InvalidRange. `bytes=0-0` is
 * read as "from byte 0 to the end" (an end of 0 is falsy in its store): S3 sends that one byte.
 */
function rangeFixes(server: S3rverInstance): Middleware {
  return async (ctx, next) => {
    const range = ctx.headers.range;
    const target = objectOf(ctx);
    if (ctx.method !== 'GET' || typeof range !== 'string' || target === undefined) return next();
    const metadata = await server.store.getMetadata(target.bucket, target.key).catch(() => undefined);
    if (metadata !== undefined && Number(metadata['content-length']) === 0) {
      throw new S3Error('InvalidRange', 'The requested range is not satisfiable', {
        RangeRequested: range,
        ActualObjectSize: 0,
      });
    }
    await next();
    if (range !== 'bytes=0-0' || ctx.status !== 206) return;
    if (ctx.body instanceof Readable) ctx.body.destroy();
    const file = await open(server.store.getResourcePath(target.bucket, target.key, 'object'));
    try {
      const { buffer } = await file.read(Buffer.alloc(1), 0, 1, 0);
      ctx.set('Content-Range', `bytes 0-0/${String(metadata?.['content-length'])}`);
      ctx.body = buffer;
    } finally {
      await file.close();
    }
  };
}

/**
 * s3rver 3.7 makes ListObjectsV2's continuation tokens with DES, which OpenSSL 3 no longer has:
 * a listing longer than a page fails with 500 InternalError. The request is answered by its
 * version 1 listing (marker = the last key of the page before) and the answer made version 2 again,
 * with the last key, base64-encoded, as continuation token.
 */
function listV2Pages(): Middleware {
  return async (ctx, next) => {
    const { query } = ctx;
    if (ctx.method !== 'GET' || query['list-type'] !== '2' || (objectOf(ctx)?.key ?? '') !== '') return next();
    const token = typeof query['continuation-token'] === 'string' ? query['continuation-token'] : undefined;
    const { 'list-type': _type, 'continuation-token': _token, 'start-after': startAfter, ...rest } = query;
    const marker = token === undefined ? startAfter : Buffer.from(token, 'base64').toString('utf8');
    (ctx as { query: Record<string, unknown> }).query = { ...rest, ...(typeof marker === 'string' && { marker }) };
    await next();
    const result = (ctx.body as { ListBucketResult?: Record<string, unknown> } | undefined)?.ListBucketResult;
    if (result === undefined) return;
    const contents = (result.Contents ?? []) as { Key: string }[];
    delete result.Marker;
    delete result.NextMarker;
    Object.assign(result, {
      KeyCount: contents.length,
      ...(token !== undefined && { ContinuationToken: token }),
      ...(result.IsTruncated === true && { NextContinuationToken: Buffer.from(contents[contents.length - 1].Key).toString('base64') }),
    });
  };
}

/** An S3 protocol server in this process on 127.0.0.1 (any free port) over a fresh temp dir. */
export async function startS3Server(buckets: string[]): Promise<S3Server> {
  const directory = await mkdtemp(path.join(os.tmpdir(), 's3rver-'));
  const requests: SeenRequest[] = [];
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory,
    configureBuckets: buckets.map((name) => ({ name, configs: [] })),
  });
  const record: Middleware = async (ctx, next) => {
    const wanted = ctx.headers['if-match'];
    requests.push({
      method: ctx.method,
      path: ctx.path,
      query: ctx.querystring,
      ...(typeof wanted === 'string' && { ifMatch: wanted }),
    });
    await next();
  };
  // Koa composes `middleware` when the server starts listening, so these run before s3rver's router.
  server.middleware.unshift(record, ifMatch(server), ifNoneMatchPut(server), abortMultipartUpload(server), rangeFixes(server));
  // Just before the router (the last), where answers are still objects, not yet XML.
  server.middleware.splice(server.middleware.length - 1, 0, listV2Pages());
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    settings: {
      endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    },
    env: { S3_ENDPOINT: endpoint, S3_FORCE_PATH_STYLE: 'true', AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER' },
    requests,
    async close() {
      const closed = server.close();
      server.httpServer.closeAllConnections();
      await closed;
      await rm(directory, { recursive: true, force: true });
    },
  };
}
