import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { useQueueFixture, waitFor } from '../helpers/queue.js';
import { useRentalsInput } from '../helpers/scoring.js';

/**
 * What Redis keeps of finished runs under RETENTION_JOBS: a real worker process finishes many tiny
 * runs, and BullMQ's jobs and the keys each run keeps beside them (progress, samples, caps, its
 * entry in the index of runs) stay bounded by the count, whatever the number of runs. The bound
 * per run is the one docs/retention.md gives, measured by `npm run bench` (section redis-memory).
 */
const RUNS = 60;
const KEPT = 10;
/** The documented bound on what a finished run of one segment keeps in Redis (docs/retention.md). */
const BYTES_PER_RUN = 12 * 1024;

const files = useRentalsInput(3);
const f = useQueueFixture();

/** The run ids (`keep-NN`) that have any key under the prefix, and the bytes those keys take (MEMORY USAGE). */
async function runKeys(redis: Redis, prefix: string): Promise<{ runs: Set<string>; bytes: number }> {
  const runs = new Set<string>();
  let bytes = 0;
  for await (const batch of redis.scanStream({ match: `${prefix}*`, count: 1000 }) as AsyncIterable<string[]>) {
    for (const key of batch) {
      const run = /:(keep-\d+)/.exec(key)?.[1];
      if (run === undefined) continue;
      runs.add(run);
      bytes += (await redis.memory('USAGE', key)) ?? 0;
    }
  }
  return { runs, bytes };
}

describe('Redis under RETENTION_JOBS (a real worker process)', () => {
  it(`keeps the jobs and keys of ${KEPT} finished runs of ${RUNS}, every run folder staying`, async () => {
    await f.setup();
    const { input } = files;
    const out = join(files.dir, 'out');
    const redis = new Redis(f.redisUrl);
    try {
      f.worker([], { RETENTION_JOBS: String(KEPT) });
      const ids = Array.from({ length: RUNS }, (_, i) => `keep-${String(i).padStart(2, '0')}`);
      for (const runId of ids) await f.queue.enqueue({ input, model: 'mindsdb/home_rentals_model', out, options: { runId } });
      // Finished runs leave the queue as others finish: their folders say they ended.
      await waitFor('every run to succeed', () => ids.every((id) => existsSync(join(out, id, '_SUCCESS'))), 120_000, 200);

      // BullMQ keeps KEPT finished jobs of each queue.
      expect(await redis.zcard(`${f.prefix}:runs:completed`)).toBe(KEPT);
      expect(await redis.zcard(`${f.prefix}:segments:completed`)).toBe(KEPT);
      // The worker's sweep deletes the keys of the runs whose jobs are gone, within seconds.
      const kept = await waitFor('the keys of removed runs to go', async () => {
        const found = await runKeys(redis, f.prefix);
        return found.runs.size <= KEPT && found;
      });
      expect(kept.runs.size).toBe(KEPT);
      expect(await redis.zcard(`${f.prefix}:run-keys`)).toBe(KEPT);
      expect(kept.bytes).toBeLessThanOrEqual(KEPT * BYTES_PER_RUN);
      // What the queue still has reads as before; the folders of all runs stay.
      const listed = await f.queue.list({ limit: 100 });
      expect(listed.map((r) => r.runId).sort()).toEqual([...kept.runs].sort());
      expect(listed.every((r) => r.state === 'succeeded' && r.result?.counts?.rowsScored === 3)).toBe(true);
      expect(ids.filter((id) => !existsSync(join(out, id, 'manifest.json')))).toEqual([]);
    } finally {
      redis.disconnect();
    }
  });
});
