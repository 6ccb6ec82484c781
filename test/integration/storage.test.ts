import { createHash, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { BatchScorerError } from '../../src/errors.js';
import { formatLocation, joinLocation, parseLocation, type Location } from '../../src/storage/location.js';
import { createStorage } from '../../src/storage/storage.js';
import type { Storage } from '../../src/storage/storage-types.js';
import { MemoryStorage } from '../helpers/memory-storage.js';
import { rejection } from '../helpers/rejection.js';
import { startS3Server, type S3Server } from '../helpers/s3-server.js';

const MiB = 1024 * 1024;

let server: S3Server;
let storage: Storage;
let tempDir: string;

beforeAll(async () => {
  server = await startS3Server(['data']);
  storage = createStorage(server.settings);
  tempDir = await mkdtemp(path.join(os.tmpdir(), 'storage-test-'));
});

afterAll(async () => {
  storage.close();
  await server.close();
  await rm(tempDir, { recursive: true, force: true });
});

async function collect(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

async function listAllOf(storage: Storage, prefix: Location): Promise<Array<{ name: string; size: number }>> {
  const found: Array<{ name: string; size: number }> = [];
  for await (const { location, size } of storage.list(prefix)) found.push({ name: formatLocation(location), size });
  return found;
}

const failure = (promise: Promise<unknown>) => rejection(promise, BatchScorerError);

/** A stream of `size` pseudo-random bytes made on the fly, with the sha256 of what it produced. */
function generated(size: number): { stream: Readable; sha256: () => string } {
  const hash = createHash('sha256');
  function* chunks(): Generator<Buffer> {
    for (let left = size; left > 0; left -= 64 * 1024) {
      const chunk = randomBytes(Math.min(64 * 1024, left));
      hash.update(chunk);
      yield chunk;
    }
  }
  return { stream: Readable.from(chunks()), sha256: () => hash.digest('hex') };
}

// The tests' memory storage (test/helpers) keeps the same contract, with file and S3 locations.
const memory = new MemoryStorage();
const kinds: Array<[string, () => Location, () => Storage]> = [
  ['local', () => parseLocation(tempDir), () => storage],
  ['s3', () => parseLocation('s3://data/tests/'), () => storage],
  ['memory file', () => parseLocation('/batch-scorer-memory/tests'), () => memory],
  ['memory s3', () => parseLocation('s3://memory/tests/'), () => memory],
];

describe.each(kinds)('%s storage', (kind, root, store) => {
  const at = (...parts: string[]): Location => joinLocation(root(), ...parts);
  let storage: Storage;
  beforeAll(() => {
    storage = store();
  });
  const listAll = (prefix: Location) => listAllOf(storage, prefix);

  it('writes, stats, reads and reads text', async () => {
    const loc = at('basic', 'hello.json');
    expect(await storage.exists(loc)).toBe(false);
    expect(await storage.write(loc, '{"hello":"wörld"}', { contentType: 'application/json' })).toEqual({ bytes: 18 });
    expect(await storage.exists(loc)).toBe(true);
    const info = await storage.stat(loc);
    expect(info.size).toBe(18);
    if (kind === 's3') expect(info.etag).toMatch(/^"[0-9a-f]+"$/);
    else expect(info.mtimeMs).toBeGreaterThan(0);
    expect(JSON.parse(await storage.readText(loc))).toEqual({ hello: 'wörld' });
    expect((await collect(await storage.read(loc))).toString()).toBe('{"hello":"wörld"}');

    // Overwrites replace the whole content.
    expect(await storage.write(loc, new Uint8Array([1, 2, 3]))).toEqual({ bytes: 3 });
    expect([...(await collect(await storage.read(loc)))]).toEqual([1, 2, 3]);
  });

  it('reads exactly the requested byte ranges', async () => {
    const data = Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 251));
    const loc = at('ranges', 'data.bin');
    await storage.write(loc, data);
    const range = async (start?: number, end?: number): Promise<Buffer> =>
      collect(await storage.read(loc, { ...(start !== undefined && { start }), ...(end !== undefined && { end }) }));
    expect(await range(10, 20)).toEqual(data.subarray(10, 20));
    expect(await range(0, 2)).toEqual(data.subarray(0, 2));
    expect(await range(0, 1)).toEqual(data.subarray(0, 1));
    expect(await range(999, 1000)).toEqual(data.subarray(999));
    expect(await range(500)).toEqual(data.subarray(500));
    expect(await range(undefined, 300)).toEqual(data.subarray(0, 300));
    expect(await range(900, 5000)).toEqual(data.subarray(900));
    expect(await range(5, 5)).toEqual(Buffer.alloc(0));
    expect(await range(1000)).toEqual(Buffer.alloc(0));
    expect(await range(2000, 3000)).toEqual(Buffer.alloc(0));
  });

  it('writes and reads empty files', async () => {
    const loc = at('empty', 'nothing.csv');
    expect(await storage.write(loc, Readable.from([]))).toEqual({ bytes: 0 });
    expect((await storage.stat(loc)).size).toBe(0);
    expect((await collect(await storage.read(loc))).length).toBe(0);
    expect((await collect(await storage.read(loc, { start: 0, end: 10, expect: await storage.stat(loc) }))).length).toBe(0);
    expect(await storage.readText(loc)).toBe('');
  });

  it('reads with `expect` while unchanged and fails with E_INPUT_CHANGED after a change', async () => {
    const loc = at('expect', 'input.csv');
    await storage.write(loc, 'a,b\n1,2\n');
    const info = await storage.stat(loc);
    expect((await collect(await storage.read(loc, { expect: info, start: 4 }))).toString()).toBe('1,2\n');

    await storage.write(loc, 'a,b\n3,4\n'); // same size, different content
    if (kind === 'local') await utimes((loc as { path: string }).path, new Date(), new Date(info.mtimeMs! + 5000));
    const err = await failure(storage.read(loc, { expect: info }));
    expect(err.code).toBe('E_INPUT_CHANGED');
    expect(err.message).toContain(`${formatLocation(loc)} changed while the run was reading it`);
    expect((await failure(storage.read(loc, { expect: info, start: 2, end: 2 }))).code).toBe('E_INPUT_CHANGED');
    expect((await failure(storage.read(loc, { expect: { ...(await storage.stat(loc)), size: 3 } }))).code).toBe('E_INPUT_CHANGED');
  });

  it('reports a missing file or object as E_NOT_FOUND naming it (whose file it is, the caller says)', async () => {
    const loc = at('missing', 'nothing.csv');
    for (const attempt of [() => storage.stat(loc), () => storage.read(loc), () => storage.readText(loc)]) {
      const err = await failure(attempt());
      expect(err.code).toBe('E_NOT_FOUND');
      expect(err.message).toBe(`${formatLocation(loc)}: no such file or object`);
    }
    await storage.remove(loc); // missing is fine
  });

  it('lists a folder recursively in key order, and removes the files named in it', async () => {
    const names = ['b.txt', 'a/2.txt', 'c/d/e.txt', 'a/1.txt', 'a/10.txt'];
    for (const name of names) await storage.write(at('list', 'run', name), name);
    await storage.write(at('list', 'run-2', 'x.txt'), 'not in run/');
    await storage.write(at('list', 'runx'), 'not in run/ either');

    const listed = await listAll(at('list', 'run'));
    expect(listed).toEqual(
      ['a/1.txt', 'a/10.txt', 'a/2.txt', 'b.txt', 'c/d/e.txt'].map((name) => ({
        name: formatLocation(at('list', 'run', name)),
        size: name.length,
      })),
    );
    expect(await listAll(at('list', 'run/'))).toEqual(listed);
    expect(await listAll(at('list', 'nothing-here'))).toEqual([]);

    // Only the names given go, matched by their path below the folder; the rest stays.
    await storage.removeFiles(at('list', 'run'), (name) => name !== 'b.txt');
    expect((await listAll(at('list', 'run'))).map((f) => f.name)).toEqual([formatLocation(at('list', 'run', 'b.txt'))]);
    await storage.removeFiles(at('list', 'run'), () => true);
    expect(await listAll(at('list', 'run'))).toEqual([]);
    expect((await listAll(at('list'))).map((f) => f.name)).toEqual([formatLocation(at('list', 'run-2', 'x.txt')), formatLocation(at('list', 'runx'))]);
    await storage.removeFiles(at('list', 'run'), () => true); // already gone is fine
    await storage.remove(at('list', 'runx'));
    expect(await storage.exists(at('list', 'runx'))).toBe(false);
  });

  it('creates a file only where none is: one of two writers wins', async () => {
    const loc = at('create', 'claim.json');
    expect(await storage.create(loc, 'first')).toBe(true);
    expect(await storage.create(loc, 'second')).toBe(false);
    expect(await storage.readText(loc)).toBe('first');
    // At once: S3 and MinIO decide between PUTs in one step; the test server looks, then writes.
    if (kind === 's3') return;
    const race = at('create', 'race.json');
    const results = await Promise.all(['a', 'b', 'c', 'd'].map((who) => storage.create(race, who)));
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await storage.readText(race)).toBe(['a', 'b', 'c', 'd'][results.indexOf(true)]);
    expect((await listAll(at('create'))).map((f) => f.name)).toEqual([formatLocation(loc), formatLocation(race)]);
  });

  it('lists each file with what stat says of it (ETag in its quotes, modification time)', async () => {
    const loc = at('listed', 'one.csv');
    await storage.write(loc, 'a,b\n1,2\n');
    const info = await storage.stat(loc);
    const listed = [];
    for await (const file of storage.list(at('listed'))) listed.push(file);
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ location: loc, size: 8, ...(kind === 's3' ? { etag: info.etag } : {}) });
    if (kind === 's3') expect(listed[0].etag).toMatch(/^"[0-9a-f]+"$/);
    // S3's listing and HEAD may round LastModified differently; both are within a second of each other.
    expect(Math.abs(listed[0].mtimeMs! - info.mtimeMs!)).toBeLessThan(1000);
  });

  it('keeps the previous content when a streamed write fails midway', async () => {
    const loc = at('atomic', 'out.csv');
    await storage.write(loc, 'old\n');
    function* failing(): Generator<Buffer> {
      yield Buffer.from('new partial\n');
      throw new BatchScorerError('E_INPUT', 'the source broke');
    }
    const err = await failure(storage.write(loc, Readable.from(failing())));
    expect(err.message).toBe('the source broke');
    expect(await storage.readText(loc)).toBe('old\n');
    expect((await listAll(at('atomic'))).map((f) => f.name)).toEqual([formatLocation(loc)]);
  });

  it('stops a write when its signal aborts', async () => {
    const loc = at('abort', 'out.bin');
    const controller = new AbortController();
    const { stream } = generated(64 * MiB);
    let sent = 0;
    stream.on('data', (chunk: Buffer) => {
      sent += chunk.length;
      if (sent > 12 * MiB) controller.abort();
    });
    const err = await storage.write(loc, stream, { signal: controller.signal }).catch((e: unknown) => e);
    expect((err as Error).name).toBe('AbortError');
    await vi.waitFor(() => expect(stream.destroyed).toBe(true));
    expect(await storage.exists(loc)).toBe(false);
    if (kind === 's3') {
      // The parts already sent are dropped with AbortMultipartUpload.
      await vi.waitFor(() => expect(server.requests.some((r) => r.method === 'DELETE' && r.path.endsWith('/abort/out.bin'))).toBe(true));
    }
  });
});

