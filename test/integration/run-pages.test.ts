import { readFile, writeFile } from 'node:fs/promises';
import { Redis } from 'ioredis';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import type { ChartSpec } from '../../src/http/page-layout.js';
import type { Manifest } from '../../src/scoring/manifest.js';
import type { Comparison } from '../../src/scoring/model-comparison.js';
import type { RunTrigger } from '../../src/scoring/run-trigger.js';
import { escapeHtml } from '../../src/http/html.js';
import { judgeRun } from '../../src/scoring/judge-run.js';
import { runFiles } from '../../src/scoring/prepared-run.js';
import { createStorage } from '../../src/storage/storage.js';
import { useQueueFixture, waitFor, reasonOf } from '../helpers/queue.js';
import { HOSTILE, mountRunPages, PAGE_RUN, writePageInput } from '../helpers/run-pages.js';
import { parseCsv, tempDir, writeRentals, writeShiftedRentals } from '../helpers/scoring.js';

let tmp: Awaited<ReturnType<typeof tempDir>>;
let input: string;
beforeAll(async () => {
  tmp = await tempDir();
  input = join(tmp.dir, 'rentals.csv');
  await writePageInput(input);
});
afterAll(() => tmp.cleanup());
afterAll(() => storage.close());

const f = useQueueFixture();
const storage = createStorage();
let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

