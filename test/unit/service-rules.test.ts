import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { UsageError } from '../../src/errors.js';
import { thrown } from '../helpers/rejection.js';
import { formatModelRef, modelPathName, parseModelRef } from '../../src/service/model-ref.js';
import { DEFAULT_RETRY_POLICY, parseRetryAfter, retryDelayMs, type RetryPolicy } from '../../src/service/retry-policy.js';
import { classifyHttpError, describeHttpError, parseProblem, ServiceError, withoutTraceback, type ServiceErrorKind } from '../../src/service/service-error.js';

const policy: RetryPolicy = { ...DEFAULT_RETRY_POLICY, minDelayMs: 200, maxDelayMs: 15_000, maxRetryAfterMs: 120_000 };

describe('retryDelayMs', () => {
  it('doubles the ceiling per attempt, with the delay in [ceiling/2, ceiling]', () => {
    expect(retryDelayMs(policy, 1, undefined, () => 0)).toBe(100);
    expect(retryDelayMs(policy, 1, undefined, () => 1)).toBe(200);
    expect(retryDelayMs(policy, 2, undefined, () => 0)).toBe(200);
    expect(retryDelayMs(policy, 2, undefined, () => 1)).toBe(400);
    expect(retryDelayMs(policy, 3, undefined, () => 0.5)).toBe(600);
  });

  it('caps the ceiling at maxDelayMs', () => {
    expect(retryDelayMs(policy, 7, undefined, () => 1)).toBe(12_800);
    expect(retryDelayMs(policy, 8, undefined, () => 1)).toBe(15_000);
    expect(retryDelayMs(policy, 8, undefined, () => 0)).toBe(7_500);
    expect(retryDelayMs(policy, 60, undefined, () => 0.999)).toBeLessThanOrEqual(15_000);
  });

  it('stays within [ceiling/2, ceiling] for any attempt and random value', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 100 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (attempt, r) => {
        const ceiling = Math.min(policy.maxDelayMs, policy.minDelayMs * 2 ** (attempt - 1));
        const delay = retryDelayMs(policy, attempt, undefined, () => r);
        expect(Number.isInteger(delay)).toBe(true);
        expect(delay).toBeGreaterThanOrEqual(Math.floor(ceiling / 2));
        expect(delay).toBeLessThanOrEqual(ceiling);
        expect(delay).toBeLessThanOrEqual(policy.maxDelayMs);
      }),
    );
  });

  it('uses Math.random by default and stays in bounds', () => {
    for (let i = 0; i < 50; i++) {
      const delay = retryDelayMs(policy, 3);
      expect(delay).toBeGreaterThanOrEqual(400);
      expect(delay).toBeLessThanOrEqual(800);
    }
  });

  it('takes Retry-After as a floor: never sooner than asked, nor sooner than the backoff', () => {
    expect(retryDelayMs(policy, 1, 5_000, () => 0)).toBe(5_000);
    expect(retryDelayMs(policy, 1, 60_000, () => 0)).toBe(60_000);
    // "Retry-After: 0" under load would be a busy loop: the backoff still applies.
    expect(retryDelayMs(policy, 1, 0, () => 0)).toBe(100);
    expect(retryDelayMs(policy, 10, 0, () => 1)).toBe(15_000);
    expect(retryDelayMs(policy, 2, 300, () => 1)).toBe(400);
  });

  it('caps Retry-After at maxRetryAfterMs', () => {
    expect(retryDelayMs(policy, 1, 3_600_000, () => 0)).toBe(120_000);
    expect(retryDelayMs({ ...policy, maxRetryAfterMs: 1_000 }, 1, 2_000, () => 0)).toBe(1_000);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2025-03-01T12:00:00Z');

  it('reads delta-seconds as milliseconds', () => {
    expect(parseRetryAfter('120', now)).toBe(120_000);
    expect(parseRetryAfter('0', now)).toBe(0);
    expect(parseRetryAfter('1.5', now)).toBe(1_500);
    expect(parseRetryAfter(' 3 ', now)).toBe(3_000);
  });

  it('reads an HTTP date as the time until it, and a past date as 0', () => {
    expect(parseRetryAfter('Sat, 01 Mar 2025 12:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Sat, 01 Mar 2025 11:00:00 GMT', now)).toBe(0);
  });

  it('takes the first of repeated headers', () => {
    expect(parseRetryAfter(['2', '99'], now)).toBe(2_000);
  });

  it('answers undefined when absent, empty or unreadable', () => {
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter('', now)).toBeUndefined();
    expect(parseRetryAfter('   ', now)).toBeUndefined();
    expect(parseRetryAfter([], now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter('tomorrow', now)).toBeUndefined();
    expect(parseRetryAfter('12abc', now)).toBeUndefined();
    expect(parseRetryAfter('0x10', now)).toBeUndefined();
  });
});

