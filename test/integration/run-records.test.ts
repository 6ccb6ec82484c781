import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { freePort, startRedis, useQueueFixture, waitFor } from '../helpers/queue.js';
import { tempDir, writeRentals, writeRentalsWithEngineErrors } from '../helpers/scoring.js';
import { useServeProcesses } from '../helpers/serve.js';

// The run folders under OUTPUT_ROOTS are the record of runs: serve lists and shows `score` runs,
// which the queue never had, and finished runs after Redis lost them.

const ROWS = 600;
const MODEL = 'mindsdb/home_rentals_model';
const NIGHTLY = 'nightly-rentals';

let tmp: Awaited<ReturnType<typeof tempDir>>;
let input: string;
let faulty: string;
let jobs: string;
beforeAll(async () => {
  tmp = await tempDir();
  input = join(tmp.dir, 'rentals.csv');
  faulty = join(tmp.dir, 'faulty.csv');
  await writeRentals(input, ROWS);
  // One row in a hundred the engine fails on: quarantined, past a --max-error-rate of 0.
  await writeRentalsWithEngineErrors(faulty, ROWS, (i) => i % 100 === 7);
  jobs = join(tmp.dir, 'jobs');
  await mkdir(jobs);
  await writeFile(
    join(jobs, 'nightly.yaml'),
    `name: ${NIGHTLY}\nmodel: ${MODEL}\ninput: ${join(tmp.dir, '{date}.csv')}\noutput: ${join(tmp.dir, 'nightly')}/\nschedule: { cron: "0 2 * * *", tz: UTC }\n`,
  );
});
afterAll(() => tmp.cleanup());

const f = useQueueFixture();
const serve = useServeProcesses();

interface Listed {
  runId: string;
  state: string;
  result?: { counts: unknown; error: { code: string } | null };
}

const getJson = async <T>(url: string) => {
  const res = await fetch(url);
  return { status: res.status, body: (await res.json()) as T };
};
const listRuns = async (url: string) => (await getJson<{ runs: Listed[] }>(url)).body.runs;
const getPage = async (url: string) => {
  const res = await fetch(url);
  return { status: res.status, body: (await res.text()).replace(/>\s+</g, '><') };
};

