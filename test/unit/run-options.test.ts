import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/errors.js';
import { MAX_PARAMS_BYTES, MAX_PARAMS_DEPTH, optionFlag, parseRunOptions, processConcurrency, runOptionsSchema } from '../../src/config/run-options.js';
import { requestDifference, withNeutralOptions, type RunRequest } from '../../src/scoring/run-request.js';
import { JOB_PRIORITY, runPriority } from '../../src/queue/queues.js';
import { thrown } from '../helpers/rejection.js';

function usageError(input: unknown, source?: string): UsageError {
  return thrown(() => parseRunOptions(input, source), UsageError);
}

describe('parseRunOptions', () => {
  it('fills every default from the design', () => {
    expect(parseRunOptions({})).toEqual({
      service: 'http://127.0.0.1:47334',
      batchSize: 1000,
      maxBatchBytes: 4 * 1024 * 1024,
      timeout: 60_000,
      retries: 6,
      maxErrorRate: 0.01,
      explain: false,
      envelope: 'data',
      params: {},
      strictColumns: false,
      segmentRows: 20_000,
      rowIdMember: 'auto',
      onModelChange: 'fail',
      driftWarn: 0.1,
      segmentsAtOnce: 2,
      priority: 'normal',
      rowNumber: false,
      outputPerFile: false,
      quote: '"',
      encoding: 'utf-8',
      outputEncoding: 'utf-8',
    });
  });

  it('leaves format, limit and runId unset by default', () => {
    const options = parseRunOptions({});
    expect(options.format).toBeUndefined();
    expect(options.limit).toBeUndefined();
    expect(options.runId).toBeUndefined();
  });

  it('keeps given values', () => {
    const input = {
      service: 'https://gateway.example/v1',
      format: 'jsonl',
      batchSize: 1,
      maxBatchBytes: 1024,
      concurrency: 256,
      timeout: 100,
      retries: 0,
      maxErrorRate: 1,
      explain: true,
      envelope: 'array',
      params: { partition_size: 100, mode: 'fast' },
      limit: 10,
      runId: 'nightly-2025.03_01',
      strictColumns: true,
      segmentRows: 1,
      rowIdMember: '__mindsdb_row_id',
      onModelChange: 'warn',
      driftWarn: 0.2,
      driftFail: 0.5,
      baselineRun: 'nightly-2025.03_00',
      segmentsAtOnce: 8,
      priority: 'low',
      keepColumns: ['a', 'b'],
      dropColumns: ['b'],
      predictionColumns: ['value', 'interval'],
      rowNumber: true,
      outputPerFile: true,
      compress: 'gzip',
      maxRowsPerFile: 1000,
      delimiter: ';',
      quote: "'",
      encoding: 'latin1',
      outputEncoding: 'windows-1252',
    } as const;
    expect(parseRunOptions(input)).toEqual(input);
  });

  it('reads tab as a tab delimiter', () => {
    expect(parseRunOptions({ delimiter: 'tab' }).delimiter).toBe('\t');
    expect(parseRunOptions({ delimiter: '\\t' }).delimiter).toBe('\t');
  });

  it('takes a row id member name or auto, nothing else', () => {
    expect(parseRunOptions({ rowIdMember: '__acme_row_id' }).rowIdMember).toBe('__acme_row_id');
    expect(usageError({ rowIdMember: 'a b' }).message).toMatch(/rowIdMember: use auto or a member name/);
  });

  it('writes options as flags the way users type them', () => {
    expect(optionFlag('maxErrorRate')).toBe('--max-error-rate');
    expect(optionFlag('batchSize')).toBe('--batch-size');
    expect(optionFlag('params')).toBe('--param');
    expect(optionFlag('explain')).toBe('--explain');
  });

  it('accepts maxErrorRate 0 (no row may be quarantined)', () => {
    expect(parseRunOptions({ maxErrorRate: 0 }).maxErrorRate).toBe(0);
  });

  it('rejects an unknown option, naming it', () => {
    const err = usageError({ batchSize: 10, batchsize: 10 });
    expect(err.code).toBe('E_USAGE');
    expect(err.exitCode).toBe(2);
    expect(err.message).toContain('"batchsize"');
    expect(err.message).toMatch(/unknown option/);
  });

  it('names every unknown option', () => {
    const err = usageError({ foo: 1, bar: 2 });
    expect(err.message).toContain('"foo"');
    expect(err.message).toContain('"bar"');
  });

  it('starts the message with the source', () => {
    expect(usageError({ batchSize: 0 }, 'jobs/nightly.yaml').message).toMatch(/^jobs\/nightly\.yaml: /);
    expect(usageError({ batchSize: 0 }).message).toMatch(/^run options: /);
  });

  it.each([
    ['batchSize', { batchSize: 0 }],
    ['batchSize', { batchSize: 1.5 }],
    ['batchSize', { batchSize: 100_001 }],
    ['batchSize', { batchSize: '10' }],
    ['maxBatchBytes', { maxBatchBytes: 1023 }],
    ['concurrency', { concurrency: 0 }],
    ['concurrency', { concurrency: 257 }],
    ['concurrency', { concurrency: 'fast' }],
    ['timeout', { timeout: 99 }],
    ['retries', { retries: -1 }],
    ['retries', { retries: 51 }],
    ['maxErrorRate', { maxErrorRate: 2 }],
    ['maxErrorRate', { maxErrorRate: -0.1 }],
    ['format', { format: 'xlsx' }],
    ['envelope', { envelope: 'wrapped' }],
    ['limit', { limit: 0 }],
    ['runId', { runId: 'a/b' }],
    ['runId', { runId: '../escape' }],
    ['runId', { runId: '.hidden' }],
    ['runId', { runId: '' }],
    ['runId', { runId: 'x'.repeat(129) }],
    ['segmentRows', { segmentRows: 0 }],
    ['rowIdMember', { rowIdMember: '' }],
    ['service', { service: 'not a url' }],
    ['explain', { explain: 'yes' }],
    ['params', { params: [1, 2] }],
  ])('names %s in the message for a bad value', (name, input) => {
    const err = usageError(input);
    expect(err.message).toContain(`${name}: `);
  });

  it('explains what a run id may hold', () => {
    expect(usageError({ runId: 'a/b' }).message).toContain('letters, digits');
  });

  it('accepts a 128-character run id', () => {
    expect(parseRunOptions({ runId: 'a'.repeat(128) }).runId).toHaveLength(128);
  });

  it('names each bad option when several are bad', () => {
    const err = usageError({ batchSize: 0, maxErrorRate: 2 });
    expect(err.message).toContain('batchSize: ');
    expect(err.message).toContain('maxErrorRate: ');
  });

  it('says what a bad value must be', () => {
    expect(usageError({ maxErrorRate: 3 }).message).toBe('run options: maxErrorRate: must be at most 1');
    expect(usageError({ batchSize: 0 }).message).toBe('run options: batchSize: must be at least 1');
    expect(usageError({ batchSize: 1.5 }).message).toBe('run options: batchSize: must be a whole number');
    expect(usageError({ concurrency: 'fast' }).message).toBe('run options: concurrency: must be a number or "auto"');
    expect(usageError({ format: 'xlsx' }).message).toBe('run options: format: must be "csv" or "jsonl" or "parquet"');
    expect(usageError({ delimiter: ';;' }).message).toBe('run options: delimiter: must be one ASCII character other than a line break (tab or \\t for a tab)');
    expect(usageError({ encoding: 'klingon' }).message).toBe('run options: encoding: must be a text encoding such as utf-8, latin1, windows-1252 or utf-16le');
    expect(usageError({ predictionColumns: ['probability'] }).message).toMatch(/^run options: predictionColumns.0: must be "value" or "confidence"/);
    expect(usageError({ rowIdMember: '' }).message).toBe('run options: rowIdMember: use auto or a member name such as __mindsdb_row_id');
  });

  it('names options by their flags when they came from flags', () => {
    const err = thrown(() => parseRunOptions({ maxErrorRate: 3, segmentRows: 0, params: [1] }, 'score', 'flags'), UsageError);
    expect(err.message).toBe('score: --max-error-rate: must be at most 1; --param: must be an object; --segment-rows: must be at least 1');
  });

  it('rejects input that is not an object', () => {
    usageError(null);
    usageError('batchSize=10');
  });
});