describe('parseProblem', () => {
  it('reads title, detail and message from a JSON body', () => {
    expect(parseProblem('{"title":"Model not found","detail":"no model x","timestamp":1}')).toEqual({
      title: 'Model not found',
      detail: 'no model x',
      message: undefined,
    });
    expect(parseProblem('{"title":"KeyError","detail":"\'data\'","message":"boom"}')).toMatchObject({ title: 'KeyError', message: 'boom' });
  });

  it('writes non-string members as JSON and drops nulls', () => {
    expect(parseProblem('{"title":42,"detail":{"a":1},"message":null}')).toEqual({ title: '42', detail: '{"a":1}', message: undefined });
  });

  it("leaves out the Python traceback of the detail and message, as MindsDB's engine failures carry them", () => {
    const traceback = 'Traceback (most recent call last):\n\n  File "/srv/handler.py", line 401, in predict\n    raise\n\nValueError: row 0: bad';
    const said = `[byom/m]: ValueError: row 0: column 'sqft' is not a number\n${traceback}`;
    expect(parseProblem(JSON.stringify({ title: 'MLEngineException', detail: said, message: said }))).toEqual({
      title: 'MLEngineException',
      detail: "[byom/m]: ValueError: row 0: column 'sqft' is not a number",
      message: "[byom/m]: ValueError: row 0: column 'sqft' is not a number",
    });
  });

  it.each([
    ['an HTML page', '<html><body><h1>503 Service Temporarily Unavailable</h1></body></html>'],
    ['plain text', 'Bad Gateway'],
    ['an empty body', ''],
    ['a JSON array', '[{"title":"x"}]'],
    ['a JSON string', '"oops"'],
    ['JSON null', 'null'],
    ['truncated JSON', '{"title":"Ke'],
  ])('answers nothing for %s', (_what, body) => {
    expect(parseProblem(body)).toEqual({});
  });
});

describe('withoutTraceback', () => {
  const chained = [
    'Traceback (most recent call last):',
    '  File "<string>", line 87, in _design',
    'ValueError: row 2: not a number',
    '',
    'During handling of the above exception, another exception occurred:',
    '',
    'Traceback (most recent call last):',
    '  File "/srv/process_cache.py", line 169, in warm_function',
    'RuntimeError: engine failed on row 2\n\n',
  ].join('\n');

  it('keeps what precedes the traceback, trimmed', () => {
    expect(withoutTraceback(`  [byom/m]: ValueError: row 2: not a number \n${chained}`)).toBe('[byom/m]: ValueError: row 2: not a number');
  });

  it('keeps the exception a text that starts with a traceback ended in', () => {
    expect(withoutTraceback(chained)).toBe('RuntimeError: engine failed on row 2');
  });

  it('answers a text without a traceback as it is, lines and all', () => {
    expect(withoutTraceback('Model with name m.9 not found')).toBe('Model with name m.9 not found');
    expect(withoutTraceback('two problems:\n- a\n- b\n')).toBe('two problems:\n- a\n- b\n');
  });
});

