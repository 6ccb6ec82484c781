// The deployment policy probed as an attacker would: a caller holding API_TOKEN (a real `serve`)
// and a producer writing straight to Redis (RunQueue and raw BullMQ jobs, which apply no policy),
// against real worker processes with INPUT_ROOTS, OUTPUT_ROOTS, SERVICE_URLS and SERVICE_TOKENS
// set. A foreign listener stands for another host; after every probe it has received nothing,
// and nothing outside the roots was read into an answer, written or deleted.
import { createHash } from 'node:crypto';
import { lstat, mkdir, mkdtemp, readdir, readFile, readlink, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Job, Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunQueue, type RunStatus } from '../../src/queue/producer.js';
import { RUNS_QUEUE, SEGMENTS_QUEUE } from '../../src/queue/queues.js';
import { createSimulator, type Simulator } from '../../src/simulator/server.js';
import { runCli } from '../helpers/cli.js';
import { startForeignListener, type ForeignListener } from '../helpers/foreign-listener.js';
import { dropPrefix, freePort, REDIS_URL, startWorkerProcess, uniquePrefix, waitFor, type WorkerProcess, reasonOf } from '../helpers/queue.js';
import { writeRentals } from '../helpers/scoring.js';
import { startServeProcess, type ServeProcess } from '../helpers/serve.js';

// Secrets of 16 characters or more, as serve requires.
const API_TOKEN = 'policy-api-token-5c1e9a7f';
const DASHBOARD = { DASHBOARD_USER: 'operator', DASHBOARD_PASSWORD: 'policy-dashboard-3b8d2e6a' };
const HOME_TOKEN = 'home-service-token-7a2c4e9b';
const SECOND_TOKEN = 'second-service-token-1f6d8b3c';
const MODEL = 'mindsdb/home_rentals_model';
const PIPELINE = 'policy-drops';
/** What the private env file holds: no answer, page or file outside it may ever show it. */
const SECRET_LINE = 'REDIS_PASSWORD=hunter2-not-for-callers';
const bearer = { authorization: `Bearer ${API_TOKEN}` };

let base = '';
const dirs = { in: '', out: '', private: '', foreign: '', elsewhere: '', jobs: '' };
let home: Simulator;
let second: Simulator;
let foreign: ForeignListener;
let open: ForeignListener;
let prefix = '';
let queue: RunQueue;
let serve: ServeProcess;
let worker: WorkerProcess;
let env: Record<string, string> = {};

beforeAll(async () => {
  base = await realpath(await mkdtemp(join(tmpdir(), 'policy-')));
  for (const [name, path] of Object.entries({
    in: 'roots/in',
    out: 'roots/out',
    private: 'private',
    foreign: 'foreign',
    elsewhere: 'elsewhere',
    jobs: 'jobs',
  })) {
    dirs[name as keyof typeof dirs] = join(base, path);
    await mkdir(join(base, path), { recursive: true });
  }
  await writeFile(join(dirs.private, 'customers.csv'), `${SECRET_LINE}\nAPI_KEY=also-private\n`);
  await writeRentals(join(dirs.private, 'rentals.csv'), 40);
  await writeRentals(join(dirs.in, 'rentals.csv'), 50);
  await symlink(join(dirs.private, 'customers.csv'), join(dirs.in, 'link.csv'));
  // A folder input whose second file is a link to a private file that would score as well as any.
  await mkdir(join(dirs.in, 'mixed'));
  await writeRentals(join(dirs.in, 'mixed', 'a.csv'), 30);
  await symlink(join(dirs.private, 'rentals.csv'), join(dirs.in, 'mixed', 'b.csv'));
  // Another team's folder: a results file and a run folder of theirs with notes in its _work area.
  await writeFile(join(dirs.foreign, 'predictions.csv'), 'theirs,do,not,touch\n');
  await mkdir(join(dirs.foreign, 'r-foreign', '_work'), { recursive: true });
  await writeFile(join(dirs.foreign, 'r-foreign', '_work', 'notes.txt'), 'their notes\n');
  await writeFile(
    join(dirs.jobs, 'drops.yaml'),
    `name: ${PIPELINE}\nmodel: ${MODEL}\ntrigger: { prefix: s3://inbox/rentals/, suffix: .csv }\noutput: s3://results/rentals/\n`,
  );

  home = await createSimulator({ port: 0, token: HOME_TOKEN });
  second = await createSimulator({ port: 0, token: SECOND_TOKEN });
  foreign = await startForeignListener();
  open = await startForeignListener();
  prefix = uniquePrefix();
  queue = new RunQueue({ redisUrl: REDIS_URL, prefix });
  env = {
    REDIS_URL,
    QUEUE_PREFIX: prefix,
    MODEL_SERVICE_URL: home.url,
    MODEL_SERVICE_TOKEN: HOME_TOKEN,
    INPUT_ROOTS: dirs.in,
    OUTPUT_ROOTS: dirs.out,
    // `open` is allowed but has no token of its own: it must receive none.
    SERVICE_URLS: `${second.url},${open.url}`,
    SERVICE_TOKENS: `${new URL(second.url).origin}=${SECOND_TOKEN}`,
    API_TOKEN,
    ...DASHBOARD,
    JOBS_DIR: dirs.jobs,
  };
  serve = await startServeProcess(env);
  worker = startWorkerProcess(env, ['--lock-duration', '2000']);
});

