import { describe, expect, it } from 'vitest';
import { parseLocation } from '../../src/storage/location.js';
import { versionTag } from '../../src/storage/version-tag.js';
import { fileDropRunId, pipelinesFor } from '../../src/triggers/file-drop.js';
import type { FileDropPipeline, Pipeline } from '../../src/triggers/pipelines.js';
import { fileDropsOfEvent, s3EventSchema } from '../../src/triggers/s3-event.js';

const source = { file: 'jobs/test.yaml', document: 1 };
const pipeline = (name: string, prefix: string, suffix = '.csv'): FileDropPipeline => ({
  kind: 'trigger',
  name,
  model: 'mindsdb/home_rentals_model',
  output: 's3://results/out/',
  options: { maxErrorRate: 0.05 },
  trigger: { prefix, suffix },
  source,
});
const PIPELINES: Pipeline[] = [
  pipeline('inbox', 's3://inbox/rentals/'),
  pipeline('everything', 's3://inbox/', ''),
  {
    kind: 'schedule',
    name: 'nightly',
    model: 'mindsdb/home_rentals_model',
    input: 's3://inbox/rentals/x.csv',
    output: 's3://results/n/',
    options: {},
    schedule: { cron: '0 2 * * *', tz: 'UTC' },
    source,
  },
];
const NOW = new Date('2026-11-23T10:00:00Z');

/** An AWS S3 event record as S3 sends it. */
function awsRecord(bucket: string, key: string, eTag = 'd41d8cd98f00b204e9800998ecf8427e', eventName = 'ObjectCreated:Put') {
  return {
    eventVersion: '2.1',
    eventSource: 'aws:s3',
    awsRegion: 'us-east-1',
    eventTime: '2026-11-22T23:59:58.000Z',
    eventName,
    userIdentity: { principalId: 'EXAMPLE' },
    s3: {
      s3SchemaVersion: '1.0',
      configurationId: 'inbox',
      bucket: { name: bucket, arn: `arn:aws:s3:::${bucket}` },
      object: { key, size: 1024, eTag, sequencer: '0A1B2C3D4E5F678901' },
    },
  };
}

const parse = (body: unknown) => s3EventSchema.parse(body);
const drops = (body: unknown) => fileDropsOfEvent(parse(body), PIPELINES, NOW);