describe('classifyHttpError (service-notes.md, Errors)', () => {
  const cases: Array<[string, number, string, ServiceErrorKind]> = [
    ['404 Project not found', 404, '{"title":"Project not found","detail":"Project name p does not exist"}', 'not-found'],
    ['404 Model not found', 404, '{"title":"Model not found","detail":"Model with name m.9 not found"}', 'not-found'],
    ['404 with an HTML body (a proxy or web server, not the service)', 404, '<html>Not Found</html>', 'wrong-url'],
    ['404 from a router that knows no such path', 404, '{"title":"Not Found"}', 'wrong-url'],
    ['401 credentials missing', 401, '{"title":"Unauthorized"}', 'unauthorized'],
    ['403 forbidden', 403, '', 'unauthorized'],
    ['415 not JSON', 415, '{"title":"Unsupported Media Type"}', 'fatal'],
    ['400 bad JSON', 400, '{"title":"Bad Request","detail":"Failed to decode JSON object"}', 'fatal'],
    ['500 KeyError (wrong envelope)', 500, '{"title":"KeyError","detail":"\'data\'","message":"\'data\'"}', 'wrong-envelope'],
    ['500 TypeError (wrong envelope)', 500, '{"title":"TypeError","detail":"list indices must be integers or slices, not str"}', 'wrong-envelope'],
    ['500 Exception model creation not completed', 500, '{"title":"Exception","detail":"Model creation not completed"}', 'not-ready'],
    ['500 not completed in message', 500, '{"title":"Exception","message":"Error: model creation not completed, status: generating"}', 'not-ready'],
    ['500 obsolete RETRAIN', 500, '{"title":"Exception","detail":"Model m is obsolete and needs to be updated. Run RETRAIN command."}', 'fatal'],
    ['500 MLEngineException', 500, '{"title":"MLEngineException","detail":"[lightwood/m]: ValueError: could not convert string to float"}', 'bad-rows'],
    ['500 other exception', 500, '{"title":"RuntimeError","detail":"worker crashed"}', 'retriable'],
    ['500 with an HTML body', 500, '<html>Internal Server Error</html>', 'retriable'],
    ['408 request timeout', 408, '', 'retriable'],
    ['429 overload', 429, '{"title":"Too Many Requests"}', 'retriable'],
    ['502 from a proxy', 502, '<html><body>502 Bad Gateway</body></html>', 'retriable'],
    ['503 overload', 503, '{"title":"Service Unavailable"}', 'retriable'],
    ['503 with an HTML body', 503, '<!DOCTYPE html><html><head><title>503</title></head><body>Service Unavailable</body></html>', 'retriable'],
    ['504 gateway timeout', 504, 'upstream request timeout', 'retriable'],
    ['422 unprocessable', 422, '{"title":"Unprocessable"}', 'fatal'],
    ['501 not implemented', 501, '', 'fatal'],
  ];

  it.each(cases)('%s → %s', (_what, status, body, kind) => {
    expect(classifyHttpError(status, parseProblem(body), DEFAULT_RETRY_POLICY)).toBe(kind);
  });

  it('retries only the statuses the policy lists', () => {
    const none: RetryPolicy = { ...DEFAULT_RETRY_POLICY, statuses: [] };
    expect(classifyHttpError(503, {}, none)).toBe('fatal');
    expect(classifyHttpError(418, {}, { ...DEFAULT_RETRY_POLICY, statuses: [418] })).toBe('retriable');
  });

  it('keeps 500 titles meaningful whatever the policy says', () => {
    const none: RetryPolicy = { ...DEFAULT_RETRY_POLICY, statuses: [] };
    expect(classifyHttpError(500, { title: 'KeyError' }, none)).toBe('wrong-envelope');
    expect(classifyHttpError(500, { title: 'MLEngineException' }, none)).toBe('bad-rows');
  });

  it('reads KeyError/TypeError only as a 500 title', () => {
    expect(classifyHttpError(400, { title: 'KeyError' }, DEFAULT_RETRY_POLICY)).toBe('fatal');
    expect(classifyHttpError(503, { title: 'TypeError' }, DEFAULT_RETRY_POLICY)).toBe('retriable');
  });
});

describe('describeHttpError', () => {
  it('names the call, the status, the title, the detail and a hint', () => {
    const problem = { title: 'TypeError', detail: 'list indices must be integers' };
    const message = describeHttpError('predict p/m', 500, problem, 'wrong-envelope');
    expect(message).toContain('predict p/m');
    expect(message).toContain('HTTP 500');
    expect(message).toContain('TypeError');
    expect(message).toContain('list indices must be integers');
    expect(message).toContain('--envelope');
  });

  it.each([
    ['array', '--envelope data, the body {"data": [...]}'],
    ['data', '--envelope array, the body a bare array [...]'],
  ] as const)('names the envelope to pass when a predict sent in the %s envelope was refused for it', (sent, flag) => {
    const message = describeHttpError('predict p/m', 500, { title: 'TypeError', detail: 'list indices' }, 'wrong-envelope', sent);
    expect(message).toContain(`(the server expects the other body envelope: pass ${flag}`);
  });

  it.each([
    ['not-ready', 'describe'],
    ['not-found', 'version'],
    ['unauthorized', 'MODEL_SERVICE_TOKEN'],
  ] as const)('gives a hint for %s', (kind, word) => {
    expect(describeHttpError('predict p/m', 500, { title: 'T', detail: 'D' }, kind)).toContain(word);
  });

  it('falls back to the message when there is no detail', () => {
    expect(describeHttpError('predict p/m', 500, { title: 'Exception', message: 'it broke' }, 'fatal')).toBe('predict p/m: HTTP 500 Exception: it broke');
  });

  it('says only the status when the body said nothing (an HTML page)', () => {
    expect(describeHttpError('predict p/m', 503, {}, 'retriable')).toBe('predict p/m: HTTP 503');
  });
});

