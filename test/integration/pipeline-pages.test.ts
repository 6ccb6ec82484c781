import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChartSpec } from '../../src/http/page-layout.js';
import type { Manifest } from '../../src/scoring/manifest.js';
import { parseLocation } from '../../src/storage/location.js';
import { createStorage } from '../../src/storage/storage.js';
import type { Storage } from '../../src/storage/storage-types.js';
import { useQueueFixture, reasonOf } from '../helpers/queue.js';
import { startS3Server, type S3Server } from '../helpers/s3-server.js';
import { rentalsWithSqft } from '../helpers/scoring.js';
import { useServeProcesses } from '../helpers/serve.js';

const TOKEN = 'tok-pipeline-pages-81c4e0';
const DROPS = 'rentals-drops';
const NIGHTLY = 'nightly-rentals';
const ROWS = 600;

let s3: S3Server;
let storage: Storage;
let jobs: string;
beforeAll(async () => {
  s3 = await startS3Server(['inbox', 'results']);
  storage = createStorage(s3.settings);
  jobs = await mkdtemp(join(tmpdir(), 'pipeline-pages-jobs-'));
  // A file-drop pipeline that fails a run whose PSI passes 0.25, and a schedule that is never synced (only shown).
  await writeFile(
    join(jobs, 'pipelines.yaml'),
    [
      `name: ${DROPS}\nmodel: mindsdb/home_rentals_model\ntrigger: { prefix: s3://inbox/drops/, suffix: .csv }\noutput: s3://results/drops/\noptions: { driftFail: 0.25 }\n`,
      `name: ${NIGHTLY}\nmodel: mindsdb/home_rentals_model\ninput: s3://inbox/nightly/{date}.csv\noutput: s3://results/nightly/\nschedule: { cron: "0 2 * * *", tz: Europe/Paris }\n`,
    ].join('---\n'),
  );
});
afterAll(async () => {
  storage.close();
  await s3.close();
  await rm(jobs, { recursive: true, force: true });
});

const f = useQueueFixture();
const serve = useServeProcesses();
const env = () => ({ ...f.env(), ...s3.env, JOBS_DIR: jobs, API_TOKEN: TOKEN });
const auth = { authorization: `Bearer ${TOKEN}` };

/** Rentals with each row's sqft passed through `sqft`, dropped at `s3://inbox/<key>`; answers its ETag as events send it. */
async function drop(key: string, sqft: (v: number) => number = (v) => v): Promise<string> {
  const loc = parseLocation(`s3://inbox/${key}`);
  await storage.write(loc, rentalsWithSqft(ROWS, sqft));
  return (await storage.stat(loc)).etag!.replace(/"/g, '');
}

/** POSTs an S3 event for `key` and answers the run it started. */
async function dropEvent(url: string, key: string, eTag: string): Promise<string> {
  const record = { eventName: 'ObjectCreated:Put', eventTime: new Date().toISOString(), s3: { bucket: { name: 'inbox' }, object: { key, size: 1, eTag } } };
  const res = await fetch(`${url}/events/s3`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...auth },
    body: JSON.stringify({ Records: [record] }),
  });
  const body = (await res.json()) as { runs: { runId: string; created: boolean }[] };
  expect([res.status, body.runs.length, body.runs[0]?.created]).toEqual([200, 1, true]);
  return body.runs[0].runId;
}

const manifestOf = async (runId: string) => JSON.parse(await storage.readText(parseLocation(`s3://results/drops/${runId}/manifest.json`))) as Manifest;
const charts = (page: string) => JSON.parse(/<script type="application\/json" id="run-charts">(.*?)<\/script>/s.exec(page)![1]) as ChartSpec[];
/** The cells of the table row marked `data-<attr>="<value>"`, as text (tags dropped, whitespace folded). */
const rowCells = (page: string, attr: string, value: string) => {
  const row = new RegExp(`<tr data-${attr}="${value}">(.*?)</tr>`, 's').exec(page)?.[1] ?? '';
  return [...row.matchAll(/<td[^>]*>(.*?)<\/td>/gs)].map((m) =>
    m[1]
      .replace(/<[^>]+>/g, ' ')
      .replace(/\s+/g, ' ')
      .trim(),
  );
};