const charts = (page: string) => JSON.parse(/<script type="application\/json" id="run-charts">(.*?)<\/script>/s.exec(page)![1]) as ChartSpec[];
const cells = (page: string) => [...page.matchAll(/<li class="cell [^"]*" data-state="(\w+)" title="([^"]*)"/g)].map((m) => ({ state: m[1], title: m[2] }));
const stat = (page: string, id: string) => new RegExp(`id="stat-${id}"><div class="label">[^<]*</div><div class="value">(.*?)</div>`).exec(page)?.[1];

describe('run pages on a real queue run', () => {
  it('show a run live and once finished: progress, segment cells with their workers, throughput, quarantined rows, outputs', async () => {
    // Slow answers, so the run lasts some seconds and its page can be seen while it runs.
    await f.setup({ latencyMs: 250 });
    const workers = [f.worker(), f.worker()];
    app = await mountRunPages(f, storage);
    const get = async (url: string) => {
      const res = await app!.inject({ method: 'GET', url });
      // Without the whitespace between tags (the templates are formatted for reading).
      return res.headers['content-type']?.toString().startsWith('text/html') ? Object.assign(res, { body: res.body.replace(/>\s+</g, '><') }) : res;
    };
    const out = join(tmp.dir, 'out');
    const { runId } = await f.queue.enqueue({
      input,
      model: 'mindsdb/home_rentals_model',
      out,
      options: { runId: 'pages', segmentRows: PAGE_RUN.segmentRows, batchSize: PAGE_RUN.batchSize },
    });

    // While it runs: the page refreshes itself, and a segment being scored names its worker.
    const workerIds = () => workers.map((w) => `:${w.child.pid}`);
    const live = await waitFor(
      'a segment shown active with its worker',
      async () => {
        const page = (await get(`/ui/runs/${runId}`)).body;
        return cells(page).some((c) => c.state === 'active' && workerIds().some((id) => c.title.includes(id))) ? page : undefined;
      },
      30_000,
    );
    expect(live).toContain('<meta http-equiv="refresh" content="5"');
    expect(live).toContain('<span class="badge badge-running">running</span>');
    expect(cells(live)).toHaveLength(6);
    // Prepared, not yet assembled: the model section shows the version the run is pinned to, from its run.json.
    expect(live).not.toContain('manifest.json');
    expect(live).toMatch(/<dt>Pinned version<\/dt><dd>\d+<\/dd>/);

    const status = await f.finished(runId);
    expect(status.state).toBe('succeeded');

    const res = await get(`/ui/runs/${runId}`);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-security-policy']).toMatch(/^default-src 'self'/);
    const page = res.body;
    expect(page).not.toContain('http-equiv="refresh"');
    expect(page).toContain('<span class="badge badge-succeeded">succeeded</span>');
    expect(stat(page, 'rows')).toBe('6,000 <small>/ 6,000</small>');
    expect(stat(page, 'quarantined')).toBe(String(PAGE_RUN.quarantined));
    expect(stat(page, 'segments')).toBe('6 <small>/ 6</small>');
    // Settled, the page shows the run's record's rate, as status does.
    expect(Number(stat(page, 'rate')!.replace(/,/g, ''))).toBe(status.result!.rowsPerSecond);
    expect(cells(page).map((c) => c.state)).toEqual(Array(6).fill('done'));

    // The throughput chart: samples from the start to the last row, the rates adding up to the rows.
    const throughput = charts(page).find((c) => c.canvas === 'chart-throughput')!;
    expect(throughput.points!.length).toBeGreaterThanOrEqual(3);
    expect(throughput.points!.every((p) => p.y >= 0)).toBe(true);
    const rows = throughput.points!.reduce((sum, p, i, all) => sum + p.y * (p.x - (i > 0 ? all[i - 1].x : 0)), 0);
    expect(Math.abs(rows - PAGE_RUN.rows) / PAGE_RUN.rows).toBeLessThan(0.1);

    // Quarantined rows with their reasons, markup in them shown as text.
    expect(page).toContain(`The first ${PAGE_RUN.quarantined} of ${PAGE_RUN.quarantined}, from errors.jsonl.`);
    expect(page).toContain('<td class="num">908</td><td>500 MLEngineException</td>');
    expect(page).not.toContain(HOSTILE);
    expect(page).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');

    // The model, pinned, with its describe snapshot; the outputs, downloadable.
    expect(page).toMatch(/<dt>Pinned version<\/dt><dd>\d+<\/dd>/);
    expect(page).toContain('<summary>Describe snapshot, taken');
    expect(page).toContain(`href="/ui/runs/pages/files/predictions.csv"`);
    const file = await get('/ui/runs/pages/files/predictions.csv');
    expect(file.statusCode).toBe(200);
    expect(file.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(file.body).toBe(await readFile(join(out, 'pages', 'predictions.csv'), 'utf8'));
    expect((await get('/ui/runs/pages/files/manifest.json')).statusCode).toBe(404);

    // Every histogram bar of the page is the recount of predictions.csv in its bin (the manifest's edges: the labels are rounded).
    const manifest = JSON.parse(await readFile(join(out, 'pages', 'manifest.json'), 'utf8')) as Manifest;
    const [price] = manifest.profile!.targets;
    const scored = parseCsv(file.body);
    const column = (name: string) =>
      scored
        .map((r) => r[name])
        .filter((v) => v !== '')
        .map(Number);
    for (const [canvas, summary, values] of [
      ['chart-prediction-0', price.numeric!, column('rental_price')],
      ['chart-confidence-0', price.confidence!, column('rental_price_confidence')],
    ] as const) {
      const last = summary.histogram.length - 1;
      const recount = summary.histogram.map((bin, i) => values.filter((v) => v >= bin.lo && (v < bin.hi || (i === last && v === bin.hi))).length);
      expect(charts(page).find((c) => c.canvas === canvas)!.values, canvas).toEqual(recount);
    }
    expect((await get('/ui/runs/pages/files/..%2Fpages%2Fmanifest.json')).statusCode).toBe(404);

    // The list, filtered by state; an unknown run and an unknown state.
    const list = (await get('/ui/runs')).body;
    expect(list).toContain('<a href="/ui/runs/pages">pages</a>');
    expect(list).toContain('<span class="badge badge-succeeded">succeeded</span>');
    expect((await get('/ui/runs?state=completed')).body).toContain('<a href="/ui/runs/pages">pages</a>');
    expect((await get('/ui/runs?state=failed')).body).toContain('No failed runs on the queue.');
    expect((await get('/ui/runs?state=nope')).statusCode).toBe(400);
    const unknown = await get('/ui/runs/nope');
    expect(unknown.statusCode).toBe(404);
    expect(unknown.body).toContain('No run nope is on the queue');

    // Once its progress has expired, a run that succeeded still shows its segments done.
    const redis = new Redis(f.redisUrl);
    try {
      expect(await redis.del(`${f.prefix}:progress:pages`)).toBe(1);
    } finally {
      await redis.quit();
    }
    expect(cells((await get(`/ui/runs/${runId}`)).body).map((c) => c.state)).toEqual(Array(6).fill('done'));

    // Counts are shown exact, whatever their size; only measures are rounded (a manifest of a 199,998-row run).
    const manifestPath = join(out, 'pages', 'manifest.json');
    const stored = JSON.parse(await readFile(manifestPath, 'utf8')) as Manifest;
    const target = stored.profile!.targets[0];
    Object.assign(target, { count: 199_998, nulls: 12_345 });
    target.numeric!.count = 199_998;
    target.numeric!.mean = 1234.5678;
    await writeFile(manifestPath, JSON.stringify(stored));
    const big = (await get(`/ui/runs/${runId}`)).body;
    expect(big).toContain('<th>count</th><td class="num">199,998</td>');
    expect(big).toContain('<th>mean</th><td class="num">1,235</td>');
    expect(big).toMatch(/199,998 rows · 12,345\s+null/);

    // Assets: Chart.js and the page script, long cached.
    const chart = await get(/src="(\/ui\/assets\/chart\.js\?v=\w+)"/.exec(page)![1]);
    expect(chart.statusCode).toBe(200);
    expect(chart.headers['cache-control']).toContain('immutable');
    expect(chart.body).toContain('Chart');
    expect((await get(/src="(\/ui\/assets\/run-page\.js\?v=\w+)"/.exec(page)![1])).body).toContain('run-charts');
  });

  it('list what started each run and filter by pipeline beside the state; a run page shows its trigger in full', async () => {
    await f.setup();
    app = await mountRunPages(f, storage);
    const get = async (url: string) => {
      const res = await app!.inject({ method: 'GET', url });
      return { status: res.statusCode, body: res.body.replace(/>\s+</g, '><'), csp: res.headers['content-security-policy'] };
    };
    const schedule: RunTrigger = { kind: 'schedule', pipeline: 'nightly-rentals', fireTime: '2026-11-23T01:00:00.000Z', cron: '0 2 * * *', tz: 'Europe/Paris' };
    const event: RunTrigger = {
      kind: 'event',
      pipeline: 'rentals-inbox',
      object: { location: `s3://inbox/rentals/${HOSTILE}.csv`, etag: '9b2cf535f27731c974343645a3985328', versionId: 'v-42', size: 100 },
      eventName: 's3:ObjectCreated:Put',
      eventTime: '2026-11-23T09:30:00.000Z',
    };
    const enqueue = (runId: string, trigger: RunTrigger) =>
      f.queue.enqueue({ input, model: 'mindsdb/home_rentals_model', out: join(tmp.dir, 'by'), options: { runId }, trigger }, { ifEnded: 'keep' });
    await enqueue('by-schedule', schedule);
    await enqueue('by-event', event);
    await enqueue('by-api', { kind: 'api' });
    const runLinks = (page: string) => [...page.matchAll(/<td><a href="\/ui\/runs\/([\w-]+)">/g)].map((m) => m[1]).sort();

    const list = await get('/ui/runs');
    expect(list.status).toBe(200);
    expect(list.body).toContain('<th>Started by</th>');
    expect(list.body).toContain('>schedule <a href="/ui/pipelines/nightly-rentals">nightly-rentals</a></span>');
    expect(list.body).toContain('>event <a href="/ui/pipelines/rentals-inbox">rentals-inbox</a></span>');
    expect(list.body).toContain('title="api (POST /runs)">api</span>');
    expect(runLinks(list.body)).toEqual(['by-api', 'by-event', 'by-schedule']);

    const nightly = await get('/ui/runs?pipeline=nightly-rentals');
    expect(runLinks(nightly.body)).toEqual(['by-schedule']);
    expect(nightly.body).toContain('<a class="pill" href="/ui/runs?state=queued&amp;pipeline=nightly-rentals">queued</a>');
    expect(runLinks((await get('/ui/runs?pipeline=rentals-inbox&state=waiting')).body)).toEqual(['by-event']);
    expect((await get('/ui/runs?state=completed&pipeline=rentals-inbox')).body).toContain('No succeeded runs of pipeline rentals-inbox on the queue.');
    const bad = await get(`/ui/runs?pipeline=${encodeURIComponent('<b>x')}`);
    expect([bad.status, bad.csp]).toEqual([400, expect.stringMatching(/^default-src 'self'/)]);
    expect(bad.body).toContain('pipeline: use letters, digits');

    const page = await get('/ui/runs/by-event');
    expect(page.status).toBe(200);
    const facts = Object.fromEntries([...page.body.matchAll(/<dd id="trigger-([\w-]+)">(.*?)<\/dd>/g)].map((m) => [m[1], m[2]]));
    expect(facts).toMatchObject({
      kind: 'event <span class="muted">(an S3 event notification)</span>',
      pipeline: '<a href="/ui/runs?pipeline=rentals-inbox">rentals-inbox</a>',
      event: 's3:ObjectCreated:Put',
      location: '<code class="wrap">s3://inbox/rentals/&lt;script&gt;alert(1)&lt;/script&gt;.csv</code>',
      etag: '<code>9b2cf535f27731c974343645a3985328</code>',
      version: '<code>v-42</code>',
    });
    expect(page.body).not.toContain(HOSTILE);
    const scheduled = await get('/ui/runs/by-schedule');
    expect(scheduled.body).toContain('<dd id="trigger-fire-time"><time datetime="2026-11-23T01:00:00.000Z">2026-11-23 01:00:00 UTC</time></dd>');
  });

  it("show a drifted run's drift from its baseline, and who accepted it", async () => {
    await f.setup();
    f.worker();
    app = await mountRunPages(f, storage);
    const get = async (url: string) => (await app!.inject({ method: 'GET', url })).body.replace(/>\s+</g, '><');
    const out = join(tmp.dir, 'drift');
    const [base, shifted] = [join(tmp.dir, 'base.csv'), join(tmp.dir, 'shifted.csv')];
    await writeRentals(base, 500);
    await writeShiftedRentals(shifted, 500, 3);
    const submit = (runId: string, from: string, options: Record<string, unknown> = {}) =>
      f.queue.enqueue({ input: from, model: 'mindsdb/home_rentals_model', out, options: { runId, ...options } });
    await submit('base', base);
    expect((await f.finished('base')).state).toBe('succeeded');
    await submit('moved', shifted, { baselineRun: 'base', driftFail: 0.25 });
    expect(reasonOf(await f.finished('moved'))).toMatch(/\[E_DRIFT\]$/);

    const section = (page: string) => /<section class="card" id="drift">(.*?)<\/section>/s.exec(page)?.[1] ?? '';
    const drifted = section(await get('/ui/runs/moved'));
    expect(drifted).toContain('<h2>Drift <span class="badge badge-drift-fail">fail</span></h2>');
    expect(drifted).toContain('<a href="/ui/runs/base">base</a>');
    expect(drifted).toMatch(/<tr class="moved"><td><code>sqft<\/code><\/td><td>input<\/td><td class="num">\d+\.\d{3}<\/td>/);
    expect(drifted).toContain('<td class="num">500 / 500</td>');
    expect(drifted).not.toContain('id="drift-accepted"');
    expect(section(await get('/ui/runs/base'))).toBe('');

    await judgeRun(storage, runFiles.folder(out, 'moved'), { verdict: 'accept', by: 'reviewer' });
    expect(section(await get('/ui/runs/moved'))).toMatch(/<dd id="drift-accepted">by reviewer, <time datetime="[^"]+">.*?\(it was held on E_DRIFT\)/);
  });

  it("show a shadow-scored run's comparison: 95% agreement, the differences charted, the 20 rows that differ most side by side", async () => {
    await f.setup();
    f.worker();
    app = await mountRunPages(f, storage);
    const get = async (url: string) => {
      const res = await app!.inject({ method: 'GET', url });
      return { status: res.statusCode, type: res.headers['content-type'], body: res.body.replace(/>\s+</g, '><') };
    };
    const ROWS = 2_000;
    const rentals = join(tmp.dir, 'compared.csv');
    await writeRentals(rentals, ROWS);
    const out = join(tmp.dir, 'compared-out');
    await f.queue.enqueue({
      input: rentals,
      model: 'mindsdb/home_rentals_model',
      out,
      options: { runId: 'compared', compareModel: 'mindsdb/home_rentals_challenger', segmentRows: 500, batchSize: 100 },
    });
    const done = await f.finished('compared');
    expect([done.state, done.failedReason]).toEqual(['succeeded', undefined]);
    const folder = join(out, 'compared');
    const file = await readFile(join(folder, 'comparison.json'), 'utf8');
    const comparison = JSON.parse(file) as Comparison;

    const res = await get('/ui/runs/compared');
    expect(res.status).toBe(200);
    const section = /<section class="card" id="comparison">(.*?)<\/section>/s.exec(res.body)?.[1] ?? '';
    expect(section).toContain('<h2>Comparison with mindsdb/home_rentals_challenger.1</h2>');
    // The challenger answers 10% higher on every 20th row.
    expect(section).toContain('<dd id="agreement-0">95.00% (1,900 of 2,000)</dd>');
    expect(section).toMatch(/<dd id="comparison-unanswered">0 </);
    const rows = [
      ...(/<table class="comparison-rows" id="comparison-rows-0">.*?<tbody>(.*?)<\/tbody>/s.exec(section)?.[1] ?? '').matchAll(
        /<tr><td class="num">([\d,]+)<\/td>/g,
      ),
    ].map((m) => Number(m[1].replace(/,/g, '')));
    expect(rows).toEqual(comparison.targets[0].rows.map((r) => r.row));
    expect(rows).toHaveLength(20);
    expect(rows.every((row) => row % 20 === 0)).toBe(true);
    // The differences' histogram: every compared row in it, from the run's own summary.
    const chart = charts(res.body).find((c) => c.canvas === 'chart-difference-0')!;
    expect(chart.kind).toBe('bars');
    expect(chart.values!.reduce((a, b) => a + b, 0)).toBe(ROWS);
    expect(chart.values).toEqual(comparison.targets[0].difference!.histogram.map((b) => b.count));

    // The file, downloadable as the manifest names it, byte for byte.
    expect(section).toContain('<a href="/ui/runs/compared/files/comparison.json" download>comparison.json</a>');
    const download = await get('/ui/runs/compared/files/comparison.json');
    expect([download.status, download.type]).toEqual([200, 'application/json; charset=utf-8']);
    expect(download.body).toBe(file);

    // A comparison.json larger than any run writes is not read: the summary stays, the rows are not shown.
    await writeFile(join(folder, 'comparison.json'), file.replace(/\n}\s*$/, `${' '.repeat(1 << 20)}\n}\n`));
    const large = await get('/ui/runs/compared');
    expect(large.body).toContain('<dd id="agreement-0">95.00% (1,900 of 2,000)</dd>');
    expect(large.body).toMatch(/<p class="notice">Not shown: comparison.json takes [\d,]+ bytes, more than the 1 MiB a page reads \(a run writes far less\)/);
    expect(large.body).not.toContain('comparison-rows-0');

    // Without a comparison in the manifest, the file is not served, whatever the folder holds.
    const manifestPath = join(folder, 'manifest.json');
    const { comparison: _summary, ...manifest } = JSON.parse(await readFile(manifestPath, 'utf8')) as Manifest;
    await writeFile(manifestPath, JSON.stringify(manifest));
    expect((await get('/ui/runs/compared/files/comparison.json')).status).toBe(404);
    expect((await get('/ui/runs/compared')).body).not.toContain('id="comparison"');
  });

  it('show a run that failed before planning as such: its code and a bounded excerpt in the list, its reason on its page', async () => {
    await f.setup();
    f.worker();
    app = await mountRunPages(f, storage);
    const get = async (url: string) => (await app!.inject({ method: 'GET', url })).body.replace(/>\s+</g, '><');
    // Unknown to the service: the run fails at describe, before its input is planned, with a reason longer than the list quotes.
    const model = `mindsdb/no_such_model_${'x'.repeat(300)}`;
    await f.queue.enqueue({ input, model, out: join(tmp.dir, 'failed'), options: { runId: 'unplanned' } });
    const status = await f.finished('unplanned');
    expect(status.state).toBe('failed');
    expect(reasonOf(status)).toMatch(/\[E_MODEL_NOT_FOUND\]$/);

    const page = await get('/ui/runs/unplanned');
    expect(page).not.toContain('Not planned yet');
    const failure = /<p class="notice error" id="failure">(.*?)<\/p>/s.exec(page)?.[1].trim();
    expect(failure).toBe(`The run failed before its input was planned: ${escapeHtml(reasonOf(status)!)}`);

    const list = await get('/ui/runs');
    const reason = /<div class="reason"><code>(E_\w+)<\/code> (.*?)<\/div>/.exec(list);
    expect(reason?.[1]).toBe('E_MODEL_NOT_FOUND');
    expect(Buffer.byteLength(reason![2].replace(/&#39;/g, "'"))).toBeLessThanOrEqual(160);
    expect(reason![2]).toMatch(/^describe http:.*\.\.\. \d+ more bytes$/);
    expect(list).not.toContain(escapeHtml(status.result!.error!.message));
    // The model's name, cut in the middle for its cell, whole in its title.
    expect(list).toContain(`<span class="cut" title="${model}">mindsdb/no_su…xxxxxxxxxxxxxx`);
  });

  it('page the list, fifty runs at a time, newest first, keeping the filters; bad pages are refused', async () => {
    await f.setup();
    app = await mountRunPages(f, storage);
    const get = async (url: string) => {
      const res = await app!.inject({ method: 'GET', url });
      return { status: res.statusCode, body: res.body.replace(/>\s+</g, '><') };
    };
    const ids = Array.from({ length: 53 }, (_, i) => `paged-${String(i).padStart(2, '0')}`);
    for (const runId of ids) {
      const trigger: RunTrigger = { kind: 'schedule', pipeline: 'paged', fireTime: '2026-11-23T01:00:00.000Z', cron: '0 2 * * *', tz: 'UTC' };
      await f.queue.enqueue({ input, model: 'mindsdb/home_rentals_model', out: join(tmp.dir, 'paged'), options: { runId }, trigger });
    }
    await f.queue.enqueue({ input, model: 'mindsdb/home_rentals_model', out: join(tmp.dir, 'paged'), options: { runId: 'unpiped' } });
    const runLinks = (page: string) => [...page.matchAll(/<td><a href="\/ui\/runs\/([\w-]+)">/g)].map((m) => m[1]);

    const first = await get('/ui/runs');
    expect(runLinks(first.body)).toHaveLength(50);
    expect(first.body).toContain('<a class="pill" rel="next" href="/ui/runs?page=2">older →</a>');
    expect(first.body).not.toContain('rel="prev"');
    const second = await get('/ui/runs?page=2');
    expect(runLinks(second.body)).toHaveLength(4);
    expect(second.body).toContain('<a class="pill" rel="prev" href="/ui/runs">← newer</a>');
    expect(second.body).not.toContain('rel="next"');
    expect([...runLinks(first.body), ...runLinks(second.body)].sort()).toEqual([...ids, 'unpiped'].sort());
    expect((await get('/ui/runs?page=3')).body).toContain('No  runs on page 3.');

    // The filters are kept from page to page; a pipeline's runs are paged from its index.
    const waiting = await get('/ui/runs?state=waiting&pipeline=paged');
    expect(runLinks(waiting.body)).toHaveLength(50);
    expect(waiting.body).toContain('rel="next" href="/ui/runs?state=queued&amp;pipeline=paged&amp;page=2"');
    const older = await get('/ui/runs?state=waiting&pipeline=paged&page=2');
    expect(older.body).toContain('rel="prev" href="/ui/runs?state=queued&amp;pipeline=paged"');
    expect([...runLinks(waiting.body), ...runLinks(older.body)].sort()).toEqual(ids);
    expect(runLinks((await get('/ui/runs?pipeline=paged&page=2')).body)).toHaveLength(3);

    for (const bad of ['0', '-1', 'abc', '1.5', '2e1', '01', '101', '99999999999999999999']) {
      const res = await get(`/ui/runs?page=${bad}`);
      expect([bad, res.status]).toEqual([bad, 400]);
      expect(res.body).toContain('page must be a whole number from 1 to 100.');
    }
    expect((await get('/ui/runs?page=1&page=2')).status).toBe(400);
    expect((await get('/ui/runs?page=100')).status).toBe(200);
  });
});
