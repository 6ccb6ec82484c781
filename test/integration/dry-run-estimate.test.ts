import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { dryRunReportSchema, type DryRunReport } from '../../src/scoring/dry-run.js';
import type { Manifest } from '../../src/scoring/manifest.js';
import { mulberry32 } from '../../src/simulator/prng.js';
import { runCli } from '../helpers/cli.js';
import { useQueueFixture } from '../helpers/queue.js';
import { startSimulator, useRentalsInput } from '../helpers/scoring.js';
import { useServeProcesses } from '../helpers/serve.js';

const MODEL = 'mindsdb/home_rentals_model';
const TOKEN = 'estimate-token-7d41c09a2b';
/*
 * The service: every predict answered LATENCY_MS to LATENCY_MS + JITTER_MS after it arrives,
 * the jitter drawn from the simulator's seeded stream. ROWS in batches of BATCH: 16 requests,
 * 4 round trips at concurrency 4, about 2 s of scoring.
 *
 * Why the real run lands in the range whatever the machine's load (not by luck). A loaded
 * machine adds its own overhead to each request's time (30 to 250 ms here, with other test
 * suites running): the latency is chosen large enough that the range's margins outgrow that.
 * - The dry run sends planning's probe, then the canary: a first wave of 4 (connections opened,
 *   code compiled at both ends), then 4 more, whose times are the latency samples. With seed 1
 *   those 4 draw a jitter of 7 to 97 ms (checked below): samples of 407 to 497 ms plus overhead,
 *   widened by max(spread, median / 4) / sqrt(4) >= 100 ms / 2 = 50 ms each way.
 * - Low is (planning + the canary's first wave) / 2 + 3 x (the fastest sample - 50 ms or more).
 *   The run pays planning and a first wave too, then 3 waves of 400 ms plus the jitter its slots
 *   draw (50 ms on average) plus its overhead. The half of planning and first wave left out is
 *   200 ms or more (the first wave alone takes 400 ms): to pass the run, the canary's requests
 *   would have to carry 93 + 200 / 3, about 160 ms more overhead each than the run's.
 * - High is 2 x (planning + first wave) + 3 x (the slowest sample, 497 ms or more, + 50 ms): the
 *   run would have to carry 97 + 400 / 3, about 230 ms more overhead a request than the canary's
 *   (its writes take a few ms here).
 */
const LATENCY_MS = 400;
const JITTER_MS = 100;
const SEED = 1;
const ROWS = 800;
const BATCH = 50;
const REQUESTS = ROWS / BATCH;

const files = useRentalsInput(ROWS);
const f = useQueueFixture();
const serve = useServeProcesses();

/** A dry run's JSON as the CLI prints it and the API answers it: the report, marked. */
const dryRunJson = dryRunReportSchema.extend({ dryRun: z.literal(true) }).strict();

const ordered = (r: { low: number; expected: number; high: number }) => r.low <= r.expected && r.expected <= r.high;

function expectRangesOrdered(report: DryRunReport): void {
  const e = report.estimate;
  for (const [name, r] of Object.entries({
    requests: e.requests,
    rows: e.rows,
    bytesSent: e.bytesSent,
    durationMs: e.durationMs,
    latency: e.basis.latencyMs.assumed,
  })) {
    expect(ordered(r), `${name}: ${JSON.stringify(r)}`).toBe(true);
  }
}

