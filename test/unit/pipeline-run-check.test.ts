import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { errorCode } from '../../src/errors.js';
import type { RunJobData } from '../../src/queue/queues.js';
import { pipelineRunCheck, pipelineRunProblem } from '../../src/triggers/pipeline-run-check.js';
import { loadPipelines, type Pipeline } from '../../src/triggers/pipelines.js';

const MODEL = 'mindsdb/home_rentals_model';
let pipelines: Pipeline[];

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'jobs-'));
  writeFileSync(
    join(dir, 'p.yaml'),
    [
      `name: nightly\nmodel: ${MODEL}\ninput: s3://data/rentals/{date-1d}.csv\noutput: s3://results/nightly/\nschedule: { cron: "0 2 * * *", tz: Europe/Paris }\n`,
      `name: inbox\nmodel: ${MODEL}\ntrigger: { prefix: s3://inbox/rentals/, suffix: .csv }\noutput: s3://results/inbox/\noptions: { service: "https://models.example/v1" }\n`,
      `name: table\nmodel: ${MODEL}\ninput: postgresql://scorer@db:5432/sales\noutput: s3://results/table/\nschedule: { cron: "0 3 * * *" }\noptions: { table: public.rentals }\n`,
    ].join('---\n'),
  );
  pipelines = await loadPipelines(dir);
});

/** 02:00 in Paris on 2026-11-23: the day before is 2026-11-22. */
const FIRE = '2026-11-23T01:00:00.000Z';
const schedule = { kind: 'schedule', pipeline: 'nightly', fireTime: FIRE, cron: '0 2 * * *', tz: 'Europe/Paris' } as const;
const nightly: RunJobData['request'] = {
  input: 's3://data/rentals/2026-11-22.csv',
  model: MODEL,
  out: 's3://results/nightly/',
  options: { runId: 'nightly-20261123T0100Z' },
  trigger: schedule,
};
const object = { location: 's3://inbox/rentals/2026-11-23.csv', etag: 'abc' };
const inbox: RunJobData['request'] = {
  input: object.location,
  model: MODEL,
  out: 's3://results/inbox/',
  options: { runId: 'inbox-20261123-0123456789ab', service: 'https://models.example/v1' },
  trigger: { kind: 'poll', pipeline: 'inbox', object, foundAt: FIRE },
};

describe('a run naming a pipeline', () => {
  it('passes when it is the run the pipeline makes: a schedule’s input filled for its fire time, a file-drop’s file under its prefix', () => {
    expect(pipelineRunProblem(pipelines, nightly)).toBeUndefined();
    // Its caps raised on a resume: other options are not compared.
    expect(pipelineRunProblem(pipelines, { ...nightly, options: { ...nightly.options, maxRows: 10 } })).toBeUndefined();
    expect(pipelineRunProblem(pipelines, inbox)).toBeUndefined();
    expect(pipelineRunProblem(pipelines, { ...inbox, trigger: { kind: 'event', pipeline: 'inbox', object, eventName: 'ObjectCreated:Put' } })).toBeUndefined();
    // Runs a person or script started name no pipeline.
    expect(pipelineRunProblem(pipelines, { ...nightly, input: 's3://anywhere/x.csv', trigger: { kind: 'api' } })).toBeUndefined();
    expect(pipelineRunProblem(pipelines, { ...nightly, trigger: undefined })).toBeUndefined();
  });

  it('is refused, naming what differs, when the pipeline is not declared or the run is not one it makes', () => {
    const refusals: [RunJobData['request'], string][] = [
      [{ ...nightly, trigger: { ...schedule, pipeline: 'ghost' } }, 'pipeline ghost is not declared in the jobs folder'],
      [{ ...nightly, model: 'other/model' }, "its model is not pipeline nightly's"],
      [{ ...nightly, out: 's3://results/elsewhere/' }, "its output is not pipeline nightly's"],
      [{ ...nightly, options: { ...nightly.options, service: 'https://foreign.example/' } }, "its service is not pipeline nightly's"],
      [{ ...nightly, input: 's3://data/rentals/2026-11-23.csv' }, "its input is not pipeline nightly's for its fire time"],
      [{ ...nightly, input: 's3://private/customers.csv' }, "its input is not pipeline nightly's for its fire time"],
      [{ ...inbox, trigger: { ...schedule, pipeline: 'inbox' } }, 'pipeline inbox has no schedule'],
      [
        { ...nightly, trigger: { ...(inbox.trigger as object), pipeline: 'nightly' } as RunJobData['request']['trigger'] },
        'pipeline nightly starts no runs for files',
      ],
      [{ ...inbox, input: 's3://private/customers.csv' }, 'its input is not a file pipeline inbox watches'],
      [
        {
          ...inbox,
          input: 's3://private/customers.csv',
          trigger: { ...(inbox.trigger as object), object: { location: 's3://private/customers.csv', etag: 'x' } } as RunJobData['request']['trigger'],
        },
        'its input is not a file pipeline inbox watches',
      ],
    ];
    for (const [request, problem] of refusals) expect(pipelineRunProblem(pipelines, request), problem).toBe(problem);
  });

  it('reads the table or query of a pipeline whose input is a database, and no other', () => {
    const table: RunJobData['request'] = {
      input: 'postgres://scorer@db/sales',
      model: MODEL,
      out: 's3://results/table/',
      options: { runId: 'table-20261123T0200Z', table: 'public.rentals' },
      trigger: { ...schedule, pipeline: 'table', cron: '0 3 * * *', tz: 'UTC' },
    };
    expect(pipelineRunProblem(pipelines, table)).toBeUndefined();
    expect(pipelineRunProblem(pipelines, { ...table, options: { ...table.options, table: 'hr.salaries' } })).toBe("its table or query is not pipeline table's");
    const query = { ...table.options, table: undefined, query: 'SELECT * FROM hr.salaries', segmentBy: 'id' };
    expect(pipelineRunProblem(pipelines, { ...table, options: query })).toBe("its table or query is not pipeline table's");
    expect(pipelineRunProblem(pipelines, { ...table, input: 'postgresql://scorer@db/hr' })).toBe("its input is not pipeline table's for its fire time");
  });

  it('is refused as E_NOT_ALLOWED by the worker’s check, text that is no location or time included', () => {
    const check = pipelineRunCheck(pipelines);
    expect(() => check('ok', nightly)).not.toThrow();
    const refusal = (request: RunJobData['request']) => {
      try {
        check('forged', request);
      } catch (err) {
        return err as Error;
      }
      return undefined;
    };
    const ghost = refusal({ ...nightly, trigger: { ...schedule, pipeline: 'ghost' } });
    expect(errorCode(ghost)).toBe('E_NOT_ALLOWED');
    expect(ghost?.message).toBe('run forged names a pipeline, but pipeline ghost is not declared in the jobs folder: refused; nothing was read or sent');
    expect(refusal({ ...nightly, out: 'ftp://host/x' })?.message).toMatch(/its input, output or fire time cannot be read/);
    expect(refusal({ ...nightly, trigger: { ...schedule, fireTime: 'not a time' } })?.message).toMatch(/its input, output or fire time cannot be read/);
  });
});
