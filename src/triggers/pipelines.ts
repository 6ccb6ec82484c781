import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { CronExpressionParser } from 'cron-parser';
import { parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { checkedText, checkInputOptions, formatIssues, parseRunInput, type RunOptions, type RunOptionsInput, runOptionsSchema } from '../config/index.js';
import { BatchScorerError, errorMessage, UsageError } from '../errors.js';
import { checkTableOptions } from '../scoring/index.js';
import { type PipelineNotify, pipelineNotifySchema } from '../notify/index.js';
import { parseModelRef } from '../service/index.js';
import { formatLocation, type Location, parseLocation } from '../storage/index.js';
import { templateProblem } from './date-template.js';
import { isTimeZone } from './zoned-time.js';

/** Where a pipeline was declared: its file and its document in it (1-based), for messages. */
export interface PipelineSource {
  file: string;
  document: number;
}

/** What every pipeline declares. */
interface PipelineBase {
  /** Unique across `jobs/*.yaml`; the scheduler's id, and the start of its runs' ids. */
  name: string;
  /** `project/model[.version]`. */
  model: string;
  /** Where its run folders go (`<output>/<runId>/`). */
  output: string;
  /** Run options as written (`batchSize`, not `--batch-size`); the worker defaults the rest. */
  options: RunOptionsInput;
  /** Webhooks told of its runs' ends (see src/notify/), read by the workers where runs end. */
  notify?: PipelineNotify;
  source: PipelineSource;
}

/** A pipeline run on a cron schedule, over an input whose location may carry `{date}` placeholders. */
export interface ScheduledPipeline extends PipelineBase {
  kind: 'schedule';
  input: string;
  /** Cron (5 fields, or 6 with seconds) in an IANA time zone (default UTC). */
  schedule: { cron: string; tz: string };
}

/** A pipeline run once for each new file (each new version of a key) under a prefix. */
export interface FileDropPipeline extends PipelineBase {
  kind: 'trigger';
  /** A folder (`s3://bucket/prefix/` or a local folder), and the end of the names that count (`.csv`; '' for any). */
  trigger: { prefix: string; suffix: string };
}

/** A declared pipeline of `jobs/*.yaml`: `kind` says whether a schedule or a file drop starts its runs. */
export type Pipeline = ScheduledPipeline | FileDropPipeline;

/** Pipeline names: they start run ids, so they keep to the characters run ids allow. */
export const pipelineNameSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/, { message: 'use letters, digits, "-" and "_", starting with a letter or digit (at most 64)' });

const cronSchema = z.object({
  /** Cron in 5 fields (minute to weekday) or 6 (seconds first), as BullMQ's job schedulers read it. */
  cron: z.string(),
  /** IANA time zone the cron and the date placeholders are read in. */
  tz: z.string().refine(isTimeZone, { message: 'must be an IANA time zone such as UTC or Europe/Paris' }).default('UTC'),
});

const folderText = checkedText(parseLocation).refine((text) => text.endsWith('/'), {
  message: 'must be a folder, ending in "/" (s3://bucket/prefix/ or a local folder)',
});

/** One document of a `jobs/*.yaml` file, as written. */
const pipelineDocumentSchema = z
  .object({
    name: pipelineNameSchema,
    model: checkedText(parseModelRef),
    /** Scheduled pipelines: the input, with optional `{date}` / `{date-Nd}` placeholders; or a database (`postgresql://...`, with options.table or options.query). */
    input: checkedText(parseRunInput).optional(),
    output: checkedText(parseLocation),
    schedule: cronSchema.strict().optional(),
    trigger: z
      .object({ prefix: folderText, suffix: z.string().default('') })
      .strict()
      .optional(),
    /** Run options, checked as flags are (see run-options.ts). */
    options: z.record(z.string(), z.unknown()).default({}),
    /** `{ urls: [...], on: [completed, failed, expired, cancelled, drift] }`: webhooks told of its runs' ends. */
    notify: pipelineNotifySchema.optional(),
  })
  .strict()
  .superRefine((doc, ctx) => {
    const issue = (path: string[], message: string) => ctx.addIssue({ code: 'custom', path, message });
    if (!doc.schedule === !doc.trigger) issue([], 'declare exactly one of schedule (run on a cron) or trigger (run for each file dropped under a prefix)');
    if (doc.schedule) {
      if (doc.input === undefined) issue(['input'], 'a scheduled pipeline needs an input');
      const why = doc.input === undefined ? undefined : templateProblem(doc.input);
      if (why) issue(['input'], why);
      try {
        CronExpressionParser.parse(doc.schedule.cron, { tz: isTimeZone(doc.schedule.tz) ? doc.schedule.tz : 'UTC' });
      } catch (err) {
        issue(['schedule', 'cron'], `"${doc.schedule.cron}" is not a cron expression (${(err as Error).message}); e.g. "0 2 * * *" is 02:00 every day`);
      }
    }
    if (doc.trigger) {
      if (doc.input !== undefined) issue(['input'], 'a trigger pipeline scores each file dropped under trigger.prefix; remove input');
      // Its own outputs would start runs of their own, for ever.
      if (under(parseLocation(doc.output), parseLocation(doc.trigger.prefix))) {
        issue(['output'], `lies under trigger.prefix ${doc.trigger.prefix}: each run's output would start another run; write it elsewhere`);
      }
    }
    const options = runOptionsSchema.safeParse(doc.options);
    // Each bad option named under `options.`, in the words the CLI uses for flags.
    if (!options.success) for (const bad of options.error.issues) ctx.addIssue({ ...bad, path: ['options', ...bad.path] });
    else if ('runId' in doc.options) issue(['options', 'runId'], "is derived from the pipeline's name and what started the run; remove it");
    else {
      // A database input names its rows (table or query); files, a trigger's too, take none of those options.
      try {
        checkInputOptions(parseRunInput(doc.input ?? doc.trigger?.prefix ?? ''), options.data, 'fields');
      } catch (err) {
        issue(['options'], errorMessage(err));
      }
      tableOptionsIssue(doc.input ?? doc.trigger?.prefix ?? '', options.data, (message) => issue(['options'], message));
    }
  });