describe('dry run estimates', () => {
  it.each([
    ['4', 4, 4],
    // auto climbs 2, 3, 4, 5, 6 over its first 5 round trips: room for 20 requests, enough for 16.
    ['auto', 4, 6],
  ])('brackets the real run at --concurrency %s', async (concurrency, canaryConcurrency, assumed) => {
    const sim = await startSimulator({ latencyMs: LATENCY_MS, latencyJitterMs: JITTER_MS, seed: SEED });
    try {
      const out = join(files.dir, `out-${concurrency}`);
      const args = ['score', files.input, '--model', MODEL, '--out', out, '--batch-size', String(BATCH), '--concurrency', concurrency, '--json'];
      const env = { MODEL_SERVICE_URL: sim.url };

      const dry = await runCli([...args, '--dry-run'], env);
      expect(dry.code, dry.stderr).toBe(0);
      const report = dryRunJson.parse(JSON.parse(dry.stdout));
      expect(existsSync(out)).toBe(false);
      const predictsOfDryRun = sim.stats.predictRequests;
      // Planning's probe, then the canary.
      expect(predictsOfDryRun).toBe(1 + 8);
      const { estimate } = report;
      expect(report.canary).toMatchObject({ batches: 8, rows: 8 * BATCH, scored: 8 * BATCH, quarantined: 0 });
      expect(estimate.basis).toMatchObject({ canaryBatches: 8, canaryRows: 8 * BATCH, canaryConcurrency, concurrency: assumed });
      expect(estimate.basis.latencyMs.samples).toBe(4);
      // The simulator never answers before its latency and the smallest draw the sampled requests met.
      const jitter = mulberry32(SEED ^ 0x5bd1e995);
      const draws = Array.from({ length: 9 }, () => jitter() * JITTER_MS).slice(5);
      expect([Math.floor(Math.min(...draws)), Math.floor(Math.max(...draws))]).toEqual([7, 97]);
      expect(estimate.basis.latencyMs.min).toBeGreaterThanOrEqual(LATENCY_MS + Math.floor(Math.min(...draws)));
      // Full batches of BATCH rows: the request count is exact.
      expect(estimate.requests).toEqual({ low: REQUESTS, expected: REQUESTS, high: REQUESTS });
      expect(estimate.rows).toEqual({ low: ROWS, expected: ROWS, high: ROWS });
      expectRangesOrdered(report);

      const real = await runCli(args, env);
      expect(real.code, real.stderr).toBe(0);
      const summary = JSON.parse(real.stdout) as { folder: string; durationMs: number };
      const manifest = JSON.parse(await readFile(join(summary.folder, 'manifest.json'), 'utf8')) as Manifest;
      expect(manifest.counts!.requests).toBe(REQUESTS);
      expect(sim.stats.predictRequests - predictsOfDryRun).toBe(1 + REQUESTS);
      const { low, high } = estimate.durationMs;
      const where = `real run ${manifest.durationMs} ms; estimate ${JSON.stringify(estimate.durationMs)}; basis ${JSON.stringify(estimate.basis)}`;
      expect(manifest.durationMs, where).toBeGreaterThanOrEqual(low);
      expect(manifest.durationMs, where).toBeLessThanOrEqual(high);
    } finally {
      await sim.close();
    }
  });

  it('prints the range and what it rests on for people', async () => {
    const sim = await startSimulator();
    try {
      const dry = await runCli(
        ['score', files.input, '--model', MODEL, '--out', join(files.dir, 'human'), '--batch-size', '100', '--max-batch-bytes', '2048', '--dry-run'],
        { MODEL_SERVICE_URL: sim.url },
      );
      expect(dry.code, dry.stderr).toBe(0);
      // --max-batch-bytes cuts batches of rows of about 180 bytes to 11 rows or so: the requests are a range.
      expect(dry.stdout).toMatch(/^requests: (\d+) \(low (\d+), high (\d+)\)$/m);
      const [, expected, low, high] = /^requests: (\d+) \(low (\d+), high (\d+)\)$/m.exec(dry.stdout)!.map(Number);
      expect(low).toBeGreaterThan(ROWS / 100);
      expect(low <= expected && expected <= high).toBe(true);
      expect(dry.stdout).toContain(`rows: ${ROWS}\n`);
      expect(dry.stdout).toMatch(/^bytes sent: \d+ \(low \d+, high \d+\)$/m);
      expect(dry.stdout).toMatch(/^estimated duration: [\d.]+ s \(low [\d.]+ s, high [\d.]+ s\) at concurrency 4$/m);
      expect(dry.stdout).toMatch(
        /^estimate rests on: 8 canary batches \(\d+ rows\) sent 4 at a time; latency after the first wave p50 [\d.]+ ms, p90 [\d.]+ ms \(4 samples/m,
      );
      expect(dry.stdout).toContain('assumes: no retries');
      expect(dry.stdout).toContain('assumes: concurrency 4 kept busy throughout');
    } finally {
      await sim.close();
    }
  });

  it('POST /runs with dryRun answers the same shape', async () => {
    await f.setup({ latencyMs: 20, seed: SEED });
    const s = await serve({ ...f.env(), API_TOKEN: TOKEN });
    const res = await fetch(`${s.url}/runs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ input: files.input, model: MODEL, out: join(files.dir, 'api'), options: { batchSize: BATCH, concurrency: 2 }, dryRun: true }),
    });
    expect(res.status).toBe(200);
    const report = dryRunJson.parse(await res.json());
    expect(report.estimate.requests).toEqual({ low: REQUESTS, expected: REQUESTS, high: REQUESTS });
    expect(report.estimate.basis).toMatchObject({ canaryBatches: 8, canaryConcurrency: 2, concurrency: 2 });
    expect(report.estimate.basis.latencyMs.min).toBeGreaterThanOrEqual(20);
    expectRangesOrdered(report);
    expect(existsSync(join(files.dir, 'api'))).toBe(false);
    // The API's document says so.
    const doc = (await (await fetch(`${s.url}/openapi.json`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as {
      components: { schemas: { DryRunReport: { properties: { estimate: { properties: Record<string, { required?: string[] }> } } } } };
    };
    const estimate = doc.components.schemas.DryRunReport.properties.estimate.properties;
    expect(Object.keys(estimate)).toEqual(['requests', 'rows', 'bytesSent', 'durationMs', 'basis']);
    expect(estimate.durationMs.required).toEqual(['low', 'expected', 'high']);
  });
});
