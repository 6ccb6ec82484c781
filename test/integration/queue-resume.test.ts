import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Manifest } from '../../src/scoring/manifest.js';
import { csvLine, RENTAL_COLUMNS, rentalRow } from '../../src/simulator/sample-data.js';
import { runCli } from '../helpers/cli.js';
import { useQueueFixture, waitFor, reasonOf } from '../helpers/queue.js';
import { score, tempDir } from '../helpers/scoring.js';

// A queue run that fails on its error threshold, enqueued again under its run id with a higher
// --max-error-rate: a long-lived worker must see the new option, and the output must be the bytes
// an uninterrupted run gives.

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
let tmp: Awaited<ReturnType<typeof tempDir>>;
let input: string;
const ROWS = 2_000;

beforeAll(async () => {
  tmp = await tempDir();
  input = join(tmp.dir, 'some-bad.csv');
  const lines = [csvLine(RENTAL_COLUMNS)];
  for (let i = 0; i < ROWS; i++) {
    const row = rentalRow(i);
    if (i % 200 === 13) row[RENTAL_COLUMNS.indexOf('location')] = '__engine_error__';
    lines.push(csvLine(row));
  }
  await writeFile(input, `${lines.join('\n')}\n`);
});
afterAll(() => tmp.cleanup());

const f = useQueueFixture();

describe('resuming a failed queue run', () => {
  it('keeps the quarantined rows of the failure, and resumes with a higher --max-error-rate to a byte-identical result', async () => {
    await f.setup();
    f.worker();
    const out = join(tmp.dir, 'q');
    const args = ['enqueue', input, '--model', 'mindsdb/home_rentals_model', '--out', out, '--run-id', 'qr', '--segment-rows', '500', '--batch-size', '25'];

    const first = await runCli([...args, '--max-error-rate', '0', '--wait'], f.env());
    expect(first.code).toBe(1);
    // The failure says where the run is and how to resume it.
    expect(first.stderr).toContain(join(out, 'qr'));
    const resume = /resume: (.*)/.exec(first.stderr)?.[1] ?? '';
    expect(resume).toMatch(new RegExp(`^batch-scorer enqueue ${input} --model mindsdb/home_rentals_model --out ${out} .* --run-id qr$`));
    for (const flag of ['--segment-rows 500', '--batch-size 25', '--max-error-rate 0']) expect(resume).toContain(flag);
    const failed = await f.finished('qr');
    expect(failed.state).toBe('failed');
    expect(reasonOf(failed)).toMatch(/E_ERROR_RATE/);
    expect(existsSync(join(out, 'qr', '_SUCCESS'))).toBe(false);
    const kept = await readFile(join(out, 'qr', 'errors.jsonl'), 'utf8');
    expect(kept).toContain('"title":"MLEngineException"');

    // The same worker process, still running, takes the resumed run with its new threshold. Until
    // the worker has let go of the failed run's last segments, enqueueing it again is refused.
    const again = await waitFor('the failed run to be replaceable', async () => {
      const r = await runCli([...args, '--max-error-rate', '0.05', '--json'], f.env());
      if (r.code !== 0) expect(r.stderr).toMatch(/a worker still holds one of its jobs\); try again in a minute \[E_RUN_EXISTS\]/);
      return r.code === 0 && r;
    });
    expect(JSON.parse(again.stdout.trim()) as unknown).toMatchObject({ runId: 'qr', created: true, resumed: true });
    const done = await f.finished('qr');
    expect(done.state).toBe('succeeded');

    await score(input, join(tmp.dir, 'direct'), { service: f.sim.url, runId: 'd', segmentRows: 500, batchSize: 25, maxErrorRate: 0.05 });
    for (const file of ['predictions.csv', 'errors.jsonl']) {
      const [queued, direct] = await Promise.all([readFile(join(out, 'qr', file)), readFile(join(tmp.dir, 'direct', 'd', file))]);
      expect(sha256(queued)).toBe(sha256(direct));
    }
    const manifest = JSON.parse(await readFile(join(out, 'qr', 'manifest.json'), 'utf8')) as Manifest;
    expect(manifest).toMatchObject({ state: 'succeeded', options: { maxErrorRate: 0.05 }, counts: { rowsQuarantined: ROWS / 200 } });
  });

  it('a queued run whose input is missing fails at once, and leaves no run folder', async () => {
    await f.setup();
    f.worker();
    const out = join(tmp.dir, 'missing');
    const missing = join(tmp.dir, 'no-such.csv');
    const { runId } = await f.queue.enqueue({ input: missing, model: 'mindsdb/home_rentals_model', out, options: { runId: 'gone' } });
    const status = await f.finished(runId);
    expect(status).toMatchObject({ state: 'failed', attempts: 1 });
    expect(reasonOf(status)).toContain(`${missing}: no such file or object [E_INPUT_NOT_FOUND]`);
    expect(existsSync(join(out, 'gone'))).toBe(false);
    expect(f.sim.stats.describeRequests).toBe(0);
  });
});
