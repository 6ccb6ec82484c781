import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
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

describe('log calls', () => {
  it("keep a failure's stack, code and cause (a failed shutdown step, through the built logger)", () => {
    const steps = JSON.stringify(fileURLToPath(new URL('../../dist/shutdown-steps.js', import.meta.url)));
    const [line] = logLines(
      `const { runShutdownSteps } = await import(${steps}); await runShutdownSteps([['close queue', async () => { throw Object.assign(new Error('queue gone', { cause: new Error('socket reset') }), { code: 'E_QUEUE' }); }]], log)`,
    );
    expect(line).toMatchObject({
      msg: 'shutdown step failed',
      step: 'close queue',
      err: { type: 'Error', message: 'queue gone: socket reset', code: 'E_QUEUE' },
    });
    const { stack } = line.err as { stack: string };
    expect(stack).toMatch(/^Error: queue gone\n {4}at /);
    expect(stack).toContain('caused by: Error: socket reset');
  });

  it('in src/ pass the error object, never only errorMessage(err) (which drops stack, code and cause)', () => {
    const root = fileURLToPath(new URL('../../src/', import.meta.url));
    const offending: string[] = [];
    for (const file of readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'))) {
      const text = readFileSync(join(root, file), 'utf8');
      // A logger's method (or redis-watch's `say`) and its arguments, up to the parenthesis closing them.
      for (const call of text.matchAll(/\.(?:trace|debug|info|warn|error|fatal)\(|\bsay\(/g)) {
        let depth = 0;
        let end = call.index;
        for (; end < text.length; end++) {
          if (text[end] === '(') depth++;
          else if (text[end] === ')' && --depth === 0) break;
        }
        const args = text.slice(call.index, end + 1);
        if (args.includes('errorMessage(')) offending.push(`${file}:${text.slice(0, call.index).split('\n').length}: ${args.slice(0, 120)}`);
      }
    }
    expect(offending, 'log `{ err }` instead: its serializer keeps stack, code and cause (src/log.ts)').toEqual([]);
  });
});