describe('S3 event notifications', () => {
  it('reads AWS records: keys decoded (+ is a space, %2B a plus), one run per watching pipeline, dated by the event', () => {
    const { drops: found, ignored } = drops({ Records: [awsRecord('inbox', 'rentals/new+file%2B1.csv')] });
    expect(ignored).toEqual([]);
    expect(found.map((d) => [d.trigger.pipeline, d.input, d.options.runId])).toEqual([
      ['inbox', 's3://inbox/rentals/new file+1.csv', expect.stringMatching(/^inbox-20261122-[0-9a-f]{12}$/)],
      ['everything', 's3://inbox/rentals/new file+1.csv', expect.stringMatching(/^everything-20261122-[0-9a-f]{12}$/)],
    ]);
    expect(found[0]).toMatchObject({
      model: 'mindsdb/home_rentals_model',
      out: 's3://results/out/',
      options: { maxErrorRate: 0.05 },
      trigger: {
        kind: 'event',
        pipeline: 'inbox',
        eventName: 'ObjectCreated:Put',
        eventTime: '2026-11-22T23:59:58.000Z',
        object: { location: 's3://inbox/rentals/new file+1.csv', etag: 'd41d8cd98f00b204e9800998ecf8427e', size: 1024 },
      },
    });
  });

  it("reads MinIO's webhook body (EventName, Key, s3: event names, version ids)", () => {
    const record = { ...awsRecord('inbox', 'rentals/a%20b.csv', '"abc123"', 's3:ObjectCreated:CompleteMultipartUpload'), eventSource: 'minio:s3' };
    record.s3.object = { ...record.s3.object, versionId: 'v-7' } as typeof record.s3.object;
    const { drops: found } = drops({ EventName: 's3:ObjectCreated:CompleteMultipartUpload', Key: 'inbox/rentals/a b.csv', Records: [record] });
    expect(found.map((d) => d.trigger)).toContainEqual(
      expect.objectContaining({
        pipeline: 'inbox',
        eventName: 's3:ObjectCreated:CompleteMultipartUpload',
        object: expect.objectContaining({ location: 's3://inbox/rentals/a b.csv', etag: 'abc123', versionId: 'v-7' }) as unknown,
      }),
    );
  });

  it('ignores other event kinds, undeclared buckets and prefixes, other suffixes and folder markers; a duplicate in one message is one run', () => {
    const { drops: found, ignored } = drops({
      Records: [
        awsRecord('inbox', 'rentals/x.csv', 'e1', 'ObjectRemoved:Delete'),
        awsRecord('elsewhere', 'rentals/x.csv'),
        awsRecord('inbox', 'rentals/'),
        awsRecord('inbox', 'other/x.json'),
        awsRecord('inbox', 'rentals/x.json'),
        awsRecord('inbox', 'rentals/x.csv', 'e2'),
        awsRecord('inbox', 'rentals/x.csv', 'e2'),
      ],
    });
    expect(ignored.map((i) => [i.bucket, i.key, i.reason])).toEqual([
      ['inbox', 'rentals/x.csv', 'not ObjectCreated'],
      ['elsewhere', 'rentals/x.csv', 'no pipeline watches it'],
      ['inbox', 'rentals/', 'no pipeline watches it'],
    ]);
    // Only 'everything' (any suffix) takes other/x.json and rentals/x.json; neither takes the folder marker.
    expect(found.map((d) => `${d.trigger.pipeline} ${d.input}`)).toEqual([
      'everything s3://inbox/other/x.json',
      'everything s3://inbox/rentals/x.json',
      'inbox s3://inbox/rentals/x.csv',
      'everything s3://inbox/rentals/x.csv',
    ]);
  });

  it('takes the AWS test event, and refuses a malformed body naming the field', () => {
    expect(drops({ Service: 'Amazon S3', Event: 's3:TestEvent', Time: '2026-11-23T10:00:00Z', Bucket: 'inbox', RequestId: 'R', HostId: 'H' })).toEqual({
      drops: [],
      ignored: [],
    });
    const issues = (body: unknown) => s3EventSchema.safeParse(body).error?.issues.map((i) => i.path.join('.'));
    expect(issues({})).toEqual(['Records']);
    expect(issues({ Records: [{ eventName: 'ObjectCreated:Put', s3: { bucket: { name: 'inbox' }, object: { key: 'k.csv' } } }] })).toEqual([
      'Records.0.s3.object.eTag',
    ]);
    expect(issues({ Records: [{ eventName: 'ObjectCreated:Put', s3: { bucket: { name: 'inbox' } } }] })).toEqual(['Records.0.s3.object']);
    expect(issues({ Records: [awsRecord('inbox', 'rentals/100%.csv')] })).toEqual(['Records.0.s3.object.key']);
  });

  it('dates runs by now when the event has no time; ids are readable and keep to the run id rules', () => {
    const record = awsRecord('inbox', 'rentals/x.csv');
    const { eventTime: _time, ...untimed } = record;
    expect(drops({ Records: [untimed] }).drops[0].options.runId).toMatch(/^inbox-20261123-[0-9a-f]{12}$/);
    const object = { location: 's3://inbox/rentals/x.csv', etag: 'e1' };
    expect(fileDropRunId('inbox', object, NOW)).toBe(fileDropRunId('inbox', object, NOW));
    expect(fileDropRunId('inbox', object, NOW)).not.toBe(fileDropRunId('inbox', { ...object, etag: 'e2' }, NOW));
    expect(fileDropRunId('p'.repeat(64), object, NOW)).toMatch(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/);
  });
});

describe('file versions', () => {
  it('unquotes ETags and names local versions by size and modification time', () => {
    expect(versionTag({ etag: '"9b2cf535f27731c974343645a3985328"', size: 1 })).toBe('9b2cf535f27731c974343645a3985328');
    expect(versionTag({ etag: '9b2cf535f27731c974343645a3985328-2', size: 1 })).toBe('9b2cf535f27731c974343645a3985328-2');
    expect(versionTag({ size: 120, mtimeMs: 1763891234567.891 })).toBe('120-1763891234567');
  });

  it('matches local files below a watched folder only', () => {
    const local = [pipeline('local', '/data/inbox/')];
    expect(pipelinesFor(local, parseLocation('/data/inbox/a/b.csv')).map((p) => p.name)).toEqual(['local']);
    expect(pipelinesFor(local, parseLocation('/data/inbox-2/b.csv'))).toEqual([]);
    expect(pipelinesFor(local, parseLocation('/data/inbox/b.txt'))).toEqual([]);
    expect(pipelinesFor(local, parseLocation('s3://data/inbox/b.csv'))).toEqual([]);
    // A file URL keeps the folder's trailing slash that a plain path loses: the same folder.
    const url = [pipeline('url', 'file:///data/inbox/')];
    expect(pipelinesFor(url, parseLocation('/data/inbox/a/b.csv')).map((p) => p.name)).toEqual(['url']);
    expect(pipelinesFor(url, parseLocation('/data/inbox-2/b.csv'))).toEqual([]);
  });
});
