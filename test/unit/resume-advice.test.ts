import { describe, expect, it } from 'vitest';
import type { ErrorCode } from '../../src/errors.js';
import { resumeCanHelp } from '../../src/scoring/resume-advice.js';

describe('resumeCanHelp', () => {
  it('offers a resume for a failure that may pass, planned or not', () => {
    for (const code of ['E_SERVICE_UNAVAILABLE', 'E_SERVICE_UNREACHABLE', 'E_STORAGE', 'E_ABORTED', 'E_MODEL_NOT_READY'] as ErrorCode[]) {
      expect([code, resumeCanHelp(code, false), resumeCanHelp(code, true)]).toEqual([code, true, true]);
    }
  });

  it('offers one for a planned run that failed on something other than its request', () => {
    for (const code of ['E_ERROR_RATE', 'E_CANCELLED', 'E_ALIGNMENT', 'E_SERVICE_FATAL'] as ErrorCode[]) {
      expect([code, resumeCanHelp(code, true), resumeCanHelp(code, false)]).toEqual([code, true, false]);
    }
  });

  it('offers one for a planned run the database refused at its end, once the table is fixed', () => {
    expect([resumeCanHelp('E_DATABASE_REFUSED', true), resumeCanHelp('E_DATABASE_REFUSED', false)]).toEqual([true, false]);
  });

  it('never for a refusal of the request, nor for an input or model that changed or is malformed', () => {
    const never: ErrorCode[] = ['E_USAGE', 'E_NOT_ALLOWED', 'E_INPUT_NOT_FOUND', 'E_MODEL_NOT_FOUND', 'E_OUTPUT', 'E_RUN_EXISTS', 'E_RUN_STATE', 'E_COLUMNS'];
    for (const code of [...never, 'E_INPUT', 'E_INPUT_CHANGED', 'E_MODEL_CHANGED'] as ErrorCode[]) {
      expect([code, resumeCanHelp(code, true), resumeCanHelp(code, false)]).toEqual([code, false, false]);
    }
  });
});