afterAll(async () => {
  for (const child of [serve?.child, worker?.child]) if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await Promise.all([serve?.exited, worker?.exited]);
  await queue?.close();
  await Promise.all([home?.close(), second?.close(), foreign?.close(), open?.close()]);
  if (prefix) await dropPrefix(prefix);
  if (base) await rm(base, { recursive: true, force: true });
});

/** Every file and link below a folder with a digest of its content (or its target): compared before and after a probe. */
async function tree(dir: string): Promise<Record<string, string>> {
  const found: Record<string, string> = {};
  const walk = async (at: string, rel: string) => {
    for (const name of (await readdir(at)).sort()) {
      const path = join(at, name);
      const info = await lstat(path);
      if (info.isDirectory()) await walk(path, `${rel}${name}/`);
      else if (info.isSymbolicLink()) found[`${rel}${name}`] = `-> ${await readlink(path)}`;
      else
        found[`${rel}${name}`] = createHash('sha256')
          .update(await readFile(path))
          .digest('hex');
    }
  };
  await walk(dir, '');
  return found;
}

async function call(path: string, init: { method?: string; body?: unknown } = {}) {
  const res = await fetch(`${serve.url}${path}`, {
    method: init.method ?? 'GET',
    headers: { ...bearer, ...(init.body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await res.text();
  return { status: res.status, text, json: text.startsWith('{') ? (JSON.parse(text) as Record<string, unknown>) : undefined };
}

/** A 403 E_NOT_ALLOWED answer whose message names `setting`, echoing no private line. */
function expectRefused(answer: Awaited<ReturnType<typeof call>>, setting: string) {
  expect([answer.status, answer.json?.error], answer.text).toEqual([403, 'E_NOT_ALLOWED']);
  expect(answer.json?.message).toContain(setting);
  expect(answer.text).not.toContain(SECRET_LINE);
}

/** Where the runs that are allowed write, inside the output root; nothing else may appear there. */
const ALLOWED_OUT = 'allowed';

/** Nothing reached the foreign host, and nothing was written into the output root but by the allowed runs. */
async function expectNothingLeft() {
  expect(foreign.requests).toEqual([]);
  expect(foreign.connections()).toBe(0);
  expect(Object.keys(await tree(dirs.out)).filter((path) => !path.startsWith(`${ALLOWED_OUT}/`))).toEqual([]);
}

const finished = (runId: string) =>
  waitFor<RunStatus>(
    `run ${runId} to end`,
    async () => {
      const s = await queue.get(runId);
      return s && (s.state === 'succeeded' || s.state === 'failed') ? s : undefined;
    },
    60_000,
  );

describe('the deployment policy against a caller with the API token', () => {
  it('refuses a private file sent to another host, as a run or as a dry run, before anything is read or sent', async () => {
    const privateBefore = await tree(dirs.private);
    const exfiltrate = { input: `file://${dirs.private}/customers.csv`, model: MODEL, out: dirs.out, options: { service: foreign.url, runId: 'probe-1' } };
    expectRefused(await call('/runs', { method: 'POST', body: exfiltrate }), 'SERVICE_URLS');
    expectRefused(await call('/runs', { method: 'POST', body: { ...exfiltrate, dryRun: true } }), 'SERVICE_URLS');
    // The allowed service, but the private file: refused for the input.
    const allowedService = { ...exfiltrate, options: { runId: 'probe-1' } };
    expectRefused(await call('/runs', { method: 'POST', body: allowedService }), 'INPUT_ROOTS');
    const dry = await call('/runs', { method: 'POST', body: { ...allowedService, dryRun: true } });
    expectRefused(dry, 'INPUT_ROOTS');
    expect(dry.text).not.toContain('hunter2');
    // An allowed input sent to another host: refused too, and the dry run (which reads here) reads nothing first.
    const toForeign = { input: join(dirs.in, 'rentals.csv'), model: MODEL, out: dirs.out, options: { service: `${foreign.url}/`, runId: 'probe-1' } };
    expectRefused(await call('/runs', { method: 'POST', body: { ...toForeign, dryRun: true } }), 'SERVICE_URLS');
    expect(await queue.get('probe-1')).toBeUndefined();
    expect(home.stats.describeRequests + home.stats.predictRequests).toBe(0);
    expect(await tree(dirs.private)).toEqual(privateBefore);
    await expectNothingLeft();
  });

  it('refuses an output outside OUTPUT_ROOTS, leaving the foreign folder byte for byte as it was', async () => {
    const before = await tree(dirs.foreign);
    const submission = { input: join(dirs.in, 'rentals.csv'), model: MODEL, out: dirs.foreign, options: { runId: 'r-foreign' } };
    expectRefused(await call('/runs', { method: 'POST', body: submission }), 'OUTPUT_ROOTS');
    expectRefused(await call('/runs', { method: 'POST', body: { ...submission, dryRun: true } }), 'OUTPUT_ROOTS');
    expect(await queue.get('r-foreign')).toBeUndefined();
    expect(await tree(dirs.foreign)).toEqual(before);
    await expectNothingLeft();
  });

  it('refuses `..` escapes and a symbolic link inside a root that leads outside it', async () => {
    const escapes = [
      { input: `${dirs.in}/../../private/customers.csv`, out: dirs.out, setting: 'INPUT_ROOTS' },
      { input: `file://${dirs.in}/../../private/`, out: dirs.out, setting: 'INPUT_ROOTS' },
      { input: join(dirs.in, 'rentals.csv'), out: `${dirs.out}/../../foreign/`, setting: 'OUTPUT_ROOTS' },
      { input: join(dirs.in, 'link.csv'), out: dirs.out, setting: 'symbolic link' },
    ];
    for (const { input, out, setting } of escapes) {
      const submission = { input, model: MODEL, out, options: { runId: 'escape-1' } };
      expectRefused(await call('/runs', { method: 'POST', body: submission }), setting);
      expectRefused(await call('/runs', { method: 'POST', body: { ...submission, dryRun: true } }), setting);
    }
    expect(await queue.get('escape-1')).toBeUndefined();
    await expectNothingLeft();
  });

  it('fails a run whose input folder holds a link out of the root, in the worker, before it scores or writes anything', async () => {
    const predictsBefore = home.stats.predictRequests;
    const posted = await call('/runs', { method: 'POST', body: { input: `${dirs.in}/mixed/`, model: MODEL, out: dirs.out, options: { runId: 'mixed-1' } } });
    // The folder itself is inside the root: only listing it shows the link.
    expect(posted.status).toBe(201);
    const status = await finished('mixed-1');
    expect(status.state).toBe('failed');
    expect(reasonOf(status)).toMatch(/mixed\/b\.csv leads outside INPUT_ROOTS or OUTPUT_ROOTS through a symbolic link.*\[E_NOT_ALLOWED\]/);
    expect(status.attempts).toBeLessThanOrEqual(1);
    expect(home.stats.predictRequests).toBe(predictsBefore);
    await expectNothingLeft();
  });

  it('serves no download from a run folder outside the roots, though its manifest lists the file', async () => {
    // A run folder made on this machine without a policy, holding a private file's rows.
    const scored = await runCli(['score', join(dirs.private, 'rentals.csv'), '--model', MODEL, '--out', dirs.elsewhere, '--run-id', 'exfil'], {
      MODEL_SERVICE_URL: home.url,
      MODEL_SERVICE_TOKEN: HOME_TOKEN,
    });
    expect(scored.code, scored.stderr).toBe(0);
    const privateRow = (await readFile(join(dirs.private, 'rentals.csv'), 'utf8')).split('\n')[1];
    expect(await readFile(join(dirs.elsewhere, 'exfil', 'predictions.csv'), 'utf8')).toContain(privateRow);
    // A producer on Redis names that folder as a run's; the worker refuses the job, but the run is on the queue.
    await queue.enqueue({ input: join(dirs.private, 'rentals.csv'), model: MODEL, out: dirs.elsewhere, options: { runId: 'exfil' } });
    const page = await call('/ui/runs/exfil/files/predictions.csv');
    expect(page.status).toBe(403);
    expect(page.text).toContain('E_NOT_ALLOWED');
    expect(page.text).not.toContain(privateRow);
    const detail = await call('/runs/exfil');
    expect(detail.status).toBe(200);
    expect(detail.json).not.toHaveProperty('manifest');
    expect(detail.text).not.toContain(privateRow);
    await expectNothingLeft();
  });
});

describe('the deployment policy against a producer writing to Redis', () => {
  it('fails run jobs naming a private file, another host or a folder outside the roots: nothing read, sent, written or deleted', async () => {
    const foreignBefore = await tree(dirs.foreign);
    const privateBefore = await tree(dirs.private);
    await queue.enqueue({ input: join(dirs.private, 'customers.csv'), model: MODEL, out: dirs.out, options: { service: foreign.url, runId: 'redis-1' } });
    await queue.enqueue({ input: join(dirs.private, 'rentals.csv'), model: MODEL, out: dirs.out, options: { runId: 'redis-2' } });
    await queue.enqueue({ input: join(dirs.in, 'rentals.csv'), model: MODEL, out: dirs.foreign, options: { runId: 'r-foreign' } });
    for (const [runId, setting] of [
      ['redis-1', 'SERVICE_URLS'],
      ['redis-2', 'INPUT_ROOTS'],
      ['r-foreign', 'OUTPUT_ROOTS'],
    ]) {
      const status = await finished(runId);
      expect(status.state, runId).toBe('failed');
      expect(status.failedReason, runId).toMatch(new RegExp(`${setting}.*\\[E_NOT_ALLOWED\\]`));
      // Not retriable: failed at the first attempt.
      expect(status.attempts, runId).toBeLessThanOrEqual(1);
    }

    // Raw BullMQ jobs, as any producer could write them: a run id that climbs out of its output
    // root, and a segment job naming a folder of another team's.
    const connection = { url: REDIS_URL };
    const runs = new Queue(RUNS_QUEUE, { connection, prefix });
    const segments = new Queue(SEGMENTS_QUEUE, { connection, prefix });
    try {
      await runs.add(
        'run',
        { runId: '../../foreign/r-foreign', request: { input: join(dirs.in, 'rentals.csv'), model: MODEL, out: dirs.out, options: {} } },
        { jobId: 'forged-run' },
      );
      await segments.add('segment', { runId: 'r-foreign', folder: join(dirs.foreign, 'r-foreign'), index: 0, generation: 1 }, { jobId: 'forged-segment' });
      // The run id breaks the run-id rule before any policy is asked; the segment's folder is outside OUTPUT_ROOTS.
      for (const [q, id, refusal] of [
        [runs, 'forged-run', /runId: use letters, digits.*\[E_USAGE\]/],
        [segments, 'forged-segment', /OUTPUT_ROOTS.*\[E_NOT_ALLOWED\]/],
      ] as const) {
        const failed = await waitFor(
          `${id} to fail`,
          // State first, then the job: a job read before its move to failed lacks failedReason.
          async () => ((await q.getJobState(id)) === 'failed' ? Job.fromId(q, id) : undefined),
          30_000,
        );
        expect(failed.failedReason).toMatch(refusal);
        expect(failed.attemptsMade).toBeLessThanOrEqual(1);
      }
    } finally {
      await runs.close();
      await segments.close();
    }
    expect(await tree(dirs.foreign)).toEqual(foreignBefore);
    expect(await tree(dirs.private)).toEqual(privateBefore);
    await expectNothingLeft();
  });

  it('refuses, at serve, to resume those runs, and to start a file drop whose pipeline reaches outside the roots', async () => {
    // The stored request is checked again: job data is any producer's.
    expectRefused(await call('/runs/redis-1/resume', { method: 'POST' }), 'SERVICE_URLS');
    expectRefused(await call('/runs/redis-2/resume', { method: 'POST' }), 'INPUT_ROOTS');
    expect((await queue.get('redis-2'))?.state).toBe('failed');
    const record = {
      eventVersion: '2.1',
      eventSource: 'aws:s3',
      awsRegion: 'us-east-1',
      eventTime: new Date().toISOString(),
      eventName: 'ObjectCreated:Put',
      s3: { s3SchemaVersion: '1.0', bucket: { name: 'inbox' }, object: { key: 'rentals/new.csv', size: 10, eTag: 'abc123', sequencer: '00' } },
    };
    expectRefused(await call('/events/s3', { method: 'POST', body: { Records: [record] } }), 'INPUT_ROOTS');
    expect(await queue.list({ pipeline: PIPELINE })).toEqual([]);
  });
});

describe('credentials', () => {
  it('go to MODEL_SERVICE_URL as MODEL_SERVICE_TOKEN, to another allowed service as its own SERVICE_TOKENS entry, and to an allowed service without one not at all', async () => {
    const input = join(dirs.in, 'rentals.csv');
    const out = join(dirs.out, ALLOWED_OUT);
    // Each simulator refuses any token but its own (401, failing the run at describe).
    await queue.enqueue({ input, model: MODEL, out, options: { runId: 'to-home' } });
    await queue.enqueue({ input, model: MODEL, out, options: { runId: 'to-second', service: second.url } });
    await queue.enqueue({ input, model: MODEL, out, options: { runId: 'to-open', service: open.url } });
    expect((await finished('to-home')).state).toBe('succeeded');
    expect((await finished('to-second')).state).toBe('succeeded');
    expect(second.stats.predictRows).toBeGreaterThanOrEqual(50);
    const toOpen = await finished('to-open');
    expect(toOpen.state).toBe('failed');
    expect(open.requests.length).toBeGreaterThan(0);
    for (const request of open.requests) expect(request.headers.authorization, request.url).toBeUndefined();
    // serve's dry runs choose tokens the same way.
    const dry = await call('/runs', { method: 'POST', body: { input, model: MODEL, out, options: { service: second.url }, dryRun: true } });
    expect([dry.status, dry.json?.rows]).toEqual([200, 50]);
    expect(foreign.requests).toEqual([]);
  });
});

describe('score', () => {
  it('reads and writes any path with nothing set, and keeps to the policy when one is set', async () => {
    const free = await runCli(['score', join(dirs.private, 'rentals.csv'), '--model', MODEL, '--out', join(base, 'anywhere'), '--run-id', 'free', '--json'], {
      MODEL_SERVICE_URL: home.url,
      MODEL_SERVICE_TOKEN: HOME_TOKEN,
    });
    expect(free.code, free.stderr).toBe(0);
    expect(JSON.parse(free.stdout)).toMatchObject({ state: 'succeeded', rowsScored: 40, folder: join(base, 'anywhere', 'free') });

    const bound = await runCli(['score', join(dirs.private, 'rentals.csv'), '--model', MODEL, '--out', dirs.out, '--run-id', 'bound'], env);
    expect(bound.code).toBe(2);
    expect(bound.stderr).toMatch(/is outside INPUT_ROOTS: .* \[E_NOT_ALLOWED\]/);
    expect(bound.stderr).not.toMatch(/resume:/);
    await expectNothingLeft();
  });
});

describe('serve without a policy', () => {
  it('refuses to listen beyond loopback unless --insecure, and then warns once that every path and service is allowed', async () => {
    const unset = { ...env, INPUT_ROOTS: '', OUTPUT_ROOTS: '', SERVICE_URLS: '', SERVICE_TOKENS: '' };
    const refused = await runCli(['serve', '--host', '0.0.0.0', '--port', String(await freePort())], unset);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/INPUT_ROOTS, OUTPUT_ROOTS, SERVICE_URLS are not set, .* or pass --insecure .*\[E_USAGE\]/);
    const insecure = await startServeProcess(unset, ['--host', '0.0.0.0', '--insecure']);
    try {
      const warningsOf = () =>
        insecure
          .stderr()
          .split('\n')
          .filter((line) => line.includes('not set: runs submitted here may'));
      const warnings = await waitFor('the warning to be logged', () => (warningsOf().length > 0 ? warningsOf() : undefined), 5_000);
      expect(warnings).toHaveLength(1);
      expect(JSON.parse(warnings[0])).toMatchObject({ level: 40, unset: ['INPUT_ROOTS', 'OUTPUT_ROOTS', 'SERVICE_URLS'] });
    } finally {
      expect(await insecure.stop()).toBe(0);
    }
  });
});
