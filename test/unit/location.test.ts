import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/errors.js';
import { basename, formatLocation, joinLocation, parseLocation } from '../../src/storage/location.js';
import { thrown } from '../helpers/rejection.js';

describe('parseLocation', () => {
  it('reads s3 URLs, keeping the key as written', () => {
    expect(parseLocation('s3://data/rentals/latest.csv')).toEqual({ kind: 's3', bucket: 'data', key: 'rentals/latest.csv' });
    expect(parseLocation('s3://data/my file%20x.csv')).toEqual({ kind: 's3', bucket: 'data', key: 'my file%20x.csv' });
    expect(parseLocation('s3://results/rentals/')).toEqual({ kind: 's3', bucket: 'results', key: 'rentals/' });
    expect(parseLocation('s3://results')).toEqual({ kind: 's3', bucket: 'results', key: '' });
    expect(parseLocation('S3://results/a')).toEqual({ kind: 's3', bucket: 'results', key: 'a' });
  });

  it('reads file URLs and plain paths as absolute paths', () => {
    expect(parseLocation('file:///tmp/in%20put.csv')).toEqual({ kind: 'file', path: '/tmp/in put.csv' });
    expect(parseLocation('/abs/x.csv')).toEqual({ kind: 'file', path: '/abs/x.csv' });
    expect(parseLocation('rel/x.csv')).toEqual({ kind: 'file', path: path.resolve('rel/x.csv') });
    expect(parseLocation('./x.csv')).toEqual({ kind: 'file', path: path.join(process.cwd(), 'x.csv') });
  });

  it.each([
    ['s3://', /no valid bucket/],
    ['s3:///key', /no valid bucket/],
    ['gs://bucket/key', /unsupported scheme 'gs:\/\/'/],
    ['https://example.com/x.csv', /unsupported scheme 'https:\/\/'/],
    ['file://host/x.csv', /not a valid file URL/],
    ['  ', /empty/],
  ])('rejects %j with a UsageError naming it', (text, message) => {
    const error = thrown(() => parseLocation(text), UsageError);
    expect(error.code).toBe('E_USAGE');
    expect(error.message).toMatch(message);
    if (text.trim() !== '') expect(error.message).toContain(text);
  });
});

describe('formatLocation', () => {
  it('round-trips s3 URLs and gives absolute paths', () => {
    for (const text of ['s3://data/rentals/latest.csv', 's3://results/rentals/', 's3://b/']) {
      expect(formatLocation(parseLocation(text))).toBe(text);
    }
    expect(formatLocation(parseLocation('s3://b'))).toBe('s3://b/');
    expect(formatLocation(parseLocation('file:///tmp/a.csv'))).toBe('/tmp/a.csv');
  });
});

describe('joinLocation', () => {
  it('joins s3 keys with single slashes', () => {
    const out = parseLocation('s3://results/rentals/');
    expect(joinLocation(out, 'run-1', 'predictions.csv')).toEqual({
      kind: 's3',
      bucket: 'results',
      key: 'rentals/run-1/predictions.csv',
    });
    expect(formatLocation(joinLocation(parseLocation('s3://results/rentals'), '/run-1/', '/x'))).toBe('s3://results/rentals/run-1/x');
    expect(formatLocation(joinLocation(parseLocation('s3://results'), 'run-1//a', 'b'))).toBe('s3://results/run-1/a/b');
    expect(formatLocation(joinLocation(parseLocation('s3://results/r'), 'run-1/'))).toBe('s3://results/r/run-1/');
    expect(formatLocation(joinLocation(parseLocation('s3://results/r'), '', 'a'))).toBe('s3://results/r/a');
  });

  it('joins file paths with path.join', () => {
    expect(joinLocation(parseLocation('/out/runs/'), 'run-1', 'manifest.json')).toEqual({
      kind: 'file',
      path: '/out/runs/run-1/manifest.json',
    });
  });

  it('leaves the original untouched', () => {
    const out = parseLocation('s3://results/a');
    joinLocation(out, 'b');
    expect(out).toEqual({ kind: 's3', bucket: 'results', key: 'a' });
  });
});

describe('basename', () => {
  it('gives the last segment', () => {
    expect(basename(parseLocation('s3://data/rentals/latest.csv'))).toBe('latest.csv');
    expect(basename(parseLocation('s3://data/rentals/'))).toBe('rentals');
    expect(basename(parseLocation('s3://data'))).toBe('');
    expect(basename(parseLocation('/tmp/in/x.csv.gz'))).toBe('x.csv.gz');
  });
});