describe('local storage', () => {
  it('writes through a temp file in the same folder and leaves none behind', async () => {
    const dir = path.join(tempDir, 'tmpcheck', 'deep');
    const loc = parseLocation(path.join(dir, 'out.csv'));
    await storage.write(loc, generated(3 * MiB).stream);
    await storage.write(loc, 'small');
    await storage
      .write(
        loc,
        Readable.from(
          (function* () {
            yield 'x';
            throw new Error('boom');
          })(),
        ),
      )
      .catch(() => undefined);
    expect(await readdir(dir)).toEqual(['out.csv']);
  });

  it('removes the folders it empties, never one holding another file or one that held nothing', async () => {
    const run = path.join(tempDir, 'tidy', 'run');
    for (const name of ['ours.txt', 'parts/1.txt', 'parts/2.txt', 'mixed/ours.txt', 'mixed/theirs.txt'])
      await storage.write(parseLocation(path.join(run, name)), name);
    await mkdir(path.join(run, 'empty-before'));
    // A half-written file of a named file (a write cut short) goes with it; one of another name stays.
    await writeFile(path.join(run, 'parts', '3.txt.tmp-0123456789ab'), 'x');
    await writeFile(path.join(run, 'mixed', 'theirs.txt.tmp-0123456789ab'), 'x');
    const ours = new Set(['ours.txt', 'parts/1.txt', 'parts/2.txt', 'parts/3.txt', 'mixed/ours.txt']);
    await storage.removeFiles(parseLocation(run), (name) => ours.has(name));
    expect((await readdir(run)).sort()).toEqual(['empty-before', 'mixed']);
    expect((await readdir(path.join(run, 'mixed'))).sort()).toEqual(['theirs.txt', 'theirs.txt.tmp-0123456789ab']);
  });

  it('removes a run-sized _work side by side: every named file, and only those', async () => {
    // More files than are removed at once, in two levels, as a run's segments leave them.
    const work = path.join(tempDir, 'wide', '_work');
    const names = ['run.json', 'claim.json', ...Array.from({ length: 120 }, (_, i) => `segments/${String(i).padStart(5, '0')}.csv`)];
    await Promise.all(names.map((name) => storage.write(parseLocation(path.join(work, name)), name)));
    await writeFile(path.join(work, 'segments', 'notes.txt'), 'theirs');
    await storage.removeFiles(parseLocation(work), (name) => names.includes(name));
    expect(await readdir(work)).toEqual(['segments']);
    expect(await readdir(path.join(work, 'segments'))).toEqual(['notes.txt']);
    await storage.removeFiles(parseLocation(work), () => true);
    expect(await readdir(path.join(tempDir, 'wide'))).toEqual([]);
  });

  it('fails at once where a folder cannot be made: a file in the way, /proc, /sys', async () => {
    const file = path.join(tempDir, 'in-the-way');
    await storage.write(parseLocation(file), 'x');
    const blocked = await failure(storage.write(parseLocation(path.join(file, 'runs', 'r', 'x.json')), '{}'));
    expect(blocked.code).toBe('E_STORAGE_REFUSED');
    expect(blocked.message).toContain(`${file} is a file, not a folder`);
    // Node's recursive mkdir loops for ever on /proc as root; made one level at a time, it fails at once.
    const started = Date.now();
    const proc = await failure(storage.create(parseLocation('/proc/batch-scorer-test/r/claim.json'), '{}'));
    expect(proc.code).toBe('E_STORAGE_REFUSED');
    expect(proc.message).toContain('cannot make the folder /proc/batch-scorer-test/r: /proc takes no new folders');
    expect((await failure(storage.write(parseLocation('/sys/batch-scorer-test/x.json'), '{}'))).code).toBe('E_STORAGE_REFUSED');
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('says why a folder cannot be written, creating nothing', async () => {
    const file = path.join(tempDir, 'writable', 'a-file');
    await storage.write(parseLocation(file), 'x');
    expect(await storage.whyUnwritable(parseLocation(path.join(tempDir, 'writable')))).toBeUndefined();
    expect(await storage.whyUnwritable(parseLocation(path.join(tempDir, 'writable', 'not', 'yet')))).toBeUndefined();
    expect(await storage.whyUnwritable(parseLocation(path.join(file, 'runs', 'deeper')))).toBe(`${file} is a file, not a folder`);
    expect(await storage.whyUnwritable(parseLocation(file))).toBe(`${file} is a file, not a folder`);
    expect(await readdir(path.join(tempDir, 'writable'))).toEqual(['a-file']);
  });

  it('says a directory is not a file, and to name a file in it', async () => {
    const err = await failure(storage.stat(parseLocation(tempDir)));
    expect(err.code).toBe('E_NOT_FOUND');
    expect(err.message).toBe(`${tempDir}: is a directory, not a file; name a file in it instead`);
  });
});

describe('s3 storage', () => {
  it('streams a ~20 MiB write as a multipart upload that reads back intact', async () => {
    const loc = parseLocation('s3://data/big/twenty.bin');
    const size = 20 * MiB + 12345;
    const source = generated(size);
    const before = server.requests.length;
    expect(await storage.write(loc, source.stream)).toEqual({ bytes: size });

    const seen = server.requests.slice(before);
    expect(seen.filter((r) => r.method === 'POST' && /(^|&)uploads(=|&|$)/.test(r.query))).toHaveLength(1);
    expect(seen.filter((r) => r.method === 'PUT' && /partNumber=/.test(r.query))).toHaveLength(3);
    expect(seen.filter((r) => r.method === 'POST' && /uploadId=/.test(r.query))).toHaveLength(1);

    expect((await storage.stat(loc)).size).toBe(size);
    const readBack = createHash('sha256');
    for await (const chunk of await storage.read(loc)) readBack.update(chunk as Buffer);
    expect(readBack.digest('hex')).toBe(source.sha256());
  });

  it('sends If-Match and maps 412 to E_INPUT_CHANGED', async () => {
    const loc = parseLocation('s3://data/etag/input.csv');
    await storage.write(loc, 'a\n1\n');
    const info = await storage.stat(loc);
    const before = server.requests.length;
    await collect(await storage.read(loc, { expect: info }));
    expect(server.requests.slice(before).map((r) => r.ifMatch)).toEqual([info.etag]);

    const err = await failure(storage.read(loc, { expect: { ...info, etag: '"0123456789abcdef"' } }));
    expect(err.code).toBe('E_INPUT_CHANGED');
    expect(err.message).toMatch(/s3:\/\/data\/etag\/input\.csv changed while the run was reading it/);
  });

  it('frees the connection when a read is destroyed or aborted early', async () => {
    const loc = parseLocation('s3://data/early/big.bin');
    await storage.write(loc, generated(12 * MiB).stream);
    const stream = await storage.read(loc);
    for await (const _ of stream) break; // destroys the stream
    expect(stream.destroyed).toBe(true);

    const controller = new AbortController();
    const aborted = await storage.read(loc, { signal: controller.signal });
    controller.abort();
    const err = await collect(aborted).catch((e: unknown) => e);
    expect((err as Error).name).toBe('AbortError');

    // The client still works afterwards (no pool exhausted by half-read bodies).
    for (let i = 0; i < 60; i++) {
      const s = await storage.read(loc, { start: i, end: i + 2 });
      s.destroy();
    }
    expect((await collect(await storage.read(loc, { start: 5, end: 9 }))).length).toBe(4);
  });

  it('names a missing bucket', async () => {
    const loc = parseLocation('s3://no-such-bucket/x.csv');
    const readErr = await failure(storage.read(loc));
    expect(readErr.code).toBe('E_NOT_FOUND');
    expect(readErr.message).toContain("bucket 'no-such-bucket' does not exist");
    const writeErr = await failure(storage.write(loc, 'x'));
    expect(writeErr.code).toBe('E_STORAGE_REFUSED');
    expect(writeErr.retriable).toBe(false);
    expect(writeErr.message).toContain("bucket 'no-such-bucket'");
  });

  it('says to check credentials on 403, without showing them', async () => {
    // s3rver checks the access key id but not SigV4 signatures, so the key id is the wrong part here.
    const secret = 'not-the-right-secret-123';
    const wrong = createStorage({
      ...server.settings,
      credentials: { accessKeyId: 'NOTAKEY', secretAccessKey: secret },
    });
    try {
      const err = await failure(wrong.write(parseLocation('s3://data/denied.txt'), 'x'));
      expect(err.code).toBe('E_STORAGE_REFUSED');
      expect(err.retriable).toBe(false);
      expect(err.message).toMatch(/access denied .*check the S3 credentials/);
      expect(err.message).not.toContain(secret);
      expect(err.message).not.toContain('NOTAKEY');
    } finally {
      wrong.close();
    }
  });

  it('maps network failures to retriable E_STORAGE', async () => {
    const down = createStorage({ ...server.settings, endpoint: 'http://127.0.0.1:9' });
    try {
      const err = await failure(down.stat(parseLocation('s3://data/x.csv')));
      expect(err.code).toBe('E_STORAGE');
      expect(err.retriable).toBe(true);
      expect(err.message).toMatch(/^stat s3:\/\/data\/x\.csv: /);
    } finally {
      down.close();
    }
  });

  it('says a folder in a missing bucket cannot be written', async () => {
    expect(await storage.whyUnwritable(parseLocation('s3://data/runs/'))).toBeUndefined();
    expect(await storage.whyUnwritable(parseLocation('s3://no-such-bucket/runs'))).toBe("bucket 'no-such-bucket' does not exist");
  });

  it('can be closed twice', async () => {
    const own = createStorage(server.settings);
    await own.write(parseLocation('s3://data/close/x.txt'), 'x');
    own.close();
    own.close();
    createStorage().close(); // never used S3: nothing to close
  });
});

describe('multipart abort', () => {
  it('aborts the multipart upload when the body fails', async () => {
    const before = server.requests.length;
    const { stream } = generated(10 * MiB);
    async function* thenFail(): AsyncGenerator<Buffer> {
      for await (const chunk of stream) yield chunk as Buffer;
      throw new Error('source failed');
    }
    const err = await storage.write(parseLocation('s3://data/mp/fail.bin'), Readable.from(thenFail())).catch((e: unknown) => e);
    expect((err as Error).message).toContain('source failed');
    await vi.waitFor(() => expect(server.requests.slice(before).some((r) => r.method === 'DELETE' && /uploadId=/.test(r.query))).toBe(true));
  });
});
