import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BatchScorerError } from '../../src/errors.js';
import { datasetName } from '../../src/lineage/dataset-name.js';
import { lineageSettingsFromEnv } from '../../src/config/lineage-settings.js';
import { endEvent, startEvent } from '../../src/lineage/run-event.js';
import { lineageRunId } from '../../src/lineage/run-uuid.js';
import { buildManifest } from '../../src/pipeline/manifest.js';
import { eventProblems } from '../helpers/lineage-schema.js';
import { thrown } from '../helpers/rejection.js';

const UUID_V5 = /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('lineage dataset names', () => {
  it('names an S3 object by its bucket and key, a local file by its absolute path', () => {
    expect(datasetName('s3://data/in/rentals.csv')).toEqual({ namespace: 's3://data', name: 'in/rentals.csv' });
    expect(datasetName('s3://results/runs/r1/predictions.csv.gz')).toEqual({ namespace: 's3://results', name: 'runs/r1/predictions.csv.gz' });
    expect(datasetName('/tmp/in/rentals.csv')).toEqual({ namespace: 'file', name: '/tmp/in/rentals.csv' });
    expect(datasetName('in/rentals.csv')).toEqual({ namespace: 'file', name: resolve('in/rentals.csv') });
    expect(datasetName('file:///tmp/in/a%20b.csv')).toEqual({ namespace: 'file', name: '/tmp/in/a b.csv' });
  });

  it('names no dataset for a folder, a glob or text that is no location', () => {
    expect(datasetName('s3://data/in/')).toBeUndefined();
    expect(datasetName('s3://data/in/part-*.csv')).toBeUndefined();
    expect(datasetName('/tmp/in/')).toBeUndefined();
    expect(datasetName('ftp://host/file.csv')).toBeUndefined();
    expect(datasetName('')).toBeUndefined();
  });
});

describe('lineage run UUIDs', () => {
  it('are version 5 UUIDs of the run folder, the same in every process and release', () => {
    const id = lineageRunId('/data/out/nightly-0301');
    expect(id).toMatch(UUID_V5);
    expect(id).toBe(lineageRunId('/data/out/nightly-0301'));
    // Pinned, as Python's uuid.uuid5(UUID('ba1f5d91-4426-4883-9c47-00ab1b7168b2'), '/data/out/nightly-0301') computes it:
    // a change would part the ends of runs a release started from their starts.
    expect(id).toBe('53297cdd-1009-5828-8d42-32705f5646d8');
  });

  it('differ for one run id under two outputs', () => {
    const a = lineageRunId('/data/out/r1');
    const b = lineageRunId('s3://results/out/r1');
    expect(a).not.toBe(b);
    expect(b).toMatch(UUID_V5);
  });
});

describe('lineage settings', () => {
  it('are off without OPENLINEAGE_URL, and post to <url>/api/v1/lineage in namespace batch-scorer by default', () => {
    expect(lineageSettingsFromEnv({})).toBeUndefined();
    expect(lineageSettingsFromEnv({ OPENLINEAGE_URL: '  ' })).toBeUndefined();
    expect(lineageSettingsFromEnv({ OPENLINEAGE_URL: 'http://marquez:5000' })).toEqual({
      endpoint: 'http://marquez:5000/api/v1/lineage',
      namespace: 'batch-scorer',
    });
    expect(
      lineageSettingsFromEnv({
        OPENLINEAGE_URL: 'https://lineage.example/proxy/',
        OPENLINEAGE_ENDPOINT: '/events',
        OPENLINEAGE_NAMESPACE: 'scoring-prod',
        OPENLINEAGE_API_KEY: 'k3y',
      }),
    ).toEqual({ endpoint: 'https://lineage.example/proxy/events', namespace: 'scoring-prod', apiKey: 'k3y' });
  });

  it('refuses what is no http(s) URL, and credentials without quoting them', () => {
    const refused = (env: NodeJS.ProcessEnv) => thrown(() => lineageSettingsFromEnv(env), BatchScorerError);
    expect(refused({ OPENLINEAGE_URL: 'not a url' }).code).toBe('E_CONFIG');
    expect(refused({ OPENLINEAGE_URL: 'ftp://marquez' }).message).toMatch(/OPENLINEAGE_URL must be an http\(s\) URL/);
    const creds = refused({ OPENLINEAGE_URL: 'http://user:s3cr3t-pw@marquez:5000' });
    expect(creds.message).toMatch(/must not carry credentials.*OPENLINEAGE_API_KEY/);
    expect(creds.message).not.toContain('s3cr3t-pw');
    expect(refused({ OPENLINEAGE_URL: 'http://marquez', OPENLINEAGE_ENDPOINT: 'a b' }).message).toMatch(/OPENLINEAGE_ENDPOINT/);
    expect(refused({ OPENLINEAGE_URL: 'http://marquez', OPENLINEAGE_NAMESPACE: 'a b' }).message).toMatch(/OPENLINEAGE_NAMESPACE/);
  });
});

