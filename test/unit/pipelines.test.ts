import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { fillDateTemplate, templateProblem } from '../../src/triggers/date-template.js';
import { loadPipelines } from '../../src/triggers/pipelines.js';

const SHIPPED = fileURLToPath(new URL('../../jobs', import.meta.url));

/** A jobs folder holding the given files. */
function jobsDir(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'jobs-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

/** The error loading a jobs folder fails with. */
async function refusal(dir: string): Promise<Error & { code?: string; exitCode?: number }> {
  try {
    await loadPipelines(dir);
  } catch (err) {
    return err as Error;
  }
  throw new Error(`${dir} was accepted`);
}

const SCHEDULED = `name: nightly
model: mindsdb/home_rentals_model
input: s3://data/{date}.csv
output: s3://results/nightly/
schedule: { cron: "0 2 * * *", tz: Europe/Paris }
`;
const DROP = `name: inbox
model: mindsdb/home_rentals_model
trigger: { prefix: s3://inbox/rentals/, suffix: .csv }
output: s3://results/inbox/
`;

describe('jobs/*.yaml', () => {
  it('reads the shipped examples: one scheduled pipeline and one file-drop pipeline', async () => {
    const pipelines = await loadPipelines(SHIPPED);
    expect(pipelines.map((p) => [p.name, p.kind])).toEqual([
      ['nightly-rentals', 'schedule'],
      ['rentals-inbox', 'trigger'],
    ]);
    const [nightly, inbox] = pipelines;
    expect(nightly).toMatchObject({ input: 's3://data/rentals/{date-1d}.csv', schedule: { cron: '0 2 * * *', tz: 'Europe/Paris' } });
    expect(nightly.options).toEqual({ batchSize: 1000, concurrency: 4 });
    expect(inbox).toMatchObject({ trigger: { prefix: 's3://inbox/rentals/', suffix: '.csv' }, output: 's3://results/inbox/' });
    expect(inbox.source).toEqual({ file: join(SHIPPED, 'rentals.yaml'), document: 2 });
  });

  it('reads several documents per file and several files, in name order; the time zone defaults to UTC', async () => {
    const dir = jobsDir({ 'b.yaml': DROP, 'a.yml': `${SCHEDULED.replace(', tz: Europe/Paris', '')}---\n# nothing here\n` });
    const pipelines = await loadPipelines(dir);
    expect(pipelines.map((p) => p.name)).toEqual(['nightly', 'inbox']);
    expect(pipelines[0]).toMatchObject({ kind: 'schedule', schedule: { tz: 'UTC' } });
  });

  it('takes inputs of many files: a dated prefix, a glob, and the output options of such runs', async () => {
    const parts = SCHEDULED.replace('input: s3://data/{date}.csv', 'input: s3://data/exports/{date}/part-*.csv.gz').replace(
      'schedule:',
      'options: { outputPerFile: true, compress: none, keepColumns: [listing_id], maxRowsPerFile: 100000, delimiter: ";", encoding: latin1 }\nschedule:',
    );
    const prefix = SCHEDULED.replace('name: nightly', 'name: daily-prefix').replace('input: s3://data/{date}.csv', 'input: s3://data/exports/{date}/');
    const pipelines = await loadPipelines(jobsDir({ 'a.yaml': parts, 'b.yaml': prefix }));
    expect(pipelines.map((p) => (p.kind === 'schedule' ? fillDateTemplate(p.input, new Date('2026-11-21T12:00:00Z'), 'UTC') : ''))).toEqual([
      's3://data/exports/2026-11-21/part-*.csv.gz',
      's3://data/exports/2026-11-21/',
    ]);
    expect(pipelines[0].options).toMatchObject({ outputPerFile: true, keepColumns: ['listing_id'], delimiter: ';', encoding: 'latin1' });
  });

  it('takes a database as a scheduled input, with its table or query among the options', async () => {
    const table = SCHEDULED.replace('input: s3://data/{date}.csv', 'input: postgresql://scorer@db.internal:5432/sales').replace(
      'schedule:',
      'options: { table: public.rentals }\nschedule:',
    );
    const [nightly] = await loadPipelines(jobsDir({ 'p.yaml': table }));
    expect(nightly).toMatchObject({ kind: 'schedule', input: 'postgresql://scorer@db.internal:5432/sales', options: { table: 'public.rentals' } });
    const refused = async (text: string) => (await refusal(jobsDir({ 'p.yaml': text }))).message;
    expect(await refused(table.replace('options: { table: public.rentals }\n', ''))).toContain(
      "options: postgresql://scorer@db.internal:5432/sales is a database: name its rows with table schema.table or query 'SELECT ...'",
    );
    expect(await refused(table.replace('scorer@', 'scorer:pw-9x1@'))).toMatch(/input: database URL .* carries a password/);
    expect(await refused(table.replace('scorer@', 'scorer:pw-9x1@'))).not.toContain('pw-9x1');
    expect(await refused(`${DROP}options: { table: public.rentals }\n`)).toContain('options: table: for a database input');
  });

  it('takes a priority among the options, and names a bad one', async () => {
    const [urgent] = await loadPipelines(jobsDir({ 'p.yaml': `${DROP}options: { priority: high }\n` }));
    expect(urgent.options).toEqual({ priority: 'high' });
    const err = await refusal(jobsDir({ 'p.yaml': `${DROP}options: { priority: urgent }\n` }));
    expect(err.message).toContain('options.priority: must be "high" or "normal" or "low"');
  });

  it('takes a table to write rows into, and names options that do not go with it', async () => {
    const table = 'options: { outTable: analytics.scores, outDatabase: "postgresql://scorer@db:5432/analytics", runsTable: audit }\n';
    const [scores] = await loadPipelines(jobsDir({ 'p.yaml': `${DROP}${table}` }));
    expect(scores.options).toEqual({ outTable: 'analytics.scores', outDatabase: 'postgresql://scorer@db:5432/analytics', runsTable: 'audit' });
    const err = await refusal(jobsDir({ 'p.yaml': `${DROP}options: { outTable: analytics.scores }\n` }));
    expect(err.message).toContain('options: --out-table analytics.scores needs --out-database postgresql://user@host:5432/db: the input is files');
  });

  it('names the file, the document, the pipeline and the field of every problem, all at once', async () => {
    const dir = jobsDir({
      'bad.yaml': `${SCHEDULED}---\nname: two\nmodel: p/m\ninput: s3://d/x.csv\noutput: s3://o/\nschedule: { cron: "61 * * * *", tz: Mars/Base }\noptions: { batchSize: 0, colour: red }\n`,
    });
    const err = await refusal(dir);
    expect(err).toMatchObject({ code: 'E_CONFIG', exitCode: 2 });
    const line = err.message.split('\n').find((l) => l.includes('document 2'))!;
    expect(line).toContain(`${join(dir, 'bad.yaml')}, document 2 (pipeline two)`);
    expect(line).toContain('schedule.tz: must be an IANA time zone');
    expect(line).toContain('schedule.cron: "61 * * * *" is not a cron expression');
    expect(line).toContain('options.batchSize: must be at least 1');
    expect(line).toContain('unknown option(s) "colour"');
    expect(err.message).not.toContain('document 1');
  });

  it.each([
    ['neither schedule nor trigger', 'name: x\nmodel: p/m\noutput: s3://o/\n', 'declare exactly one of schedule'],
    ['both', `${DROP}schedule: { cron: "0 2 * * *" }\n`, 'declare exactly one of schedule'],
    ['a schedule without input', 'name: x\nmodel: p/m\noutput: s3://o/\nschedule: { cron: "0 2 * * *" }\n', 'input: a scheduled pipeline needs an input'],
    ['a trigger with an input', `${DROP}input: s3://d/x.csv\n`, 'input: a trigger pipeline scores each file'],
    ['an output under its trigger prefix', DROP.replace('s3://results/inbox/', 's3://inbox/rentals/out/'), 'output: lies under trigger.prefix'],
    ['a prefix that is no folder', DROP.replace('s3://inbox/rentals/', 's3://inbox/rentals'), 'trigger.prefix: must be a folder'],
    ['an unknown placeholder', SCHEDULED.replace('{date}', '{today}'), 'input: unknown placeholder(s) {today}'],
    ['a run id', `${DROP}options: { runId: fixed }\n`, 'options.runId: is derived'],
    ['a bad model', DROP.replace('mindsdb/home_rentals_model', 'rentals'), 'model: --model "rentals": expected project/model'],
    ['an unknown field', `${DROP}owner: me\n`, 'unknown field(s) "owner"'],
    ['a bad name', DROP.replace('name: inbox', 'name: "in box"'), 'name: use letters, digits'],
    ['YAML that does not parse', `${DROP}---\n: [\n`, 'document 2: not valid YAML'],
  ])('refuses %s', async (_case, text, expected) => {
    const err = await refusal(jobsDir({ 'p.yaml': text }));
    expect(err.message).toContain(expected);
  });

  it('refuses a name declared twice, naming both places', async () => {
    const dir = jobsDir({ 'a.yaml': DROP, 'b.yaml': DROP.replace('inbox/rentals', 'inbox/other') });
    await expect(loadPipelines(dir)).rejects.toThrow(`${join(dir, 'b.yaml')}, document 1: pipeline name inbox is taken by ${join(dir, 'a.yaml')}, document 1`);
  });

  it('refuses a folder that does not exist, saying how to point at one', async () => {
    await expect(loadPipelines('/nonexistent/jobs')).rejects.toThrow('/nonexistent/jobs: cannot read the pipelines folder (ENOENT); set JOBS_DIR or --jobs');
  });
});

describe('date placeholders', () => {
  // 01:30 UTC on 23 November is 02:30 in Paris (same day) and 17:30 the day before in Los Angeles.
  const fired = new Date('2026-11-23T01:30:00Z');

  it('fills {date} and {date-Nd} with the day in the schedule’s time zone', () => {
    expect(fillDateTemplate('s3://d/{date}/x-{date-1d}.csv', fired, 'Europe/Paris')).toBe('s3://d/2026-11-23/x-2026-11-22.csv');
    expect(fillDateTemplate('s3://d/{date}.csv', fired, 'America/Los_Angeles')).toBe('s3://d/2026-11-22.csv');
    expect(fillDateTemplate('{date-31d}', new Date('2026-03-01T12:00:00Z'), 'UTC')).toBe('2026-01-29');
    expect(fillDateTemplate('no placeholders', fired, 'UTC')).toBe('no placeholders');
  });

  it('says which placeholders it does not know', () => {
    expect(templateProblem('s3://d/{date}-{date-7d}.csv')).toBeUndefined();
    expect(templateProblem('s3://d/{date+1d}/{hour}.csv')).toContain('{date+1d}, {hour}');
  });
});
