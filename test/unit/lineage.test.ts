import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BatchScorerError } from '../../src/errors.js';
import { datasetName } from '../../src/lineage/dataset-name.js';
import { lineageSettingsFromEnv } from '../../src/config/lineage-settings.js';
import { CUSTOM_FACETS, facetSchemaUrl } from '../../src/lineage/facet-schemas.js';
import { endEvent, PRODUCER, startEvent, type RunEvent } from '../../src/lineage/run-event.js';
import { lineageRunId, wholeRunId } from '../../src/lineage/run-uuid.js';
import { buildManifest, type Manifest } from '../../src/scoring/manifest.js';
import { ENDING_STATES } from '../../src/scoring/run-lifecycle.js';
import { runTriggerSchema } from '../../src/scoring/run-trigger.js';
import { eventProblems, shippedFile, SHIPPED_SCHEMAS } from '../helpers/lineage-schema.js';
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

  it('names a PostgreSQL table by its server, database, schema and table; a query by none', () => {
    expect(datasetName('postgresql://scorer@db.internal/sales', 'public.rentals')).toEqual({
      namespace: 'postgres://db.internal:5432',
      name: 'sales.public.rentals',
    });
    expect(datasetName('postgres://db:6543/sales', '"Q1".rentals')).toEqual({ namespace: 'postgres://db:6543', name: 'sales.Q1.rentals' });
    expect(datasetName('postgresql://db/sales')).toBeUndefined();
    expect(datasetName('postgresql://u:pw@db/sales', 'public.rentals')).toBeUndefined();
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
  it('are version 5 UUIDs of the run folder and the attempt, the same in every process and release', () => {
    const id = lineageRunId('/data/out/nightly-0301');
    expect(id).toMatch(UUID_V5);
    expect(id).toBe(lineageRunId('/data/out/nightly-0301', 1));
    // Pinned, as Python's uuid.uuid5(UUID('ba1f5d91-4426-4883-9c47-00ab1b7168b2'), '/data/out/nightly-0301') computes it:
    // a change would part the ends of runs a release started from their starts. Attempt 1's is what
    // releases before attempts gave the whole run.
    expect(id).toBe('53297cdd-1009-5828-8d42-32705f5646d8');
    // uuid5(UUID('970c2ba1-ea8b-4179-a02e-e2eab5e0ea6b'), '2:/data/out/nightly-0301'); the whole run's: uuid5(UUID('73b43b3e-acc2-4367-b2a7-537f8734e9db'), '/data/out/nightly-0301').
    expect(lineageRunId('/data/out/nightly-0301', 2)).toBe('41c27a90-de05-527c-908d-2f896acbd855');
    expect(wholeRunId('/data/out/nightly-0301')).toBe('485c0c50-e246-5a6c-acb2-c95dde0cc3de');
  });

  it('differ for each attempt, for one run id under two outputs, and from the whole run’s', () => {
    const ids = [
      lineageRunId('/data/out/r1'),
      lineageRunId('/data/out/r1', 2),
      lineageRunId('/data/out/r1', 3),
      lineageRunId('s3://results/out/r1'),
      wholeRunId('/data/out/r1'),
    ];
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(UUID_V5);
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
    expect(lineageSettingsFromEnv({ OPENLINEAGE_URL: 'http://marquez:5000' }, 'https://scorer.example')).toMatchObject({ publicUrl: 'https://scorer.example' });
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

const NS = { namespace: 'ns' };

describe('lineage end events', () => {
  const request = { input: '/data/in.csv', model: 'mindsdb/home_rentals_model', options: {} };
  const ended = (error?: BatchScorerError, attempt = 1) =>
    buildManifest({
      runId: 'r1',
      startedAt: new Date().toISOString(),
      attempt,
      folder: { kind: 'file', path: '/data/out/r1' },
      request,
      ...(error && { error }),
    });

  it('say FAIL for a failed attempt and ABORT for a cancelled or expired one, with the error, on the attempt’s run', () => {
    const failed = endEvent(ended(new BatchScorerError('E_MODEL_NOT_FOUND', 'no such model')), NS)!;
    expect(failed.eventType).toBe('FAIL');
    expect(failed.run.runId).toBe(lineageRunId('/data/out/r1'));
    expect(failed.run.facets.errorMessage).toMatchObject({ message: 'E_MODEL_NOT_FOUND: no such model', programmingLanguage: 'JavaScript' });
    expect(failed.inputs).toEqual([{ namespace: 'file', name: '/data/in.csv' }]);
    expect(failed.job).toMatchObject({ namespace: 'ns', name: 'mindsdb.home_rentals_model' });
    const cancelled = endEvent(ended(new BatchScorerError('E_CANCELLED', 'run r1 cancelled'), 2), NS)!;
    expect(cancelled.eventType).toBe('ABORT');
    expect(cancelled.run.runId).toBe(lineageRunId('/data/out/r1', 2));
    expect(cancelled.run.facets.batchScorer).toMatchObject({ runId: 'r1', attempt: 2, state: 'cancelled' });
    expect(endEvent(ended(new BatchScorerError('E_EXPIRED', 'run r1 expired'), 3), NS)!.eventType).toBe('ABORT');
    for (const e of [failed, cancelled]) expect(eventProblems(e)).toBeUndefined();
  });

  it('name every attempt’s parent: the run as a whole, of the same job', () => {
    const parent = { run: { runId: wholeRunId('/data/out/r1') }, job: { namespace: 'ns', name: 'mindsdb.home_rentals_model' } };
    expect(endEvent(ended(undefined, 1), NS)!.run.facets.parent).toMatchObject(parent);
    expect(endEvent(ended(undefined, 4), NS)!.run.facets.parent).toMatchObject(parent);
  });

  it('name errors.jsonl among a failed attempt’s outputs when its manifest lists it', () => {
    const manifest = {
      ...ended(new BatchScorerError('E_ERROR_RATE', 'more rows were quarantined than --max-error-rate 0 allows')),
      outputs: [{ file: 'errors.jsonl', location: '/data/out/r1/errors.jsonl', rows: 12, bytes: 3_400, sha256: 'x' }],
    };
    const failed = endEvent(manifest, NS)!;
    expect(failed.eventType).toBe('FAIL');
    expect(failed.outputs).toEqual([
      {
        namespace: 'file',
        name: '/data/out/r1/errors.jsonl',
        outputFacets: { outputStatistics: expect.objectContaining({ rowCount: 12, size: 3_400, fileCount: 1 }) as unknown },
      },
    ]);
    expect(eventProblems(failed)).toBeUndefined();
  });

  it('are not sent for a run whose folder was found to be another run’s', () => {
    expect(endEvent(ended(new BatchScorerError('E_RUN_EXISTS', 'taken')), NS)).toBeUndefined();
  });
});

describe('lineage events of a held run', () => {
  const request = { input: '/data/in.csv', model: 'mindsdb/home_rentals_model', options: {} };
  const outputs = [{ file: 'predictions.csv', location: '/data/out/h1/predictions.csv', rows: 7, bytes: 512, sha256: 'x' }];
  const held: Manifest = {
    ...buildManifest({
      runId: 'h1',
      startedAt: '2026-11-24T01:00:00.000Z',
      attempt: 2,
      folder: { kind: 'file', path: '/data/out/h1' },
      request,
      error: new BatchScorerError('E_DRIFT', 'the run drifted from baseline run h0 past --drift-fail 0.25'),
    }),
    outputs,
  };
  const judgement = { by: 'ana', at: '2026-11-24T09:30:00.000Z', why: 'a new season', error: held.error! };

  it('end the attempt with OTHER: not an end, its outputs named, no error', () => {
    expect(held.state).toBe('held');
    const other = endEvent(held, NS)!;
    expect(other.eventType).toBe('OTHER');
    expect(other.eventTime).toBe(held.finishedAt);
    expect(other.run.runId).toBe(lineageRunId('/data/out/h1', 2));
    expect(other.run.facets.batchScorer).toMatchObject({ attempt: 2, state: 'held' });
    expect(other.run.facets).not.toHaveProperty('errorMessage');
    expect(other.outputs.map((o) => o.name)).toEqual(['/data/out/h1/predictions.csv']);
    expect(eventProblems(other)).toBeUndefined();
  });

  it('then COMPLETE once accepted, or FAIL once rejected, on the same attempt’s run, at the judgement’s time', () => {
    const { error: _, ...rest } = held;
    const accepted = endEvent({ ...rest, state: 'succeeded', accepted: judgement }, NS)!;
    const rejected = endEvent({ ...held, state: 'failed', rejected: judgement }, NS)!;
    expect([accepted.eventType, rejected.eventType]).toEqual(['COMPLETE', 'FAIL']);
    for (const e of [accepted, rejected]) {
      expect(e.run.runId).toBe(lineageRunId('/data/out/h1', 2));
      expect(e.eventTime).toBe(judgement.at);
      expect(e.outputs.map((o) => o.name)).toEqual(['/data/out/h1/predictions.csv']);
      expect(eventProblems(e)).toBeUndefined();
    }
    expect(accepted.run.facets).not.toHaveProperty('errorMessage');
    expect(rejected.run.facets.errorMessage).toMatchObject({ message: expect.stringMatching(/^E_DRIFT: /) as unknown });
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
      { namespace: 'prod' },
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
        attempt: 1,
        runId: 'nightly-rentals-0301',
        startedAt: start.eventTime,
        folder: { kind: 's3', bucket: 'results', key: 'runs/nightly-rentals-0301' },
        request,
      }),
      state: 'succeeded' as const,
      error: undefined,
      outputs: [{ file: 'predictions.csv', location: 's3://results/runs/nightly-rentals-0301/predictions.csv', rows: 7, bytes: 512, sha256: 'x' }],
    };
    const complete = endEvent(manifest, { namespace: 'prod' })!;
    expect(complete.eventType).toBe('COMPLETE');
    expect(complete.run.runId).toBe(start.run.runId);
    expect(complete.job.name).toBe('nightly-rentals');
    expect(complete.outputs).toMatchObject([
      { namespace: 's3://results', name: 'runs/nightly-rentals-0301/predictions.csv', outputFacets: { outputStatistics: { rowCount: 7, size: 512 } } },
    ]);
    expect(eventProblems(complete)).toBeUndefined();
  });

  it('the schema refuses an event without what the spec requires', () => {
    const start = startEvent({ runId: 'r', request, folder: { kind: 'file', path: '/out/r' }, startedAt: '2026-11-24T01:00:02.000Z', attempt: 1 }, NS);
    expect(eventProblems(start)).toBeUndefined();
    expect(eventProblems({ ...start, run: { runId: 'r' } })).toMatch(/\/run\/runId must match format "uuid"/);
    expect(eventProblems({ ...start, schemaURL: undefined })).toMatch(/must have required property 'schemaURL'/);
    expect(eventProblems({ ...start, eventType: 'DONE' })).toMatch(/\/eventType must be equal to one of the allowed values/);
    const { _producer: _, ...unsigned } = start.job.facets.jobType;
    expect(eventProblems({ ...start, job: { ...start.job, facets: { jobType: unsigned } } })).toMatch(/_producer/);
    expect(eventProblems({ ...start, eventTime: '24/11/2026' })).toMatch(/\/eventTime must match format "date-time"/);
    // A standard facet against its own schema, and one whose _schemaURL names none known.
    const { processingType: __, ...untyped } = start.job.facets.jobType;
    expect(eventProblems({ ...start, job: { ...start.job, facets: { jobType: untyped } } })).toMatch(
      /\/job\/facets\/jobType must have required property 'processingType'/,
    );
    const elsewhere = { ...start.run.facets.batchScorer, _schemaURL: 'https://example.com/facets.json#/$defs/BatchScorerRunFacet' };
    expect(eventProblems({ ...start, run: { ...start.run, facets: { batchScorer: elsewhere } } })).toMatch(
      /\/run\/facets\/batchScorer names schema .* not known/,
    );
  });
});

describe('the custom facets’ schemas', () => {
  const root = new URL('../../', import.meta.url);
  const shipped = (file: string) => JSON.parse(readFileSync(new URL(`schemas/openlineage/${file}`, root), 'utf8')) as ShippedSchema;
  type ShippedSchema = { $defs: Record<string, { allOf: [unknown, { properties: Record<string, { enum?: unknown[] }> }] }> };

  it('are shipped, one file per facet and version, which their _schemaURL names with PUBLIC_URL or without', () => {
    expect(SHIPPED_SCHEMAS).toEqual(['1-0-0/BatchScorerModelJobFacet.json', '1-0-0/BatchScorerRunFacet.json']);
    expect(facetSchemaUrl('batchScorer', PRODUCER, 'https://scorer.example')).toBe(
      'https://scorer.example/schemas/openlineage/1-0-0/BatchScorerRunFacet.json#/$defs/BatchScorerRunFacet',
    );
    expect(facetSchemaUrl('batchScorerModel', PRODUCER, undefined)).toBe(
      `${PRODUCER}:schemas/openlineage/1-0-0/BatchScorerModelJobFacet.json#/$defs/BatchScorerModelJobFacet`,
    );
    for (const [name, { schema, version }] of Object.entries(CUSTOM_FACETS)) {
      for (const base of ['https://scorer.example', 'https://scorer.example/behind/a/proxy', undefined]) {
        expect(shippedFile(facetSchemaUrl(name as keyof typeof CUSTOM_FACETS, PRODUCER, base))).toBe(`schemas/openlineage/${version}/${schema}.json`);
      }
      expect(Object.keys(shipped(`${version}/${schema}.json`).$defs)).toEqual([schema]);
    }
  });

  it('are in the npm package and the Docker image, where serve reads them', () => {
    const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { files: string[] };
    expect(pkg.files).toContain('schemas');
    expect(readFileSync(new URL('Dockerfile', root), 'utf8')).toMatch(/^COPY schemas \.\/schemas$/m);
  });

  it('say the states and triggers there are', () => {
    const { properties } = shipped('1-0-0/BatchScorerRunFacet.json').$defs.BatchScorerRunFacet.allOf[1];
    expect(properties.state.enum).toEqual([...ENDING_STATES]);
    expect(properties.trigger.enum).toEqual([...runTriggerSchema.options.map((o) => o.shape.kind.value), null]);
  });

  it('refuse a facet that is not as they say', () => {
    const start = startEvent(
      {
        runId: 'r',
        request: { input: '/in.csv', out: '/out/', model: 'mindsdb/m', options: {} as never },
        folder: { kind: 'file', path: '/out/r' },
        startedAt: '2026-11-24T01:00:02.000Z',
        attempt: 1,
      },
      { namespace: 'ns', publicUrl: 'https://scorer.example' },
    );
    expect(eventProblems(start)).toBeUndefined();
    const withRun = (facet: Record<string, unknown>): RunEvent => ({
      ...start,
      run: { ...start.run, facets: { ...start.run.facets, batchScorer: { ...start.run.facets.batchScorer, ...facet } } },
    });
    expect(eventProblems(withRun({ attempt: 0 }))).toMatch(/\/run\/facets\/batchScorer\/attempt must be >= 1/);
    expect(eventProblems(withRun({ trigger: 'cron' }))).toMatch(/\/run\/facets\/batchScorer\/trigger must be equal to one of the allowed values/);
    const { runId: _, ...anonymous } = start.run.facets.batchScorer;
    expect(eventProblems({ ...start, run: { ...start.run, facets: { batchScorer: anonymous as never } } })).toMatch(/must have required property 'runId'/);
    const model = { ...start.job.facets.batchScorerModel, requestedVersion: 'two' };
    expect(eventProblems({ ...start, job: { ...start.job, facets: { ...start.job.facets, batchScorerModel: model } } })).toMatch(
      /\/job\/facets\/batchScorerModel\/requestedVersion must be integer,null/,
    );
  });
});