describe('priority', () => {
  it('is high, normal (the default) or low, nothing else', () => {
    expect(parseRunOptions({ priority: 'high' }).priority).toBe('high');
    expect(usageError({ priority: 'urgent' }).message).toBe('run options: priority: must be "high" or "normal" or "low"');
    expect(usageError({ priority: 1 }).message).toBe('run options: priority: must be "high" or "normal" or "low"');
  });

  it('maps to BullMQ priorities, lower sooner, and none is 0 (which BullMQ would take before all)', () => {
    expect([runPriority({ priority: 'high' }), runPriority({}), runPriority({ priority: 'low' })].map((p) => JOB_PRIORITY[p])).toEqual([1, 2, 3]);
    // Job data of another producer asking a priority this release does not know: normal.
    expect(runPriority({ priority: 'urgent' } as never)).toBe('normal');
  });

  it('never makes another run: a resume may ask another, and it takes effect', () => {
    const request = (priority: 'high' | 'low'): RunRequest => ({ input: '/in.csv', model: 'p/m', out: '/out', options: parseRunOptions({ priority }) });
    expect(requestDifference(request('low'), request('high'))).toBeUndefined();
    expect(withNeutralOptions(request('low'), { priority: 'high' }).options.priority).toBe('high');
  });
});

describe('params limits', () => {
  /** Params whose member `p` holds arrays nested so that the params object is `levels` deep. */
  const nested = (levels: number) => JSON.parse(`{"p":${'['.repeat(levels - 1)}${']'.repeat(levels - 1)}}`) as Record<string, unknown>;

  it(`takes params ${MAX_PARAMS_DEPTH} levels deep and refuses one more, naming --param`, () => {
    expect(parseRunOptions({ params: nested(MAX_PARAMS_DEPTH) }).params).toEqual(nested(MAX_PARAMS_DEPTH));
    const err = thrown(() => parseRunOptions({ params: nested(MAX_PARAMS_DEPTH + 1) }, 'score', 'flags'), UsageError);
    expect(err.message).toBe(`score: --param: must nest at most ${MAX_PARAMS_DEPTH} levels deep (the params object is one)`);
  });

  it.each([1500, 6000, 200_000])('refuses params %i levels deep as E_USAGE, without overflowing the stack', (levels) => {
    const err = usageError({ params: nested(levels) });
    expect(err.code).toBe('E_USAGE');
    expect(err.message).toContain('params: must nest at most');
  });

  it(`takes ${MAX_PARAMS_BYTES / 1024} KiB of params as JSON and refuses a byte more, saying how many`, () => {
    const filler = (bytes: number) => ({ p: 'x'.repeat(bytes - '{"p":""}'.length) });
    expect(parseRunOptions({ params: filler(MAX_PARAMS_BYTES) }).params).toEqual(filler(MAX_PARAMS_BYTES));
    expect(usageError({ params: filler(MAX_PARAMS_BYTES + 1) }).message).toBe(
      `run options: params: must take at most ${MAX_PARAMS_BYTES / 1024} KiB as JSON, not ${MAX_PARAMS_BYTES + 1} bytes`,
    );
  });

  it('counts the bytes of UTF-8, not characters', () => {
    const chars = Math.floor(MAX_PARAMS_BYTES / 3);
    expect(usageError({ params: { p: '€'.repeat(chars) } }).message).toContain('params: must take at most');
  });

  it('refuses params that are not plain JSON (a cycle, as YAML aliases can make)', () => {
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(usageError({ params: cycle }).message).toBe('run options: params: must be plain JSON (no cycles)');
  });
});

