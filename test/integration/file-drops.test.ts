import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Manifest } from '../../src/scoring/manifest.js';
import { rentalsCsv } from '../../src/simulator/sample-data.js';
import { parseLocation } from '../../src/storage/location.js';
import { createStorage } from '../../src/storage/storage.js';
import type { Storage } from '../../src/storage/storage-types.js';
import { runCli, startCli, type CliProcess } from '../helpers/cli.js';
import { freePort, useQueueFixture, waitFor, reasonOf } from '../helpers/queue.js';
import { rentalsWithSqft } from '../helpers/scoring.js';
import { startS3Server, type S3Server } from '../helpers/s3-server.js';
import { useServeProcesses } from '../helpers/serve.js';

const TOKEN = 'tok-drops-5e2c9b7a1f';
const bearer = { authorization: `Bearer ${TOKEN}` };
const PIPELINE = 'drops';

let s3: S3Server;
let storage: Storage;
const folders: string[] = [];
beforeAll(async () => {
  s3 = await startS3Server(['inbox', 'results']);
  storage = createStorage(s3.settings);
});
afterAll(async () => {
  storage.close();
  await s3.close();
  for (const dir of folders) await rm(dir, { recursive: true, force: true });
});

const f = useQueueFixture();
const serve = useServeProcesses();
const watchers: CliProcess[] = [];

/**
 * A jobs folder of one file-drop pipeline watching `s3://inbox/<name>/` for `.csv` files, writing
 * to `s3://results/<name>/`: each test drops files under a prefix of its own.
 */
async function jobsFor(name: string, more = ''): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'drops-jobs-'));
  folders.push(dir);
  await writeFile(
    join(dir, 'drops.yaml'),
    `name: ${PIPELINE}\nmodel: mindsdb/home_rentals_model\ntrigger: { prefix: s3://inbox/${name}/, suffix: .csv }\noutput: s3://results/${name}/\n${more}`,
  );
  return dir;
}

/** The environment of the test's child processes: its queue, the simulator, s3rver and its jobs folder. */
const env = (jobsDir: string) => ({
  ...f.env(),
  S3_ENDPOINT: s3.endpoint,
  S3_FORCE_PATH_STYLE: 'true',
  AWS_ACCESS_KEY_ID: 'S3RVER',
  AWS_SECRET_ACCESS_KEY: 'S3RVER',
  JOBS_DIR: jobsDir,
  API_TOKEN: TOKEN,
});