describe('lineage end events', () => {
  const request = { input: '/data/in.csv', model: 'mindsdb/home_rentals_model', options: {} };
  const ended = (error?: BatchScorerError) =>
    buildManifest({ runId: 'r1', startedAt: new Date().toISOString(), folder: { kind: 'file', path: '/data/out/r1' }, request, ...(error && { error }) });

  it('say FAIL for a failed run and ABORT for a cancelled one, with the error, in the START event run', () => {
    const failed = endEvent(ended(new BatchScorerError('E_MODEL_NOT_FOUND', 'no such model')), 'ns')!;
    expect(failed.eventType).toBe('FAIL');
    expect(failed.run.runId).toBe(lineageRunId('/data/out/r1'));
    expect(failed.run.facets.errorMessage).toMatchObject({ message: 'E_MODEL_NOT_FOUND: no such model', programmingLanguage: 'JavaScript' });
    expect(failed.inputs).toEqual([{ namespace: 'file', name: '/data/in.csv' }]);
    expect(failed.job).toMatchObject({ namespace: 'ns', name: 'mindsdb.home_rentals_model' });
    expect(endEvent(ended(new BatchScorerError('E_CANCELLED', 'run r1 cancelled')), 'ns')!.eventType).toBe('ABORT');
  });

  it('are not sent for a run whose folder was found to be another run’s', () => {
    expect(endEvent(ended(new BatchScorerError('E_RUN_EXISTS', 'taken')), 'ns')).toBeUndefined();
  });
});

describe('lineage events of pipeline runs and S3 files', () => {
  const trigger = { kind: 'schedule' as const, pipeline: 'nightly-rentals', fireTime: '2026-11-24T01:00:00.000Z', cron: '0 1 * * *', tz: 'UTC' };
  const request = { input: 's3://data/in/rentals.csv', out: 's3://results/runs/', model: 'mindsdb/home_rentals_model.2', options: {} as never, trigger };

  it('name the pipeline as the job, with the fire time as nominal time, and S3 datasets; every event valid', () => {
    const start = startEvent(
      {
        runId: 'nightly-rentals-0301',
        request,
        folder: { kind: 's3', bucket: 'results', key: 'runs/nightly-rentals-0301' },
        startedAt: '2026-11-24T01:00:02.000Z',
        attempt: 1,
      },
      'prod',
    );
    expect(start.job).toMatchObject({
      namespace: 'prod',
      name: 'nightly-rentals',
      facets: { batchScorerModel: { project: 'mindsdb', name: 'home_rentals_model', requestedVersion: 2 } },
    });
    expect(start.run.facets.nominalTime).toMatchObject({ nominalStartTime: '2026-11-24T01:00:00.000Z' });
    expect(start.run.facets.batchScorer).toMatchObject({ trigger: 'schedule', pipeline: 'nightly-rentals' });
    expect(start.inputs).toEqual([{ namespace: 's3://data', name: 'in/rentals.csv' }]);
    expect(start.run.runId).toBe(lineageRunId('s3://results/runs/nightly-rentals-0301'));
    expect(eventProblems(start)).toBeUndefined();

    const manifest = {
      ...buildManifest({
        runId: 'nightly-rentals-0301',
        startedAt: start.eventTime,
        folder: { kind: 's3', bucket: 'results', key: 'runs/nightly-rentals-0301' },
        request,
      }),
      state: 'succeeded' as const,
      error: undefined,
      outputs: [{ file: 'predictions.csv', location: 's3://results/runs/nightly-rentals-0301/predictions.csv', rows: 7, bytes: 512, sha256: 'x' }],
    };
    const complete = endEvent(manifest, 'prod')!;
    expect(complete.eventType).toBe('COMPLETE');
    expect(complete.run.runId).toBe(start.run.runId);
    expect(complete.job.name).toBe('nightly-rentals');
    expect(complete.outputs).toMatchObject([
      { namespace: 's3://results', name: 'runs/nightly-rentals-0301/predictions.csv', outputFacets: { outputStatistics: { rowCount: 7, size: 512 } } },
    ]);
    expect(eventProblems(complete)).toBeUndefined();
  });

  it('the schema refuses an event without what the spec requires', () => {
    const start = startEvent({ runId: 'r', request, folder: { kind: 'file', path: '/out/r' }, startedAt: '2026-11-24T01:00:02.000Z', attempt: 1 }, 'ns');
    expect(eventProblems({ ...start, run: { runId: 'r' } })).toMatch(/\/run\/runId must match pattern/);
    expect(eventProblems({ ...start, schemaURL: undefined })).toMatch(/must have required property 'schemaURL'/);
    const { _producer: _, ...unsigned } = start.job.facets.jobType;
    expect(eventProblems({ ...start, job: { ...start.job, facets: { jobType: unsigned } } })).toMatch(/_producer/);
    expect(eventProblems({ ...start, eventTime: '24/11/2026' })).toMatch(/\/eventTime must match pattern/);
  });
});