describe('pipeline pages on a real serve, workers and S3', () => {
  it('list every pipeline with its kind, next firing and latest run; a pipeline page shows its runs and charts of their manifests', async () => {
    await f.setup();
    f.worker([], s3.env);
    const s = await serve(env());
    const get = async (path: string) => {
      const res = await fetch(`${s.url}${path}`, { headers: auth });
      return { status: res.status, body: (await res.text()).replace(/>\s+</g, '><') };
    };

    const base = await dropEvent(s.url, 'drops/day-1.csv', await drop('drops/day-1.csv'));
    expect((await f.finished(base)).state).toBe('succeeded');
    // Every sqft half again as large: drift past 0.25, and the run fails (E_DRIFT) with its outputs and manifest written.
    const shifted = await dropEvent(s.url, 'drops/day-2.csv', await drop('drops/day-2.csv', (v) => Math.round(v * 1.5)));
    const failed = await f.finished(shifted);
    expect([failed.state, reasonOf(failed)]).toEqual(['held', expect.stringMatching(/\[E_DRIFT\]$/)]);
    const manifests = [await manifestOf(base), await manifestOf(shifted)];
    expect(manifests[1].drift?.moved[0]).toBe('sqft');

    const list = await get('/ui/pipelines');
    expect(list.status).toBe(200);
    expect(list.body).toContain('<nav><a href="/ui/runs">Runs</a><a href="/ui/pipelines">Pipelines</a>');
    const drops = rowCells(list.body, 'pipeline', DROPS);
    expect(drops[0]).toBe(DROPS);
    expect(drops[1]).toBe('file drop s3://inbox/drops/ *.csv');
    expect(drops[2]).toBe('mindsdb/home_rentals_model');
    expect(drops[3]).toBe('s3://results/drops/');
    expect(drops[4]).toBe('on each new file');
    expect(drops[5]).toMatch(new RegExp(`^held ${shifted} \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d$`));
    expect(drops[6]).toBe('1 held 1 succeeded');
    expect(list.body).toContain(`<a href="/ui/pipelines/${DROPS}">${DROPS}</a>`);
    expect(list.body).toContain(`href="/ui/runs?state=held&amp;pipeline=${DROPS}"`);
    const nightly = rowCells(list.body, 'pipeline', NIGHTLY);
    expect(nightly[1]).toBe('schedule 0 2 * * * Europe/Paris');
    // Declared, never synced: Redis has no scheduler of it, so it fires at no time.
    expect(nightly[4]).toBe('not scheduled in Redis: it does not fire until batch-scorer schedule sync');
    expect(nightly[5]).toBe('none on the queue');

    const page = await get(`/ui/pipelines/${DROPS}`);
    expect(page.status).toBe(200);
    const baseRow = rowCells(page.body, 'run', base);
    const shiftedRow = rowCells(page.body, 'run', shifted);
    expect(baseRow.slice(0, 2)).toEqual([base, 'succeeded']);
    expect(baseRow[3]).toBe('600');
    expect(baseRow[6]).toBe('–');
    expect(shiftedRow[1]).toMatch(/^held E_DRIFT \S/);
    expect(shiftedRow[3]).toBe('600');
    expect(shiftedRow[6]).toBe(`fail ${manifests[1].drift!.moved.join(', ')}`);
    // Newest first.
    expect(page.body.indexOf(`data-run="${shifted}"`)).toBeLessThan(page.body.indexOf(`data-run="${base}"`));

    // The charts, oldest run first, hold exactly what the manifests say.
    const specs = charts(page.body);
    expect(specs.map((c) => c.canvas)).toEqual(['chart-quantiles-0', 'chart-psi', 'chart-rate']);
    const byCanvas = Object.fromEntries(specs.map((c) => [c.canvas, c]));
    const quantile = (m: Manifest, p: number) => m.profile!.targets[0].numeric!.quantiles.find((q) => q.p === p)!.value;
    expect(byCanvas['chart-quantiles-0'].labels).toHaveLength(2);
    expect(byCanvas['chart-quantiles-0'].series).toEqual([
      { label: 'p5', color: 'teal', values: manifests.map((m) => quantile(m, 0.05)) },
      { label: 'p50', color: 'violet', values: manifests.map((m) => quantile(m, 0.5)) },
      { label: 'p95', color: 'blue', values: manifests.map((m) => quantile(m, 0.95)) },
    ]);
    expect(quantile(manifests[1], 0.5)).not.toBe(quantile(manifests[0], 0.5));
    const maxPsi = Math.max(...manifests[1].drift!.columns.map((c) => c.psi));
    expect(maxPsi).toBeGreaterThan(0.25);
    expect(byCanvas['chart-psi'].series![0].values).toEqual([null, maxPsi]);
    expect(byCanvas['chart-psi'].notes![1]).toContain(`moved: ${manifests[1].drift!.moved.join(', ')}`);
    expect(byCanvas['chart-rate'].series![0].values).toEqual(manifests.map((m) => Math.round((m.counts!.rowsIn * 1000) / m.durationMs)));

    // The run list links a run's pipeline to its page.
    expect((await get('/ui/runs')).body).toContain(`event <a href="/ui/pipelines/${DROPS}">${DROPS}</a>`);
    // Unknown and malformed names, and a bad page, are refused.
    expect((await get('/ui/pipelines/no-such')).status).toBe(404);
    const hostile = await get(`/ui/pipelines/${encodeURIComponent('<b>x')}`);
    expect([hostile.status, hostile.body.includes('<b>x')]).toEqual([404, false]);
    expect((await get(`/ui/pipelines/${DROPS}?page=0`)).status).toBe(400);
    expect((await get(`/ui/pipelines/${NIGHTLY}`)).body).toContain('No runs of this pipeline on the queue.');
  });
});