/** Writes a rentals CSV of `rows` rows (from row `first`) to `s3://inbox/<key>`; answers its ETag as events send it (no quotes). */
async function drop(key: string, rows: number, first = 0): Promise<string> {
  const loc = parseLocation(`s3://inbox/${key}`);
  await storage.write(loc, rentalsCsv(rows, first));
  return (await storage.stat(loc)).etag!.replace(/"/g, '');
}

/** An AWS S3 event record; `key` is sent as S3 sends it, URL-encoded with `+` for spaces. */
function awsRecord(key: string, eTag: string, options: { eventName?: string; bucket?: string } = {}) {
  return {
    eventVersion: '2.1',
    eventSource: 'aws:s3',
    awsRegion: 'us-east-1',
    eventTime: new Date().toISOString(),
    eventName: options.eventName ?? 'ObjectCreated:Put',
    s3: { s3SchemaVersion: '1.0', bucket: { name: options.bucket ?? 'inbox' }, object: { key: encodeKey(key), size: 1, eTag, sequencer: '00' } },
  };
}

/** MinIO's webhook body for one object. */
function minioEvent(key: string, eTag: string) {
  const record = { ...awsRecord(key, eTag, { eventName: 's3:ObjectCreated:Put' }), eventSource: 'minio:s3' };
  return { EventName: 's3:ObjectCreated:Put', Key: `inbox/${key}`, Records: [record] };
}

/** A key as S3 events carry it: URL-encoded, spaces as `+`, slashes kept. */
const encodeKey = (key: string) => key.split('/').map(encodeURIComponent).join('/').replace(/%20/g, '+');

interface EventAnswer {
  status: number;
  json: { runs?: { runId: string; pipeline: string; location: string; created: boolean }[]; ignored?: number; error?: string; issues?: { field: string }[] };
}

async function postEvent(url: string, body: unknown, headers: Record<string, string> = bearer): Promise<EventAnswer> {
  const res = await fetch(`${url}/events/s3`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: res.status, json: (await res.json()) as EventAnswer['json'] };
}

/** Runs `watch` until the test ends (SIGTERM then). */
function startWatch(jobsDir: string, args: string[]): CliProcess {
  const w = startCli(['watch', ...args], env(jobsDir));
  watchers.push(w);
  return w;
}

/** The run ids the pipeline started on this test's queue. */
const runIds = async () => (await f.queue.list({ pipeline: PIPELINE, limit: 2000 })).map((r) => r.runId).sort();

/** Waits for a run to complete and answers its manifest, checking its folder holds `_SUCCESS`. */
async function completedRun(name: string, runId: string): Promise<Manifest> {
  const status = await f.finished(runId);
  expect([runId, status.state, status.failedReason]).toEqual([runId, 'succeeded', undefined]);
  expect(await storage.exists(parseLocation(`s3://results/${name}/${runId}/_SUCCESS`))).toBe(true);
  return JSON.parse(await storage.readText(parseLocation(`s3://results/${name}/${runId}/manifest.json`))) as Manifest;
}

describe('file drops', () => {
  afterEach(() => {
    for (const w of watchers.splice(0)) if (w.child.exitCode === null) w.child.kill('SIGKILL');
  });

  it('POST /events/s3 (AWS and MinIO) starts one complete run per new file version; duplicates, test events and strangers start none', async () => {
    await f.setup();
    const jobs = await jobsFor('events');
    f.worker([], env(jobs));
    const s = await serve(env(jobs));
    const key = 'events/new file+1.csv';
    const etag = await drop(key, 300);

    const first = await postEvent(s.url, { Records: [awsRecord(key, etag)] });
    expect(first.status).toBe(200);
    expect(first.json.ignored).toBe(0);
    expect(first.json.runs).toEqual([
      { runId: expect.stringMatching(/^drops-\d{8}-[0-9a-f]{12}$/) as string, pipeline: PIPELINE, location: 's3://inbox/events/new file+1.csv', created: true },
    ]);
    const runId = first.json.runs![0].runId;

    // The same event again, in MinIO's format, and twice in one message: the same run, not a new one.
    const again = await postEvent(s.url, { Records: [awsRecord(key, etag)] });
    const minio = await postEvent(s.url, minioEvent(key, etag));
    const twice = await postEvent(s.url, { Records: [awsRecord(key, `"${etag}"`), awsRecord(key, etag)] });
    for (const answer of [again, minio, twice])
      expect([answer.status, answer.json.runs]).toEqual([200, [{ runId, pipeline: PIPELINE, location: 's3://inbox/events/new file+1.csv', created: false }]]);

    // The AWS test event; an event kind other than ObjectCreated, a bucket and a prefix no pipeline watches.
    const test = await postEvent(s.url, {
      Service: 'Amazon S3',
      Event: 's3:TestEvent',
      Time: new Date().toISOString(),
      Bucket: 'inbox',
      RequestId: 'R1',
      HostId: 'H1',
    });
    expect([test.status, test.json]).toEqual([200, { runs: [], ignored: 0 }]);
    const strangers = await postEvent(s.url, {
      Records: [
        awsRecord(key, etag, { eventName: 'ObjectRemoved:Delete' }),
        awsRecord(key, etag, { bucket: 'elsewhere' }),
        awsRecord('other/x.csv', etag),
        awsRecord('events/notes.txt', etag),
      ],
    });
    expect([strangers.status, strangers.json]).toEqual([200, { runs: [], ignored: 4 }]);

    // Refused: without the token, with a wrong one, and a malformed body naming the field.
    expect((await postEvent(s.url, { Records: [awsRecord(key, etag)] }, {})).status).toBe(401);
    expect((await postEvent(s.url, { Records: [awsRecord(key, etag)] }, { authorization: `Bearer ${TOKEN}x` })).status).toBe(401);
    const bad = await postEvent(s.url, { Records: [{ eventName: 'ObjectCreated:Put', s3: { bucket: { name: 'inbox' }, object: { key: 'events/x.csv' } } }] });
    expect([bad.status, bad.json.error, bad.json.issues?.map((i) => i.field)]).toEqual([400, 'E_USAGE', ['Records.0.s3.object.eTag']]);

    const manifest = await completedRun('events', runId);
    expect(manifest.trigger).toMatchObject({
      kind: 'event',
      pipeline: PIPELINE,
      eventName: 'ObjectCreated:Put',
      object: { location: 's3://inbox/events/new file+1.csv', etag },
    });
    expect(manifest.counts).toMatchObject({ rowsIn: 300, rowsScored: 300 });

    // New content under the same key: a new ETag, a second run; the same content again: none.
    const etag2 = await drop(key, 200, 1_000);
    expect(etag2).not.toBe(etag);
    const second = await postEvent(s.url, minioEvent(key, etag2));
    expect(second.json.runs).toEqual([expect.objectContaining({ created: true })]);
    const secondRun = second.json.runs![0].runId;
    expect(secondRun).not.toBe(runId);
    expect(await drop(key, 200, 1_000)).toBe(etag2);
    expect((await postEvent(s.url, { Records: [awsRecord(key, etag2)] })).json.runs).toEqual([expect.objectContaining({ runId: secondRun, created: false })]);
    expect((await completedRun('events', secondRun)).trigger).toMatchObject({ kind: 'event', object: { etag: etag2 } });
    expect(await runIds()).toEqual([runId, secondRun].sort());

    const log = s.stderr();
    expect(log).toMatch(/"bucket":"elsewhere".*"msg":"S3 event record ignored"/);
    expect(log).not.toContain(TOKEN);
  });

  it('watch finds a file dropped between two polls, runs it to completion, and a new version of it again', async () => {
    await f.setup();
    const jobs = await jobsFor('polled');
    f.worker([], env(jobs));
    const old = await drop('polled/old.csv', 100);
    const w = startWatch(jobs, ['--interval', '0.3']);
    const [oldRun] = await waitFor(
      'the file there before watch started to be enqueued',
      async () => ((await runIds()).length === 1 ? runIds() : undefined),
      20_000,
    );
    // Folders deeper down count; other suffixes do not.
    await storage.write(parseLocation('s3://inbox/polled/notes.txt'), 'not a csv');
    const dropped = await drop('polled/day 2/new.csv', 250);
    const both = await waitFor('the dropped file to be enqueued', async () => ((await runIds()).length === 2 ? runIds() : undefined), 20_000);
    const newRun = both.find((id) => id !== oldRun)!;

    const manifest = await completedRun('polled', newRun);
    expect(manifest.trigger).toMatchObject({
      kind: 'poll',
      pipeline: PIPELINE,
      object: { location: 's3://inbox/polled/day 2/new.csv', etag: dropped, size: expect.any(Number) as number },
    });
    expect((manifest.trigger as { foundAt?: string }).foundAt).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(manifest.counts).toMatchObject({ rowsIn: 250, rowsScored: 250 });
    expect((await completedRun('polled', oldRun)).trigger).toMatchObject({ object: { etag: old } });

    // A new version of the key: a third run, found by the next polls.
    const changed = await drop('polled/old.csv', 120, 500);
    const three = await waitFor('the new version to be enqueued', async () => ((await runIds()).length === 3 ? runIds() : undefined), 20_000);
    const third = three.find((id) => id !== oldRun && id !== newRun)!;
    expect((await completedRun('polled', third)).trigger).toMatchObject({ kind: 'poll', object: { location: 's3://inbox/polled/old.csv', etag: changed } });

    w.child.kill('SIGTERM');
    expect(await w.exited).toBe(0);
    const log = w.stderr();
    expect(log.match(/"msg":"watch: file found; run enqueued"/g)).toHaveLength(3);
    expect(await runIds()).toHaveLength(3);
  });

  it('two watchers and the event intake racing on the same files start exactly one run per file', async () => {
    await f.setup();
    const jobs = await jobsFor('race');
    const s = await serve(env(jobs));
    // Enough files that the events, sent one at a time from the last file back, are still coming
    // when the watchers (listing from the first file on) have started.
    const keys = Array.from({ length: 120 }, (_, i) => `race/${String(i).padStart(3, '0')}.csv`);
    const etags: string[] = [];
    for (const [i, k] of keys.entries()) etags.push(await drop(k, 2, i));
    const pair = [startCli(['watch', '--once'], env(jobs)), startCli(['watch', '--once'], env(jobs))];
    // Both are about to list (they log it first): the events now race them.
    await waitFor('both watchers to start', () => pair.every((w) => w.stderr().includes('"msg":"watching"') || w.child.exitCode !== null), 15_000, 5);
    const watching = Promise.all(pair.map(async (w) => ({ code: await w.exited, stdout: w.stdout() })));
    const fromEvents: string[] = [];
    for (let i = keys.length - 1; i >= 0; i--) {
      const answer = await postEvent(s.url, { Records: [awsRecord(keys[i], etags[i])] });
      expect(answer.status).toBe(200);
      fromEvents.push(...answer.json.runs!.filter((r) => r.created).map((r) => r.runId));
    }
    const [w1, w2] = await watching;
    expect([w1.code, w2.code]).toEqual([0, 0]);
    const fromWatchers = [w1, w2].flatMap((w) => w.stdout.split('\n').filter(Boolean));
    // Each file started once, by whichever saw it first.
    expect([...fromEvents, ...fromWatchers].sort()).toEqual(await runIds());
    const inputs = (await f.queue.list({ pipeline: PIPELINE, limit: 1000 })).map((r) => r.input).sort();
    expect(inputs).toEqual(keys.map((k) => `s3://inbox/${k}`));
    // Seen again by every path, nothing starts.
    const again = await postEvent(s.url, { Records: keys.map((k, i) => awsRecord(k, etags[i])) });
    expect(again.json.runs!.filter((r) => r.created)).toEqual([]);
    expect((await runCli(['watch', '--once'], env(jobs))).stdout).toBe('');
  });

  it('a file replaced before its run starts: that run fails with E_INPUT_CHANGED, never scoring the newer version under the older one', async () => {
    await f.setup();
    const jobs = await jobsFor('replaced');
    const s = await serve(env(jobs));
    const key = 'replaced/daily.csv';
    const older = await drop(key, 50);
    const newer = await drop(key, 80, 1000);
    expect(newer).not.toBe(older);
    // The older version's event arrives after the file was replaced; then the newer one's.
    const [late, current] = [await postEvent(s.url, { Records: [awsRecord(key, older)] }), await postEvent(s.url, { Records: [awsRecord(key, newer)] })];
    const [lateRun, currentRun] = [late.json.runs![0].runId, current.json.runs![0].runId];
    expect(lateRun).not.toBe(currentRun);
    f.worker([], env(jobs));
    const failed = await f.finished(lateRun);
    expect(failed).toMatchObject({ state: 'failed', attempts: 1 });
    expect(reasonOf(failed)).toContain(
      `s3://inbox/${key} was replaced after this run was started for it: the run is for version ${older}, the file is now ${newer}`,
    );
    expect(reasonOf(failed)).toContain('E_INPUT_CHANGED');
    const manifest = await completedRun('replaced', currentRun);
    expect(manifest).toMatchObject({ input: { rows: 80 }, trigger: { kind: 'event', object: { etag: newer } } });
    // Sighted again, the failed run stays failed: it is not restarted.
    expect((await postEvent(s.url, { Records: [awsRecord(key, older)] })).json.runs).toEqual([expect.objectContaining({ runId: lateRun, created: false })]);
    expect(await f.queue.get(lateRun)).toMatchObject({ state: 'failed', attempts: 1 });
  });

  it('each run of a pipeline is compared with its previous one: the same rows again are not flagged; shifted ones fail naming the column', async () => {
    await f.setup();
    const jobs = await jobsFor('drift', 'options: { driftFail: 0.25 }\n');
    f.worker([], env(jobs));
    const s = await serve(env(jobs));
    const runOf = async (key: string, shift: number) => {
      const loc = parseLocation(`s3://inbox/drift/${key}`);
      await storage.write(
        loc,
        rentalsWithSqft(1_000, (v) => Math.round(v * shift)),
      );
      const etag = (await storage.stat(loc)).etag!.replace(/"/g, '');
      const answer = await postEvent(s.url, { Records: [awsRecord(`drift/${key}`, etag)] });
      expect(answer.status).toBe(200);
      return answer.json.runs![0].runId;
    };
    const manifestOf = async (runId: string) => JSON.parse(await storage.readText(parseLocation(`s3://results/drift/${runId}/manifest.json`))) as Manifest;

    const first = await runOf('monday.csv', 1);
    expect((await completedRun('drift', first)).drift).toBeNull();
    const second = await runOf('tuesday.csv', 1);
    const same = await completedRun('drift', second);
    expect(same.drift).toMatchObject({ baseline: { runId: first, chosen: 'previous' }, level: 'ok', moved: [] });

    const third = await runOf('wednesday.csv', 1.5);
    const status = await f.finished(third);
    expect(status.state).toBe('held');
    expect(reasonOf(status)).toMatch(/E_DRIFT/);
    const shifted = await manifestOf(third);
    expect(shifted).toMatchObject({ state: 'held', error: { code: 'E_DRIFT' }, drift: { baseline: { runId: second }, level: 'fail' } });
    expect(shifted.drift!.moved[0]).toBe('sqft');
    expect(await storage.exists(parseLocation(`s3://results/drift/${third}/_SUCCESS`))).toBe(false);
  });

  it('a claim left without its run (a crash between claim and enqueue) is completed by the next sighting, under the claimed id', async () => {
    await f.setup();
    const jobs = await jobsFor('pending');
    const etag = await drop('pending/x.csv', 10);
    const redis = new Redis(f.redisUrl);
    try {
      await redis.hset(
        `${f.prefix}:file-drops:${PIPELINE}`,
        `s3://inbox/pending/x.csv\n${etag}`,
        JSON.stringify({ runId: 'claimed-before-the-crash', enqueued: false }),
      );
      const once = await runCli(['watch', '--once'], env(jobs));
      expect([once.code, once.stdout]).toEqual([0, 'claimed-before-the-crash\n']);
      expect(JSON.parse((await redis.hget(`${f.prefix}:file-drops:${PIPELINE}`, `s3://inbox/pending/x.csv\n${etag}`))!)).toEqual({
        runId: 'claimed-before-the-crash',
        enqueued: true,
      });
      // Claimed and enqueued: later polls start nothing.
      expect(await runCli(['watch', '--once'], env(jobs))).toMatchObject({ code: 0, stdout: '' });
      expect(await runIds()).toEqual(['claimed-before-the-crash']);
    } finally {
      redis.disconnect();
    }
  });

  it('watch follows every listing page (1,001 files), and polls a local folder by size and modification time', async () => {
    await f.setup();
    const jobs = await jobsFor('pages');
    const keys = Array.from({ length: 1_001 }, (_, i) => `pages/${String(i).padStart(4, '0')}.csv`);
    for (let i = 0; i < keys.length; i += 100)
      await Promise.all(keys.slice(i, i + 100).map((k) => storage.write(parseLocation(`s3://inbox/${k}`), 'a,b\n1,2\n')));
    const first = await runCli(['watch', '--once'], env(jobs));
    expect([first.code, first.stdout.split('\n').filter(Boolean).length]).toEqual([0, 1_001]);
    // Every file claimed: the next pass starts nothing (one claim lookup per page of the listing).
    const second = await runCli(['watch', '--once'], env(jobs));
    expect([second.code, second.stdout]).toEqual([0, '']);
    expect(await runIds()).toHaveLength(1_001);

    const inbox = await mkdtemp(join(tmpdir(), 'drops-local-'));
    folders.push(inbox);
    await writeFile(
      join(jobs, 'drops.yaml'),
      `name: local\nmodel: mindsdb/home_rentals_model\ntrigger: { prefix: ${inbox}/, suffix: .csv }\noutput: ${inbox}-out/\n`,
    );
    await writeFile(join(inbox, 'a.csv'), 'a,b\n1,2\n');
    const local = await runCli(['watch', '--once'], env(jobs));
    expect([local.code, local.stdout]).toEqual([0, expect.stringMatching(/^local-\d{8}-[0-9a-f]{12}\n$/) as string]);
    expect((await runCli(['watch', '--once'], env(jobs))).stdout).toBe('');
    await writeFile(join(inbox, 'a.csv'), 'a,b\n1,2\n3,4\n');
    const changed = await runCli(['watch', '--once'], env(jobs));
    expect(changed.stdout).toMatch(/^local-\d{8}-[0-9a-f]{12}\n$/);
    expect(changed.stdout).not.toBe(local.stdout);
    const [run] = await f.queue.list({ pipeline: 'local', limit: 1 });
    expect(run.trigger).toMatchObject({ kind: 'poll', object: { location: join(inbox, 'a.csv'), etag: expect.stringMatching(/^12-\d+$/) as string } });
  });

  it('refuses a bad --interval, an invalid jobs folder (serve too), fails --once on a missing bucket, and answers 503 while Redis is away', async () => {
    await f.setup();
    const jobs = await jobsFor('errors');
    const interval = await runCli(['watch', '--interval', '0'], env(jobs));
    expect([interval.code, interval.stderr]).toEqual([2, expect.stringContaining('--interval takes a number above 0 and at most 86400, got "0"')]);
    // Beyond what Node's timers can wait, which would poll without pause.
    const long = await runCli(['watch', '--interval', '3000000'], env(jobs));
    expect([long.code, long.stderr]).toEqual([2, expect.stringContaining('--interval takes a number above 0 and at most 86400, got "3000000"')]);

    const invalid = await mkdtemp(join(tmpdir(), 'drops-bad-'));
    folders.push(invalid);
    await writeFile(join(invalid, 'bad.yaml'), 'name: bad\nmodel: mindsdb/home_rentals_model\ntrigger: { prefix: s3://inbox/x }\noutput: s3://results/x/\n');
    for (const command of [
      ['watch', '--once'],
      ['serve', '--port', String(await freePort())],
    ]) {
      const refused = await runCli(command, { ...env(jobs), JOBS_DIR: invalid });
      expect([command[0], refused.code, refused.stderr]).toEqual([command[0], 2, expect.stringContaining('trigger.prefix')]);
    }

    const missingBucket = await mkdtemp(join(tmpdir(), 'drops-nobucket-'));
    folders.push(missingBucket);
    await writeFile(
      join(missingBucket, 'x.yaml'),
      'name: nobucket\nmodel: mindsdb/home_rentals_model\ntrigger: { prefix: s3://no-such-bucket/in/ }\noutput: s3://results/x/\n',
    );
    const failed = await runCli(['watch', '--once'], { ...env(jobs), JOBS_DIR: missingBucket });
    expect([failed.code, failed.stderr]).toEqual([1, expect.stringContaining('s3://no-such-bucket/in/')]);

    const closed = `redis://127.0.0.1:${await freePort()}`;
    const s = await serve({ ...env(jobs), REDIS_URL: closed });
    const away = await postEvent(s.url, { Records: [awsRecord('errors/x.csv', 'e1')] });
    expect([away.status, away.json.error]).toEqual([503, 'E_REDIS_UNAVAILABLE']);
    // Nothing to claim, nothing asked of Redis: an event no pipeline watches is answered all the same.
    expect((await postEvent(s.url, { Records: [awsRecord('other/x.csv', 'e1')] })).json).toEqual({ runs: [], ignored: 1 });
  });
});