/** Options that do not go with `outTable` (see checkTableOptions), said as the pipeline's issue: found by `pipelines check`, not when the pipeline fires. */
function tableOptionsIssue(input: string, options: RunOptions, issue: (message: string) => void): void {
  try {
    checkTableOptions(input, options);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    issue(err.message);
  }
}

/** Whether `inner` lies at or below the folder `outer`. */
function under(inner: Location, outer: Location): boolean {
  const text = (loc: Location) => formatLocation(loc).replace(/\/?$/, '/');
  return inner.kind === outer.kind && text(inner).startsWith(text(outer));
}

/**
 * The pipelines declared in `dir/*.yaml` (and `.yml`), files in name order, several documents
 * per file. Every problem is reported at once, each naming its file, document, pipeline and
 * field; any problem is E_CONFIG (exit 2). A missing folder is E_CONFIG too: asked to read
 * pipelines, there are none to read.
 */
export async function loadPipelines(dir: string): Promise<Pipeline[]> {
  let names: string[];
  try {
    names = (await readdir(dir)).filter((n) => /\.ya?ml$/.test(n)).sort();
  } catch (err) {
    throw configError([`${dir}: cannot read the pipelines folder (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); set JOBS_DIR or --jobs`]);
  }
  const problems: string[] = [];
  const pipelines: Pipeline[] = [];
  for (const name of names) {
    const file = join(dir, name);
    const documents = parseAllDocuments(await readFile(file, 'utf8'));
    // A file of one empty document (or none) declares nothing, as an empty file should.
    for (const [i, doc] of (Array.isArray(documents) ? documents : [documents]).entries()) {
      const where = `${file}, document ${i + 1}`;
      if (doc.errors.length > 0) {
        problems.push(`${where}: not valid YAML: ${doc.errors[0].message.split('\n')[0]}`);
        continue;
      }
      const value: unknown = doc.toJS();
      if (value === null || value === undefined) continue;
      const parsed = pipelineDocumentSchema.safeParse(value);
      const named = typeof (value as { name?: unknown }).name === 'string' ? ` (pipeline ${(value as { name: string }).name})` : '';
      if (!parsed.success) {
        problems.push(`${where}${named}: ${describeIssues(parsed.error)}`);
        continue;
      }
      pipelines.push(toPipeline(parsed.data, { file, document: i + 1 }));
    }
  }
  const seen = new Map<string, PipelineSource>();
  for (const p of pipelines) {
    const first = seen.get(p.name);
    if (first)
      problems.push(
        `${p.source.file}, document ${p.source.document}: pipeline name ${p.name} is taken by ${first.file}, document ${first.document}; names must be unique`,
      );
    else seen.set(p.name, p.source);
  }
  if (problems.length > 0) throw configError(problems);
  return pipelines;
}

/**
 * The pipelines of a folder that may not exist: undefined when it does not (`serve` runs without
 * pipelines), otherwise loadPipelines' answer or refusal.
 */
export async function loadPipelinesIfPresent(dir: string): Promise<Pipeline[] | undefined> {
  const missing = await stat(dir).then(
    () => false,
    (err: NodeJS.ErrnoException) => err.code === 'ENOENT',
  );
  return missing ? undefined : loadPipelines(dir);
}

/** Issues as formatIssues says them, but a pipeline's own unknown fields named as fields, not options. */
function describeIssues(error: z.ZodError): string {
  const own = error.issues.filter((i) => i.code === 'unrecognized_keys' && i.path.length === 0);
  const rest = error.issues.filter((i) => !own.includes(i));
  const fields = own.flatMap((i) => (i.code === 'unrecognized_keys' ? i.keys : [])).map((k) => `"${k}"`);
  return [
    ...(fields.length > 0 ? [`unknown field(s) ${fields.join(', ')}: a pipeline has name, model, input, output, schedule, trigger, options and notify`] : []),
    ...(rest.length > 0 ? [formatIssues(new z.ZodError(rest))] : []),
  ].join('; ');
}

function toPipeline(doc: z.output<typeof pipelineDocumentSchema>, source: PipelineSource): Pipeline {
  const common = {
    name: doc.name,
    model: doc.model,
    output: doc.output,
    options: doc.options as RunOptionsInput,
    ...(doc.notify && { notify: doc.notify }),
    source,
  };
  if (doc.schedule) return { ...common, kind: 'schedule', input: doc.input!, schedule: doc.schedule };
  return { ...common, kind: 'trigger', trigger: doc.trigger! };
}

function configError(problems: string[]): BatchScorerError {
  const head = problems.length === 1 ? '' : `${problems.length} problems in the pipelines:\n  `;
  return new BatchScorerError('E_CONFIG', head + problems.join('\n  '));
}
