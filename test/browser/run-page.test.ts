import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useQueueFixture } from '../helpers/queue.js';
import { PAGE_RUN, writePageInput } from '../helpers/run-pages.js';
import { useServeProcesses } from '../helpers/serve.js';
import { CHROMIUM, noteMissing } from '../helpers/tools.js';
import { rentalsText, rentalsWithSqft, tempDir } from '../helpers/scoring.js';
import type { Manifest } from '../../src/scoring/manifest.js';
import type { Comparison } from '../../src/scoring/model-comparison.js';
import { parseLocation } from '../../src/storage/location.js';
import { createStorage } from '../../src/storage/storage.js';
import { versionTag } from '../../src/storage/version-tag.js';

const SCREENSHOTS = join(import.meta.dirname, '..', '..', 'test-output', 'screenshots');
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
  '--disable-quic',
  '--disable-sync',
];

let tmp: Awaited<ReturnType<typeof tempDir>>;
let browser: Browser;
beforeAll(async () => {
  tmp = await tempDir();
  if (!CHROMIUM) return;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  await mkdir(SCREENSHOTS, { recursive: true });
});
afterAll(async () => {
  await browser?.close();
  await tmp?.cleanup();
});

const f = useQueueFixture();
const serve = useServeProcesses();
const USER = 'viewer';
const PASSWORD = 'browser-test-password';

/** Reports each Content-Security-Policy violation as a console error (Chromium logs most, but not all, by itself). */
const REPORT_VIOLATIONS = `document.addEventListener('securitypolicyviolation', (e) =>
  console.error('CSP violation: ' + e.violatedDirective + ' ' + (e.blockedURI || 'inline') + ' at ' + e.sourceFile + ':' + e.lineNumber));`;

/** A new page of `context` whose script errors, policy violations and failed requests are collected in `problems`. */
async function watchedPage(context: BrowserContext): Promise<{ page: Page; problems: string[] }> {
  await context.addInitScript(REPORT_VIOLATIONS);
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (m) => void (m.type() === 'error' && problems.push(m.text())));
  page.on('pageerror', (err) => problems.push(err.message));
  page.on('response', (r) => void (r.status() >= 400 && problems.push(`${r.status()} ${r.url()}`)));
  return { page, problems };
}

/**
 * Browser-side: how many data points Chart.js holds for the chart on canvas `id`, and how many of
 * its pixels are neither transparent nor near white. (Source text: the tests' TypeScript knows no DOM.)
 */
const chartDrawn = (id: string) => `(() => {
  const canvas = document.getElementById(${JSON.stringify(id)});
  const chart = window.Chart.getChart(canvas);
  const pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
  let coloured = 0;
  for (let i = 0; i < pixels.length; i += 4) if (pixels[i + 3] > 0 && !(pixels[i] > 240 && pixels[i + 1] > 240 && pixels[i + 2] > 240)) coloured += 1;
  return { points: chart ? chart.data.datasets[0].data.length : 0, coloured };
})()`;

/**
 * Browser-side, on the run list: the texts of its one-line parts (model, input, times) with how
 * many lines each takes, the width of each failure reason, and how far the table reaches past
 * the page's content box (0 when it fits).
 */
const RUN_LIST_LAYOUT = `(() => {
  const table = document.querySelector('table.runs');
  const main = document.querySelector('main');
  const contentRight = main.getBoundingClientRect().right - parseFloat(getComputedStyle(main).paddingRight);
  return {
    oneLine: [...table.querySelectorAll('.cut, time')].map((e) => ({ text: e.textContent, lines: e.getClientRects().length })),
    reasons: [...table.querySelectorAll('.reason')].map((e) => e.getBoundingClientRect().width),
    overflow: Math.max(0, table.getBoundingClientRect().right - contentRight),
  };
})()`;

/**
 * Browser-side, on a run page with a comparison: how many lines each input of the side-by-side
 * table shows, and how far that table reaches past the page's content box (0 when it fits).
 */
const COMPARISON_LAYOUT = `(() => {
  const table = document.getElementById('comparison-rows-0');
  const main = document.querySelector('main');
  const contentRight = main.getBoundingClientRect().right - parseFloat(getComputedStyle(main).paddingRight);
  return {
    inputLines: [...table.querySelectorAll('td.input code')].map((e) => Math.round(e.getBoundingClientRect().height / parseFloat(getComputedStyle(e).lineHeight))),
    overflow: Math.max(0, table.getBoundingClientRect().right - contentRight),
  };
})()`;

