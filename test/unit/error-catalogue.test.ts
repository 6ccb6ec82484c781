import { UnrecoverableError } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { BatchScorerError, ERROR_CATALOGUE, type ErrorCode } from '../../src/errors.js';
import { toQueueError } from '../../src/queue/to-queue-error.js';

const codes = Object.keys(ERROR_CATALOGUE) as ErrorCode[];

describe('the error catalogue', () => {
  it.each(codes)('%s: an error carries its status, exit code and retry meaning from the catalogue', (code) => {
    const spec = ERROR_CATALOGUE[code];
    const err = new BatchScorerError(code, 'x');
    expect(err.exitCode).toBe(spec.exit);
    expect(err.retriable).toBe(spec.retriable);
    expect(spec.status).toBeGreaterThanOrEqual(400);
    expect(spec.status).toBeLessThan(600);
    expect(spec.hint.length).toBeGreaterThan(10);
    // BullMQ fails a job at once (UnrecoverableError) exactly when retrying cannot help.
    expect(toQueueError(err) instanceof UnrecoverableError).toBe(!spec.retriable);
    expect(toQueueError(err).message).toBe(`x [${code}]`);
  });

  it('says a caller mistake with a 4xx and a server or dependency fault with a 5xx', () => {
    const clientSide: ErrorCode[] = [
      'E_USAGE',
      'E_NOT_ALLOWED',
      'E_INPUT_NOT_FOUND',
      'E_INPUT',
      'E_COLUMNS',
      'E_MODEL_NOT_FOUND',
      'E_OUTPUT',
      'E_RUN_NOT_FOUND',
    ];
    for (const code of clientSide) expect(ERROR_CATALOGUE[code].status, code).toBeLessThan(500);
    const serverSide: ErrorCode[] = ['E_INTERNAL', 'E_REDIS_UNAVAILABLE', 'E_STORAGE', 'E_SERVICE_UNAVAILABLE'];
    for (const code of serverSide) expect(ERROR_CATALOGUE[code].status, code).toBeGreaterThanOrEqual(500);
  });
});
