import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetricsRegistry } from '../../src/metrics/registry.js';
import { collectRunDrift } from '../../src/metrics/run-drift.js';
import type { Drift } from '../../src/scoring/drift.js';
import { buildManifest } from '../../src/scoring/manifest.js';
import { runFiles } from '../../src/scoring/prepared-run.js';
import { writeRunFile } from '../../src/scoring/run-file.js';
import type { RunListOptions, RunStatus } from '../../src/queue/producer.js';
import { createStorage } from '../../src/storage/storage.js';
import { parseSamples, promtoolCheck } from '../helpers/metrics.js';
import { tempDir } from '../helpers/scoring.js';
import { PROMTOOL } from '../helpers/tools.js';

const storage = createStorage();
let tmp: Awaited<ReturnType<typeof tempDir>>;
beforeAll(async () => (tmp = await tempDir()));
afterAll(async () => {
  storage.close();
  await tmp.cleanup();
});

/** A drift whose columns have these PSIs. */
function drift(columns: [string, 'prediction' | 'input', number][]): Drift {
  return {
    baseline: { runId: 'base', finishedAt: '2026-11-20T00:00:00.000Z', chosen: 'previous' },
    thresholds: { warn: 0.1, fail: null },
    level: 'ok',
    moved: [],
    columns: columns.map(([column, of, psi]) => ({ of, column, psi, jsDistance: 0, level: 'ok', bins: [] })),
    skipped: [],
  };
}

/** A run of `pipeline` as the queue lists it, with a manifest holding `measured` once it ended. */
async function run(runId: string, pipeline: string, state: RunStatus['state'], measured: Drift | null): Promise<RunStatus> {
  const folder = runFiles.folder(tmp.dir, runId);
  const ended = state !== 'running';
  if (ended) {
    const manifest = buildManifest({
      runId,
      startedAt: '2026-11-25T00:00:00.000Z',
      folder,
      drift: measured,
      request: { input: 'in.csv', model: 'p/m', options: {} },
    });
    await writeRunFile(storage, runFiles.manifest(folder), manifest);
  }
  return {
    runId,
    state,
    attempts: 1,
    folder: join(tmp.dir, runId),
    input: 'in.csv',
    model: 'p/m',
    out: tmp.dir,
    options: {},
    priority: 'normal',
    pipeline,
    enqueuedAt: '2026-11-25T00:00:00.000Z',
    ...(ended ? { finishedAt: '2026-11-25T00:01:00.000Z' } : {}),
  };
}

describe('batch_scorer_drift_psi', () => {
  it("is each column's PSI of each pipeline's latest run that ended, labelled by pipeline, never by run", async () => {
    let queue: RunStatus[] = [
      await run('n3', 'nightly', 'running', null),
      await run(
        'n2',
        'nightly',
        'succeeded',
        drift([
          ['rental_price', 'prediction', 0.02],
          ['sqft', 'input', 0.5],
        ]),
      ),
      await run('n1', 'nightly', 'succeeded', drift([['rental_price', 'prediction', 9]])),
      await run('i1', 'inbox', 'succeeded', null),
    ];
    let redisAway = false;
    const runs = {
      list: ({ pipeline, limit = 20 }: RunListOptions = {}) =>
        redisAway ? Promise.reject(new Error('connect ECONNREFUSED')) : Promise.resolve(queue.filter((r) => r.pipeline === pipeline).slice(0, limit)),
    };
    const registry = createMetricsRegistry();
    collectRunDrift(registry, { pipelines: ['nightly', 'inbox', 'idle'], runs, storage });
    const drifts = async () => [...parseSamples(await registry.metrics())].filter(([series]) => series.startsWith('batch_scorer_drift_psi'));

    expect(await drifts()).toEqual([
      ['batch_scorer_drift_psi{pipeline="nightly",column="rental_price",of="prediction"}', 0.02],
      ['batch_scorer_drift_psi{pipeline="nightly",column="sqft",of="input"}', 0.5],
    ]);
    if (PROMTOOL) expect(await promtoolCheck(await registry.metrics())).toEqual({ code: 0, output: '' });

    // A finished run's drift is read once: its manifest is not read again while it is the latest.
    await rm(join(tmp.dir, 'n2'), { recursive: true });
    expect((await drifts()).map(([, v]) => v)).toEqual([0.02, 0.5]);

    // Once a newer run ends, its drift replaces the older run's series, which go.
    queue = [await run('n3', 'nightly', 'failed', drift([['sqft', 'input', 1.25]])), ...queue.slice(1)];
    expect(await drifts()).toEqual([['batch_scorer_drift_psi{pipeline="nightly",column="sqft",of="input"}', 1.25]]);

    // Redis away: the scrape answers, without the gauge.
    redisAway = true;
    expect(await drifts()).toEqual([]);
    expect(await registry.metrics()).toContain('process_cpu_seconds_total');
  });
});
