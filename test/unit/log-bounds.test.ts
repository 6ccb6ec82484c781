import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { MESSAGE_BYTES } from '../../src/text-excerpt.js';

const LOG_MODULE = fileURLToPath(new URL('../../dist/log.js', import.meta.url));

/** The log lines a process writes with the built logger when it runs `body` (with `log` in scope). */
function logLines(body: string): Record<string, unknown>[] {
  const script = `const { createLogger } = await import(${JSON.stringify(LOG_MODULE)}); const log = createLogger(); ${body}; log.flush();`;
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', env: { ...process.env, LOG_LEVEL: 'info' } });
  expect(result.status, result.stderr.slice(0, 2000)).toBe(0);
  return result.stderr
    .trim()
    .split('\n')
    .map((line) => {
      expect(Buffer.byteLength(line)).toBeLessThan(16 * 1024);
      return JSON.parse(line) as Record<string, unknown>;
    });
}

describe('the logger', () => {
  it("bounds an error's message and stack, causes included, and keeps its frames", () => {
    const [line] = logLines(
      `const cause = new Error('cause ' + 'c'.repeat(2_000_000)); log.error({ err: new Error('header ' + 'h'.repeat(50_000_000), { cause }) }, 'failed')`,
    );
    const err = line.err as { message: string; stack: string };
    expect(Buffer.byteLength(err.message)).toBeLessThanOrEqual(MESSAGE_BYTES);
    expect(err.message).toMatch(/^header h+\.\.\. \d+ more bytes$/);
    expect(err.stack).toMatch(/^Error: header h+\.\.\. \d+ more bytes\n {4}at /);
    expect(line.msg).toBe('failed');
  });

  it('logs a short error as it is', () => {
    const [line] = logLines(`log.warn({ err: Object.assign(new Error('short'), { code: 'E_X' }) }, 'warned')`);
    expect(line.err).toMatchObject({ type: 'Error', message: 'short', code: 'E_X' });
    expect((line.err as { stack: string }).stack).toMatch(/^Error: short\n {4}at /);
  });
});