describe('the run folders as the record of runs', () => {
  it('GET /runs lists a score run under OUTPUT_ROOTS with its state and counts, and /ui/runs/:id shows it from its folder', async () => {
    await f.setup();
    const root = join(tmp.dir, 'direct-root');
    const s = await serve({ ...f.env(), OUTPUT_ROOTS: root }, ['--index-refresh', '200']);
    const out = join(root, 'team-a');
    const scored = await runCli(['score', input, '--model', MODEL, '--out', out, '--run-id', 'scored', '--segment-rows', '300'], {
      MODEL_SERVICE_URL: f.sim.url,
      OUTPUT_ROOTS: root,
    });
    expect([scored.code, scored.stderr]).toEqual([0, expect.any(String)]);

    const listed = await waitFor('GET /runs to list the score run', async () => (await listRuns(`${s.url}/runs`)).find((r) => r.runId === 'scored'), 10_000);
    expect(listed).toMatchObject({
      state: 'succeeded',
      folder: join(out, 'scored'),
      out,
      input,
      model: MODEL,
      attempts: 1,
      trigger: { kind: 'cli', command: 'score' },
      progress: { rowsDone: ROWS, rowsTotal: ROWS, rowsQuarantined: 0, segmentsDone: 2, segmentsTotal: 2 },
      result: { state: 'succeeded', attempt: 1, counts: { rowsIn: ROWS, rowsScored: ROWS, rowsQuarantined: 0 } },
    });
    expect(await listRuns(`${s.url}/runs?state=completed`)).toMatchObject([{ runId: 'scored' }]);
    expect(await listRuns(`${s.url}/runs?state=failed`)).toEqual([]);
    const detail = await getJson<{ state: string; manifest?: { state: string }; outputs?: string[] }>(`${s.url}/runs/scored`);
    expect([detail.status, detail.body.state, detail.body.manifest?.state]).toEqual([200, 'succeeded', 'succeeded']);
    expect(detail.body.outputs).toContain(join(out, 'scored', 'predictions.csv'));

    const page = await getPage(`${s.url}/ui/runs/scored`);
    expect(page.status).toBe(200);
    expect(page.body).toContain('<span class="badge badge-succeeded">succeeded</span>');
    expect(page.body).toMatch(/id="stat-rows"><div class="label">[^<]*<\/div><div class="value">600 <small>\/ 600<\/small>/);
    // What only Redis keeps is said to be unknown, not shown empty.
    expect(page.body).toContain('<section class="card" id="segments-unknown"><h2>Segments</h2><p class="muted">Not known: the queue has no record of this run');
    expect((await getPage(`${s.url}/ui/runs`)).body).toContain('href="/ui/runs/scored"');
  });

  it('after FLUSHALL on the queue’s Redis, GET /runs still lists every finished run with its state and counts; the schedule it lost is said so', async () => {
    const port = await freePort();
    const dir = join(tmp.dir, 'redis');
    await mkdir(dir);
    const redis = await startRedis(port, dir, { persist: false });
    try {
      await f.setup({}, `redis://127.0.0.1:${port}`);
      f.worker();
      const root = join(tmp.dir, 'queue-root');
      const env = { ...f.env(), OUTPUT_ROOTS: root, JOBS_DIR: jobs };
      expect((await runCli(['schedule', 'sync'], env)).code).toBe(0);
      const s = await serve(env, ['--index-refresh', '200']);
      const submit = async (runId: string, from: string, options: Record<string, unknown> = {}) => {
        const body = { input: from, model: MODEL, out: join(root, 'q'), options: { runId, segmentRows: 300, ...options } };
        const res = await fetch(`${s.url}/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
        expect(res.status).toBe(201);
      };
      await submit('good', input);
      expect((await f.finished('good')).state).toBe('succeeded');
      await submit('bad', faulty, { maxErrorRate: 0 });
      expect((await f.finished('bad')).state).toBe('failed');

      const shown = (runs: Listed[]) => runs.map((r) => ({ runId: r.runId, state: r.state, counts: r.result?.counts, error: r.result?.error?.code }));
      const before = shown(await listRuns(`${s.url}/runs`));
      expect(before.map((r) => [r.runId, r.state, r.error])).toEqual([
        ['bad', 'failed', 'E_ERROR_RATE'],
        ['good', 'succeeded', undefined],
      ]);
      expect(before[1].counts).toEqual({ rowsIn: ROWS, rowsScored: ROWS, rowsQuarantined: 0 });
      expect((before[0].counts as { rowsQuarantined: number }).rowsQuarantined).toBeGreaterThan(0);
      const pipelines = async () => (await getPage(`${s.url}/ui/pipelines`)).body;
      // Synced: the next 02:00 UTC, as the scheduler in Redis fires it.
      expect(await pipelines()).toMatch(
        new RegExp(`<tr data-pipeline="${NIGHTLY}">(?:(?!</tr>).)*<td><time [^>]+>\\d{4}-\\d\\d-\\d\\d 02:00</time></td>`, 's'),
      );

      const client = new Redis(port, '127.0.0.1');
      await client.flushall();
      client.disconnect();
      expect(await f.queue.get('good')).toBeUndefined();

      // The folders tell the same: every finished run, its state, counts and error.
      const after = await waitFor(
        'GET /runs to list both runs from their folders',
        async () => {
          const runs = shown(await listRuns(`${s.url}/runs`));
          return runs.length === 2 && runs;
        },
        10_000,
      );
      expect(after).toEqual(before);
      // Filtered (a former state name too) and paged, newest first.
      expect((await listRuns(`${s.url}/runs?state=failed`)).map((r) => r.runId)).toEqual(['bad']);
      expect((await listRuns(`${s.url}/runs?state=completed`)).map((r) => r.runId)).toEqual(['good']);
      expect((await listRuns(`${s.url}/runs?limit=1&offset=1`)).map((r) => r.runId)).toEqual(['good']);
      expect((await getJson<{ state: string }>(`${s.url}/runs/bad`)).body.state).toBe('failed');
      const page = await getPage(`${s.url}/ui/runs/good`);
      expect([page.status, page.body.includes('<span class="badge badge-succeeded">succeeded</span>')]).toEqual([200, true]);

      // The schedule Redis lost fires no more: its page says so rather than showing a next firing.
      expect(await pipelines()).toContain(
        '<span data-scheduler="missing">not scheduled in Redis: it does not fire until <code>batch-scorer schedule sync</code></span>',
      );
    } finally {
      redis.kill('SIGKILL');
    }
  });
});
