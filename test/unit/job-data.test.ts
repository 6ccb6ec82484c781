import { describe, expect, it } from 'vitest';
import { errorCode } from '../../src/errors.js';
import { readJobData, runJobDataSchema, segmentJobDataSchema, type RunJobData, type SegmentJobData } from '../../src/queue/queues.js';
import { formatLocation, parseLocation } from '../../src/storage/location.js';

const job = (queueName: string, data: unknown) => ({ id: 'j1', queueName, data });

/** The error readJobData throws for `data`, or undefined when it reads. */
function refusal(schema: Parameters<typeof readJobData>[0], data: unknown): Error | undefined {
  try {
    readJobData(schema, job('segments', data));
    return undefined;
  } catch (err) {
    return err as Error;
  }
}

describe('a segment job’s data', () => {
  const stored: SegmentJobData = { runId: 'r1', folder: 's3://bucket/runs/r1', index: 3, generation: 1_700_000_000_000 };

  it('reads its folder as a location, and writes the same text back', () => {
    const read = readJobData(segmentJobDataSchema, job('segments', stored));
    expect(read).toEqual({ ...stored, folder: { kind: 's3', bucket: 'bucket', key: 'runs/r1' } });
    // What the run job writes for it (formatLocation), the text older workers read.
    expect({ ...read, folder: formatLocation(read.folder) }).toEqual(stored);
  });

  it('reads a local folder as an absolute path, unchanged', () => {
    const read = readJobData(segmentJobDataSchema, job('segments', { ...stored, folder: '/runs/out/r1' }));
    expect(read.folder).toEqual({ kind: 'file', path: '/runs/out/r1' });
    expect(formatLocation(read.folder)).toBe('/runs/out/r1');
  });

  it('is refused with E_USAGE naming each field that does not fit', () => {
    const bad = refusal(segmentJobDataSchema, { ...stored, folder: 'ftp://host/runs/r1', index: -1 });
    expect(errorCode(bad)).toBe('E_USAGE');
    expect(bad?.message).toMatch(
      /^job j1 of queue segments: its data cannot be read \(folder: location .*unsupported scheme 'ftp:\/\/'.*; index: must be at least 0\)$/,
    );
    expect(refusal(segmentJobDataSchema, { runId: 'r1', index: 0, generation: 1 })?.message).toMatch(/\(folder: must be text\)/);
  });

  it('is refused when its run id breaks the run-id rule, or its folder is not the run folder of its run', () => {
    expect(refusal(segmentJobDataSchema, { ...stored, runId: '../r1' })?.message).toMatch(/\(runId: use letters, digits, "\.", "_" and "-" \(at most 128\)/);
    expect(refusal(segmentJobDataSchema, { ...stored, folder: 's3://bucket/runs/other' })?.message).toMatch(
      /\(folder: must be the run folder <out>\/<runId> of its runId\)/,
    );
  });
});

describe('a run job’s data', () => {
  const stored: RunJobData = {
    runId: 'r1',
    request: { input: '/data/in/*.csv', model: 'p/m', out: 's3://bucket/runs', options: { batchSize: 10 }, trigger: { kind: 'api' } },
    step: 'score',
    startedAt: '2026-11-26T05:00:00.000Z',
    plannedAt: 1_700_000_000_000,
  };

  it('reads its run folder, <out>/<runId>, as a location and keeps the request as typed', () => {
    const read = readJobData(runJobDataSchema, job('runs', stored));
    expect(read.folder).toEqual({ kind: 's3', bucket: 'bucket', key: 'runs/r1' });
    const { folder, ...rest } = read;
    expect(rest).toEqual(stored);
    expect(formatLocation(folder)).toBe('s3://bucket/runs/r1');
  });

  it('reads the data an enqueuer of an older release wrote (no step yet)', () => {
    const fresh = { runId: 'r2', request: { input: '/data/a.csv', model: 'p/m', out: '/runs', options: {} } };
    expect(readJobData(runJobDataSchema, job('runs', fresh))).toEqual({ ...fresh, folder: parseLocation('/runs/r2') });
  });

  it('is refused with E_USAGE naming the output that is no location', () => {
    const bad = refusal(runJobDataSchema, { ...stored, request: { ...stored.request, out: 's3://' } });
    expect(errorCode(bad)).toBe('E_USAGE');
    expect(bad?.message).toMatch(/\(request\.out: location 's3:\/\/' has no valid bucket name/);
    expect(refusal(runJobDataSchema, { ...stored, request: { ...stored.request, options: 'fast' } })?.message).toMatch(
      /\(request\.options: must be an object\)/,
    );
    expect(refusal(runJobDataSchema, { ...stored, step: 'plan' })?.message).toMatch(/\(step: must be "score" or "assemble"\)/);
    // A run id names the run folder: one that climbs out of its output root is no run id.
    for (const runId of ['../manifest', '../../foreign/r1', '.hidden', '', 'a/b']) {
      expect(errorCode(refusal(runJobDataSchema, { ...stored, runId })), runId).toBe('E_USAGE');
      expect(refusal(runJobDataSchema, { ...stored, runId })?.message, runId).toMatch(/\(runId: /);
    }
  });
});
