import { describe, expect, it } from 'vitest';
import { inputPlanSchema, storedInputPlan, type InputPlan } from '../../src/scoring/plan.js';
import { parseLocation, storedLocationSchema } from '../../src/storage/location.js';

describe('storedLocationSchema', () => {
  it('parses stored text into a location once, at the read', () => {
    expect(storedLocationSchema.parse('s3://bucket/in/a.csv')).toEqual({ kind: 's3', bucket: 'bucket', key: 'in/a.csv' });
    expect(storedLocationSchema.parse('/data/a.csv')).toEqual({ kind: 'file', path: '/data/a.csv' });
  });

  it('refuses text that is no location as an issue of the schema reading it', () => {
    const result = storedLocationSchema.safeParse('ftp://host/a.csv');
    expect(result.success).toBe(false);
    expect(result.error?.issues[0].message).toMatch(/unsupported scheme 'ftp:\/\/'/);
  });
});

describe('an input plan in run.json', () => {
  const info = { size: 10, etag: '"e"' };
  const plan: InputPlan = {
    location: 's3://bucket/in/',
    files: [
      { location: parseLocation('s3://bucket/in/a.csv'), info, sha256: null, syntax: 'csv', gzip: false, columns: ['x'], rows: 1 },
      {
        location: parseLocation('s3://bucket/in/b.csv.gz'),
        info,
        sha256: 'abc',
        syntax: 'csv',
        gzip: true,
        columns: ['x'],
        rows: 2,
        staged: { location: parseLocation('/runs/r1/_work/inputs/00001.txt'), info: { size: 20 } },
      },
    ],
    syntax: 'csv',
    columns: ['x'],
    rows: 3,
    segments: [],
  };

  it('keeps its files’ locations as text, the format older releases wrote', () => {
    const stored = JSON.parse(JSON.stringify(storedInputPlan(plan))) as { files: { location: unknown; staged?: { location: unknown } }[] };
    expect(stored.files.map((f) => f.location)).toEqual(['s3://bucket/in/a.csv', 's3://bucket/in/b.csv.gz']);
    expect(stored.files[1].staged?.location).toBe('/runs/r1/_work/inputs/00001.txt');
  });

  it('reads back as the same plan, its locations parsed', () => {
    expect(inputPlanSchema.parse(JSON.parse(JSON.stringify(storedInputPlan(plan))))).toEqual(plan);
  });
});
