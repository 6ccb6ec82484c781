import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { dryRunReportSchema, type DryRunReport } from '../../src/pipeline/dry-run.js';
import type { Manifest } from '../../src/pipeline/manifest.js';
import { mulberry32 } from '../../src/simulator/prng.js';
import { runCli } from '../helpers/cli.js';
import { useQueueFixture } from '../helpers/queue.js';
import { startSimulator, useRentalsInput } from '../helpers/scoring.js';
import { useServeProcesses } from '../helpers/serve.js';

const MODEL = 'mindsdb/home_rentals_model';
const TOKEN = 'estimate-token-7d41c09a2b';
/*
 * The service: every predict answered LATENCY_MS to LATENCY_MS + JITTER_MS after it arrives,
 * the jitter drawn from the simulator's seeded stream. ROWS in batches of BATCH: 32 requests,
 * 8 round trips at concurrency 4, about 1.5 s of scoring.
 *
 * Why the real run lands in the range whatever the machine's load (not by luck):
 * - The dry run sends planning's probe, then the canary: a first wave of 4 (cold: connections
 *   opened, code compiled at both ends), then 4 more, whose times are the latency samples. With
 *   seed 1 those 4 draw a jitter of 3 to 48 ms (checked below): samples of 153 to 198 ms plus the
 *   client's overhead, widened by max(spread, median / 4) / sqrt(4) >= 45 / 2 = 22 ms each way.
 * - Low is (planning + the canary's first wave) / 2 + 7 x (the fastest sample - 22 ms). The run
 *   cannot score its 7 other waves faster than 150 ms plus the jitter its slots draw (25 ms on
 *   average): to pass it, the canary's requests would have to carry about 45 ms more of client
 *   overhead each than the run's, beyond the half of planning and first wave left out.
 * - High is 2 x (planning + first wave) + 7 x (the slowest sample, 198 ms or more, + 22 ms), where
 *   the run takes planning + its first wave + about 7 x 175 ms + its writes (a few ms here): the
 *   run's requests would have to carry about 45 ms more overhead each than the canary's, beyond
 *   the doubled planning and first wave.
 * Either is a loaded machine slowing one process and not the other by a third of the service's
 * latency, for seconds.
 */
const LATENCY_MS = 150;
const JITTER_MS = 50;
const SEED = 1;
const ROWS = 1600;
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
    // auto climbs 2, 3, ... 8 over its first 7 round trips: 35 requests' room, enough for 32.
    ['auto', 4, 8],
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
      expect([Math.floor(Math.min(...draws)), Math.floor(Math.max(...draws))]).toEqual([3, 48]);
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
  });
});