if (!CHROMIUM) noteMissing('the browser test of the run pages', 'chromium');

describe.skipIf(!CHROMIUM)('the run page in a browser', () => {
  it('shows a finished run: progress, its segment grid and the prediction charts drawn, and the queue dashboard, with no script or policy error and nothing asked of another host', async () => {
    await f.setup({ latencyMs: 40, latencyJitterMs: 40 });
    f.worker();
    f.worker();
    const out = join(tmp.dir, 'out');
    const input = join(tmp.dir, 'rentals.csv');
    await writePageInput(input);
    const { runId } = await f.queue.enqueue({
      input,
      model: 'mindsdb/home_rentals_model',
      out,
      options: { runId: 'browser', segmentRows: PAGE_RUN.segmentRows, batchSize: PAGE_RUN.batchSize },
    });
    expect((await f.finished(runId)).state).toBe('succeeded');
    // A run that fails before planning, on an input of a long path: its row too must read well at 1280 px.
    const missing = join(tmp.dir, 'incoming', 'a-rather-long-folder-name-for-the-nightly-export', 'rentals-2026-11-25-full-extract.csv');
    await f.queue.enqueue({ input: missing, model: 'mindsdb/home_rentals_model', out, options: { runId: 'browser-missing' } });
    expect((await f.finished('browser-missing')).state).toBe('failed');

    const s = await serve({ ...f.env(), API_TOKEN: 'browser-test-token', DASHBOARD_USER: USER, DASHBOARD_PASSWORD: PASSWORD });
    const base = s.url;
    // Without credentials the dashboard is refused, and the browser is asked to log in (Chromium itself
    // turns that answer into a navigation error, so the browser's own request API looks at it).
    const anonymous = await browser.newContext();
    try {
      const refused = await anonymous.request.get(`${base}/ui/runs/${runId}`, { maxRedirects: 0 });
      expect(refused.status()).toBe(401);
      expect(refused.headers()['www-authenticate']).toMatch(/^Basic /);
    } finally {
      await anonymous.close();
    }
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, httpCredentials: { username: USER, password: PASSWORD } });
    try {
      // Every request of every page (scripts, styles, fonts, images, workers, API calls), to check that none leaves the server.
      const requested: string[] = [];
      context.on('request', (r) => void requested.push(r.url()));
      const { page, problems } = await watchedPage(context);

      // The queue dashboard (bull-board): its queues, the run's job, and its menu's way to the run pages.
      await page.goto(`${base}/ui/queues/`);
      // In the page's main part: the sidebar lists the queues too, once it has loaded them.
      await page.getByRole('main').getByRole('link', { name: 'segments' }).waitFor();
      await page.goto(`${base}/ui/queues/queue/runs/${runId}`);
      await page.getByText(runId).first().waitFor();
      await page.screenshot({ path: join(SCREENSHOTS, 'queue-dashboard.png'), fullPage: true });
      await page.locator('button[aria-haspopup="menu"]').click();
      await page.getByRole('menuitem', { name: 'Run pages' }).click();
      await page.waitForURL(`${base}/ui/runs`);

      await expect(page.locator('table.runs a', { hasText: runId }).count()).resolves.toBe(2);
      await page.screenshot({ path: join(SCREENSHOTS, 'run-list.png'), fullPage: true });
      // Each row readable at 1280 px: locations and times on one line, the failure wrapped between words, nothing past the page.
      const layout = await page.evaluate<{ oneLine: { text: string; lines: number }[]; reasons: number[]; overflow: number }>(RUN_LIST_LAYOUT);
      expect(layout.oneLine.length).toBe(2 * 4);
      expect(layout.oneLine.filter((c) => c.lines !== 1)).toEqual([]);
      expect(layout.oneLine.map((c) => c.text)).toContainEqual(expect.stringMatching(/^\/tmp\/.*….*-extract\.csv$/));
      expect(layout.oneLine.map((c) => c.text)).toContainEqual(expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d$/));
      expect(layout.reasons).toHaveLength(1);
      expect(layout.reasons[0]).toBeGreaterThanOrEqual(140);
      expect(layout.overflow).toBe(0);

      const response = await page.goto(`${base}/ui/runs/${runId}`);
      expect(response?.headers()['content-security-policy']).toMatch(/^default-src 'self';/);
      await expect(page.locator('#stat-rows .value').innerText()).resolves.toBe('6,000 / 6,000');
      await expect(page.locator('#segments li[data-state="done"]').count()).resolves.toBe(PAGE_RUN.rows / PAGE_RUN.segmentRows);
      await expect(page.locator('#segments li').count()).resolves.toBe(PAGE_RUN.rows / PAGE_RUN.segmentRows);

      // Each chart is drawn by Chart.js with its data, and its canvas has coloured pixels.
      for (const id of ['chart-prediction-0', 'chart-confidence-0', 'chart-throughput']) {
        const drawn = await page.evaluate<{ points: number; coloured: number }>(chartDrawn(id));
        expect(drawn.points, id).toBeGreaterThan(0);
        expect(drawn.coloured, id).toBeGreaterThan(500);
      }
      // The distribution drawn is the one the run computed: its profile in the manifest, nothing made up here.
      const { profile } = JSON.parse(await readFile(join(out, runId, 'manifest.json'), 'utf8')) as Manifest;
      expect(profile?.targets.map((t) => [t.target, t.kind, t.count])).toEqual([['rental_price', 'numeric', PAGE_RUN.rows - PAGE_RUN.quarantined]]);
      await expect(page.locator('main').innerText()).resolves.toContain(`${(PAGE_RUN.rows - PAGE_RUN.quarantined).toLocaleString('en-US')} rows`);
      expect(problems).toEqual([]);
      await page.screenshot({ path: join(SCREENSHOTS, 'run-page.png'), fullPage: true });
      expect(requested.filter((url) => url.startsWith(`${base}/ui/queues/static/`)).length).toBeGreaterThan(5);
      expect(requested.filter((url) => new URL(url).origin !== base)).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("shows a pipeline's page: its runs and the charts of their quantiles, drift and rate drawn, with no script or policy error", async () => {
    await f.setup();
    f.worker();
    const pipeline = 'browser-drops';
    const inbox = join(tmp.dir, 'inbox');
    const out = join(tmp.dir, 'pipeline-out');
    await mkdir(inbox, { recursive: true });
    const jobs = join(tmp.dir, 'jobs');
    await mkdir(jobs, { recursive: true });
    await writeFile(
      join(jobs, 'browser.yaml'),
      `name: ${pipeline}\nmodel: mindsdb/home_rentals_model\ntrigger: { prefix: ${inbox}/, suffix: .csv }\noutput: ${out}/\n`,
    );
    // Three files as watch would find them, one after the other: the second with sqft half again as large (drift), the third as the first.
    const storage = createStorage();
    const shifts = [1, 1.5, 1];
    for (const [i, shift] of shifts.entries()) {
      const input = join(inbox, `day-${i + 1}.csv`);
      await writeFile(
        input,
        rentalsWithSqft(800, (v) => Math.round(v * shift)),
      );
      const trigger = {
        kind: 'poll',
        pipeline,
        foundAt: new Date().toISOString(),
        object: { location: input, etag: versionTag(await storage.stat(parseLocation(input))) },
      } as const;
      await f.queue.enqueue({ input, model: 'mindsdb/home_rentals_model', out, options: { runId: `${pipeline}-${i + 1}` }, trigger });
      const done = await f.finished(`${pipeline}-${i + 1}`);
      expect([done.state, done.failedReason]).toEqual(['succeeded', undefined]);
    }
    storage.close();

    const s = await serve({ ...f.env(), API_TOKEN: 'browser-test-token', DASHBOARD_USER: USER, DASHBOARD_PASSWORD: PASSWORD, JOBS_DIR: jobs });
    const base = s.url;
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, httpCredentials: { username: USER, password: PASSWORD } });
    try {
      const { page, problems } = await watchedPage(context);

      await page.goto(`${base}/ui/runs`);
      await page.getByRole('navigation').getByRole('link', { name: 'Pipelines' }).click();
      await page.waitForURL(`${base}/ui/pipelines`);
      await expect(page.locator(`tr[data-pipeline="${pipeline}"] td.latest`).innerText()).resolves.toContain(`${pipeline}-3`);
      await page.screenshot({ path: join(SCREENSHOTS, 'pipeline-list.png'), fullPage: true });
      await page.getByRole('link', { name: pipeline, exact: true }).click();
      await page.waitForURL(`${base}/ui/pipelines/${pipeline}`);
      await expect(page.locator('table.pipeline-runs tbody tr').count()).resolves.toBe(shifts.length);

      // Each trend is drawn by Chart.js with a point per run, and its canvas has coloured pixels.
      for (const id of ['chart-quantiles-0', 'chart-psi', 'chart-rate']) {
        const drawn = await page.evaluate<{ points: number; coloured: number }>(chartDrawn(id));
        expect(drawn.points, id).toBe(shifts.length);
        expect(drawn.coloured, id).toBeGreaterThan(300);
      }
      const series = await page.evaluate<string[]>(
        `window.Chart.getChart(document.getElementById('chart-quantiles-0')).data.datasets.map((d) => d.label + ':' + d.data.length)`,
      );
      expect(series).toEqual(['p5:3', 'p50:3', 'p95:3']);
      // The PSI drawn is the second run's, from its manifest: the first has no baseline.
      const manifest = JSON.parse(await readFile(join(out, `${pipeline}-2`, 'manifest.json'), 'utf8')) as Manifest;
      const psi = await page.evaluate<(number | null)[]>(`window.Chart.getChart(document.getElementById('chart-psi')).data.datasets[0].data`);
      expect(psi[0]).toBeNull();
      expect(psi[1]).toBe(Math.max(...manifest.drift!.columns.map((c) => c.psi)));
      expect(problems).toEqual([]);
      await page.screenshot({ path: join(SCREENSHOTS, 'pipeline-page.png'), fullPage: true });
    } finally {
      await context.close();
    }
  });
  it("shows a shadow-scored run's comparison: the differences' chart drawn, the 20 differing rows side by side and readable, with no script or policy error", async () => {
    await f.setup();
    f.worker();
    const out = join(tmp.dir, 'compared-out');
    const input = join(tmp.dir, 'compared.csv');
    // Notes far longer than a line of the table: each input must be cut to three lines, not stretch its row.
    const notes = 'a long note about the flat, its view and its neighbours, '.repeat(12);
    await writeFile(
      input,
      rentalsText(2_000, (row) => {
        row.notes = notes;
      }),
    );
    await f.queue.enqueue({
      input,
      model: 'mindsdb/home_rentals_model',
      out,
      options: { runId: 'browser-compared', compareModel: 'mindsdb/home_rentals_challenger', batchSize: 100 },
    });
    const done = await f.finished('browser-compared');
    expect([done.state, done.failedReason]).toEqual(['succeeded', undefined]);

    const s = await serve({ ...f.env(), API_TOKEN: 'browser-test-token', DASHBOARD_USER: USER, DASHBOARD_PASSWORD: PASSWORD });
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, httpCredentials: { username: USER, password: PASSWORD } });
    try {
      const { page, problems } = await watchedPage(context);
      await page.goto(`${s.url}/ui/runs/browser-compared`);
      await expect(page.locator('#agreement-0').innerText()).resolves.toBe('95.00% (1,900 of 2,000)');
      const drawn = await page.evaluate<{ points: number; coloured: number }>(chartDrawn('chart-difference-0'));
      const { targets } = JSON.parse(await readFile(join(out, 'browser-compared', 'comparison.json'), 'utf8')) as Comparison;
      expect(drawn.points).toBe(targets[0].difference!.histogram.length);
      expect(drawn.coloured).toBeGreaterThan(500);
      await expect(page.locator('#comparison-rows-0 tbody tr').count()).resolves.toBe(20);
      // Side by side and readable at 1280 px: each input cut to three lines (whole in its title), the table within the page.
      const layout = await page.evaluate<{ inputLines: number[]; overflow: number }>(COMPARISON_LAYOUT);
      expect(layout.inputLines).toEqual(Array(20).fill(3));
      await expect(page.locator('#comparison-rows-0 td.input code').first().getAttribute('title')).resolves.toContain(notes.trim());
      expect(layout.overflow).toBe(0);
      expect(problems).toEqual([]);
      await page.locator('#comparison').screenshot({ path: join(SCREENSHOTS, 'run-page-comparison.png') });
    } finally {
      await context.close();
    }
  });
});
