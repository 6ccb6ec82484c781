import { join } from 'node:path';
import { Job, Queue } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { failedAttemptSchema } from '../../src/queue/failed-attempt.js';
import { RUNS_QUEUE } from '../../src/queue/queues.js';
import { startCli, type CliProcess } from '../helpers/cli.js';
import { freePort, useQueueFixture, waitFor } from '../helpers/queue.js';
import { useRentalsInput } from '../helpers/scoring.js';

// A queued run whose service does not answer fails attempt after attempt, backing off 5, 10, 20
// and 40 s: `enqueue --wait` and `status --watch` say each attempt as it fails, with its code and
// when the next comes, instead of nothing for 75 s. The backoff is skipped here by promoting the
// delayed job, through BullMQ's own call, once each attempt has been said.

const MODEL = 'mindsdb/home_rentals_model';
const ATTEMPTS = 5;
const files = useRentalsInput(10);
const f = useQueueFixture();

/** The failed attempts a `status --watch --json` printed, in order. */
function jsonAttempts(cli: CliProcess) {
  return cli
    .stdout()
    .split('\n')
    .filter((l) => l.includes('"failedAttempt"'))
    .map((l) => failedAttemptSchema.parse((JSON.parse(l) as { failedAttempt: unknown }).failedAttempt));
}

describe('failed attempts of a queued run', () => {
  it('enqueue --wait and status --watch say each as it happens: its number, code, reason and next try, or that it was the last', async () => {
    await f.setup();
    f.worker();
    const closed = await freePort();
    const runId = 'unanswered';
    const started = Date.now();
    const waiting = startCli(
      ['enqueue', files.input, '--model', MODEL, '--out', join(files.dir, 'out'), '--service', `http://127.0.0.1:${closed}`, '--run-id', runId, '--wait'],
      { ...f.env(), LOG_LEVEL: 'warn' },
    );
    const runs = new Queue(RUNS_QUEUE, { connection: { url: f.redisUrl }, prefix: f.prefix });
    let watching: CliProcess | undefined;
    try {
      await waitFor('the run to be enqueued', () => waiting.stdout() === `${runId}\n`, 30_000);
      // Started once the run exists, maybe after its first attempt failed: it shows what the job logged so far.
      const watch = startCli(['status', runId, '--watch', '--json'], { ...f.env(), LOG_LEVEL: 'warn' });
      watching = watch;
      const reason = `nothing answers at http://127.0.0.1:${closed} (ECONNREFUSED): check --service (or MODEL_SERVICE_URL) and that the service runs [E_SERVICE_UNREACHABLE]`;
      for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
        const said = `run ${runId}: attempt ${attempt} of ${ATTEMPTS} failed: ${reason}; `;
        await waitFor(`attempt ${attempt} to be said`, () => waiting.stderr().includes(said) && jsonAttempts(watch).length === attempt, 30_000);
        const line = waiting
          .stderr()
          .split('\n')
          .find((l) => l.startsWith(said))!;
        const recorded = jsonAttempts(watch)[attempt - 1];
        expect(recorded).toMatchObject({ attempt, attempts: ATTEMPTS, code: 'E_SERVICE_UNREACHABLE' });
        if (attempt === ATTEMPTS) {
          expect(line).toBe(`${said}it was the last`);
          expect(recorded.retryAt).toBeNull();
          break;
        }
        // Said before the run ends: both commands still follow it, and it waits for its next try.
        expect([waiting.child.exitCode, watch.child.exitCode]).toEqual([null, null]);
        expect(line).toMatch(/; next try (in \d+ s \(at \S+Z\)|at \S+Z)$/);
        // The runs queue's exponential backoff: 5 s after the attempt failed, then twice as long each time.
        const backoff = 5_000 * 2 ** (attempt - 1);
        const retryAt = Date.parse(recorded.retryAt!);
        expect(retryAt).toBeGreaterThanOrEqual(started + backoff);
        expect(retryAt).toBeLessThanOrEqual(Date.now() + backoff);
        const delayed = await waitFor('the run job to wait for its next try', async () => {
          const job = await Job.fromId(runs, runId);
          return job && (await job.getState()) === 'delayed' ? job : undefined;
        });
        await delayed.promote();
      }
      expect(await waiting.exited).toBe(1);
      expect(await watch.exited).toBe(0);
      // Each attempt once, in order, and then the run's end.
      expect(jsonAttempts(watch).map((a) => a.attempt)).toEqual([1, 2, 3, 4, 5]);
      const lines = waiting.stderr().trimEnd().split('\n');
      expect(lines.filter((l) => l.startsWith(`run ${runId}: attempt `))).toHaveLength(ATTEMPTS);
      expect(lines.find((l) => l.startsWith(`${runId}  failed  `))).toMatch(/attempts 5 .*\[E_SERVICE_UNREACHABLE\]$/);
    } finally {
      await runs.close();
      for (const cli of [waiting, watching]) if (cli && cli.child.exitCode === null) cli.child.kill('SIGKILL');
    }
  });
});