describe('concurrency', () => {
  it('keeps "auto" as given, and a number as given; unset stays unset, which score takes as 4', () => {
    expect(parseRunOptions({ concurrency: 'auto' }).concurrency).toBe('auto');
    expect(parseRunOptions({ concurrency: 3 }).concurrency).toBe(3);
    // Queue mode tells "none asked" (the workers' caps alone) from 4 (a fleet-wide budget).
    expect(parseRunOptions({}).concurrency).toBeUndefined();
    expect(processConcurrency(parseRunOptions({}))).toBe(4);
    expect(processConcurrency(parseRunOptions({ concurrency: 'auto' }))).toBe('auto');
  });
});

describe('runOptionsSchema', () => {
  it('is strict', () => {
    expect(runOptionsSchema.safeParse({ unknown: true }).success).toBe(false);
  });
});

describe('service must be http(s)', () => {
  it.each(['ftp://x', 'file:///etc/passwd', 'javascript:alert(1)'])('%s is refused', (service) => {
    expect(() => parseRunOptions({ service })).toThrow(/service: must be an http\(s\) URL/);
  });
  it('https with a path prefix is fine', () => {
    expect(parseRunOptions({ service: 'https://gateway.example/v1' }).service).toBe('https://gateway.example/v1');
  });
});

describe('service URL credentials', () => {
  it('are refused, pointing at MODEL_SERVICE_TOKEN', () => {
    expect(() => parseRunOptions({ service: 'https://user:secret@gateway.example/v1' })).toThrow(
      /must not carry credentials or a query string; set MODEL_SERVICE_TOKEN/,
    );
    expect(() => parseRunOptions({ service: 'https://gateway.example/v1?api_key=abc' })).toThrow(/query string/);
  });
});