describe('ServiceError', () => {
  const table: Array<[ServiceErrorKind, string, 1 | 2, boolean]> = [
    ['retriable', 'E_SERVICE_RETRIABLE', 1, true],
    ['not-ready', 'E_MODEL_NOT_READY', 1, true],
    ['wrong-envelope', 'E_WRONG_ENVELOPE', 2, false],
    ['bad-rows', 'E_BAD_ROWS', 1, false],
    ['not-found', 'E_MODEL_NOT_FOUND', 2, false],
    ['unauthorized', 'E_SERVICE_UNAUTHORIZED', 2, false],
    ['fatal', 'E_SERVICE_FATAL', 1, false],
  ];

  it.each(table)('%s has code %s, exit code %i, retriable %s', (kind, code, exitCode, retriable) => {
    const err = new ServiceError(kind, 'msg');
    expect(err.code).toBe(code);
    expect(err.exitCode).toBe(exitCode);
    expect(err.retriable).toBe(retriable);
    expect(err.kind).toBe(kind);
  });

  it('keeps the facts and the cause', () => {
    const cause = new Error('socket hang up');
    const err = new ServiceError('retriable', 'predict failed', { status: 503, title: 'T', detail: 'D', retryAfterMs: 2_000, cause });
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe('ServiceError');
    expect(err.message).toBe('predict failed');
    expect(err).toMatchObject({ status: 503, title: 'T', detail: 'D', retryAfterMs: 2_000 });
    expect(err.cause).toBe(cause);
  });
});

describe('parseModelRef', () => {
  it.each([
    ['p/m', { project: 'p', model: 'm' }],
    ['p/m.2', { project: 'p', model: 'm', version: 2 }],
    ['p/my.model.3', { project: 'p', model: 'my.model', version: 3 }],
    ['p/my.model', { project: 'p', model: 'my.model' }],
    ['mindsdb/home_rentals_model.12', { project: 'mindsdb', model: 'home_rentals_model', version: 12 }],
    ['p/m.v2', { project: 'p', model: 'm.v2' }],
  ])('reads %s', (text, ref) => {
    expect(parseModelRef(text)).toEqual(ref);
  });

  it.each(['', 'm', '/m', 'p/', '/', 'p/m/x', 'p//m'])('rejects %j with a UsageError naming it', (text) => {
    const error = thrown(() => parseModelRef(text), UsageError);
    expect(error.exitCode).toBe(2);
    expect(error.message).toContain(`"${text}"`);
    expect(error.message).toContain('project/model');
  });
});

describe('modelPathName and formatModelRef', () => {
  it('appends .N only when a version is pinned', () => {
    expect(modelPathName({ project: 'p', model: 'm' })).toBe('m');
    expect(modelPathName({ project: 'p', model: 'm', version: 2 })).toBe('m.2');
    expect(modelPathName({ project: 'p', model: 'my.model', version: 0 })).toBe('my.model.0');
  });

  it('round-trips through parseModelRef', () => {
    for (const text of ['p/m', 'p/m.2', 'p/my.model.3', 'proj/a.b']) {
      expect(formatModelRef(parseModelRef(text))).toBe(text);
    }
  });
});

describe('parseRetryAfter takes seconds or an HTTP date, nothing looser', () => {
  it.each(['-5', '1 2', 'abc 12', 'foo 1', '2026-01-01'])('%s is unreadable', (v) => {
    expect(parseRetryAfter(v)).toBeUndefined();
  });
  it('an HTTP date in the future', () => {
    const now = Date.parse('Wed, 21 Oct 2015 07:28:00 GMT');
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:28:30 GMT', now)).toBe(30_000);
  });
});
