import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { useQueueFixture, waitFor } from '../helpers/queue.js';

const f = useQueueFixture();

/** The JSON log line a worker wrote with this message, once it has. */
function logLine(log: string, msg: string): Record<string, unknown> | undefined {
  return log
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .find((line) => line.msg === msg);
}

describe('worker --max-in-flight, and its old name --concurrency', () => {
  it('takes --max-in-flight as the cap of the process', async () => {
    await f.setup();
    const w = f.worker(['--max-in-flight', '3']);
    const started = await waitFor('the worker to start', () => logLine(w.log(), 'worker started'));
    expect(started.maxInFlight).toBe(3);
    expect(w.log()).not.toContain('deprecated');
  });

  it('still takes --concurrency, with one warning naming --max-in-flight', async () => {
    await f.setup();
    const w = f.worker(['--concurrency', '2']);
    const started = await waitFor('the worker to start', () => logLine(w.log(), 'worker started'));
    expect(started.maxInFlight).toBe(2);
    const warnings = w.log().match(/--concurrency is deprecated: use --max-in-flight/g) ?? [];
    expect(warnings).toHaveLength(1);
  });

  it('refuses both names at once, exit 2', async () => {
    const r = await runCli(['worker', '--concurrency', '2', '--max-in-flight', '3'], { REDIS_URL: 'redis://127.0.0.1:1' });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--concurrency is the old name of --max-in-flight: give only --max-in-flight \[E_USAGE\]/);
  });
});
