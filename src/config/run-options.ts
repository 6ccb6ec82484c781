import { z } from 'zod';
import { checkIdentifier, isDatabaseUrl, MAX_IDENTIFIER_BYTES, parseDatabaseUrl, parseTableName, queryProblem } from '../database/index.js';
import { UsageError } from '../errors.js';
import { checkEncoding, nestedDeeperThan } from '../formats/index.js';
import { checkedText } from './checked-text.js';
import { DEADLINE_FORMAT, deadlineTime } from './deadline.js';

/** The members of a prediction `predictionColumns` chooses among. */
export const PREDICTION_MEMBERS = ['value', 'confidence', 'interval', 'anomaly', 'explain'] as const;
export type PredictionMember = (typeof PREDICTION_MEMBERS)[number];

const columnName = z.string().min(1);

/** How soon queue workers take a run's work, most urgent first (see the `priority` option). */
export const RUN_PRIORITIES = ['high', 'normal', 'low'] as const;
export type RunPriority = (typeof RUN_PRIORITIES)[number];

/** Levels predict `params` may nest (the object itself is one): engines take flat options, and every recursive JSON writer on the way overflows at a few thousand. */
export const MAX_PARAMS_DEPTH = 32;

/** Bytes of JSON predict `params` may take: they ride in job data, manifests and every predict request. */
export const MAX_PARAMS_BYTES = 16 * 1024;

/**
 * Predict `params`: an object of at most MAX_PARAMS_DEPTH levels and MAX_PARAMS_BYTES of JSON.
 * Depth is checked first, without recursion, so that measuring the size (JSON.stringify) never
 * meets a value deep enough to overflow the stack.
 */
const predictParams = z.record(z.string(), z.unknown()).superRefine((params, ctx) => {
  if (nestedDeeperThan(params, MAX_PARAMS_DEPTH)) {
    ctx.addIssue({ code: 'custom', message: `must nest at most ${MAX_PARAMS_DEPTH} levels deep (the params object is one)` });
    return;
  }
  let json: string | undefined;
  try {
    json = JSON.stringify(params);
  } catch {
    // A cycle (YAML aliases can make one) or a BigInt: not JSON, said below.
  }
  const bytes = json === undefined ? undefined : Buffer.byteLength(json);
  if (bytes === undefined) ctx.addIssue({ code: 'custom', message: 'must be plain JSON (no cycles)' });
  else if (bytes > MAX_PARAMS_BYTES) ctx.addIssue({ code: 'custom', message: `must take at most ${MAX_PARAMS_BYTES / 1024} KiB as JSON, not ${bytes} bytes` });
});

/** A PostgreSQL table name as psql reads one (see parseTableName): its parts at most 63 bytes each. */
const tableNameText = checkedText((text) => parseTableName(text, 'the name'));

/** A delimiter or quote: one ASCII character other than a line break; `tab` and `\t` are a tab. */
const oneCharacter = z
  .string()
  .transform((text) => (text === 'tab' || text === '\\t' ? '\t' : text))
  .refine((c) => c.length === 1 && c.charCodeAt(0) < 128 && c !== '\n' && c !== '\r', {
    message: 'must be one ASCII character other than a line break (tab or \\t for a tab)',
  });

/** Whether `check` takes the text (a table or column name) without a UsageError. */
function passes(check: (text: string) => unknown): (text: string) => boolean {
  return (text) => {
    try {
      check(text);
      return true;
    } catch (err) {
      if (!(err instanceof UsageError)) throw err;
      return false;
    }
  };
}

/**
 * The options of one run: flags on `score` and `enqueue`, fields of job data and of
 * `jobs/*.yaml`. Every default lives here and nowhere else: the flags, their help's defaults and
 * their choices are derived from this schema (src/cli/run-flags.ts).
 */
export const runOptionsSchema = z
  .object({
    /** Base URL of the Model Query Service; may carry a path prefix. */
    service: z
      .url({ protocol: /^https?$/, message: 'must be an http(s) URL such as http://127.0.0.1:47334' })
      // Options travel in job data and manifests: a password in the URL would be shown everywhere.
      .refine((u) => !/^https?:\/\/[^/]*@/.test(u) && !u.includes('?'), {
        message: 'must not carry credentials or a query string; set MODEL_SERVICE_TOKEN for credentials',
      })
      .default('http://127.0.0.1:47334'),
    /** Output format; by default the input's (csv, jsonl or parquet). */
    format: z.enum(['csv', 'jsonl', 'parquet']).optional(),
    /** Rows per predict request at most. The reference server is built for hundreds to a few thousand. */
    batchSize: z.int().min(1).max(100_000).default(1000),
    /** Bytes of JSON per predict request at most; a wide row file gets smaller batches. */
    maxBatchBytes: z
      .int()
      .min(1024)
      .default(4 * 1024 * 1024),
    /**
     * Predict requests in flight at most: in `score`, across the process (DEFAULT_CONCURRENCY when
     * unset); in queue mode, across every worker scoring the run together, while each worker's own
     * --concurrency caps its process (unset: the workers' caps alone bound the run, so adding
     * workers adds throughput). `auto` finds what the service sustains, in queue mode for the
     * whole fleet: it starts at 2, grows while requests are answered, steps one below a level the
     * service overloaded at (429/503/timeouts) and holds there, halving only on overloads close
     * together (between 1 and 16; the reference server's thread pool is about 10).
     */
    concurrency: z.union([z.int().min(1).max(256), z.literal('auto')]).optional(),
    /** Time limit of one request in ms. */
    timeout: z.int().min(100).default(60_000),
    /** Retries of a request that failed for a passing reason (overload, network). */
    retries: z.int().min(0).max(50).default(6),
    /** Share of rows (0..1) that may be quarantined in errors.jsonl before the run fails. */
    maxErrorRate: z.number().min(0).max(1).default(0.01),
    /** Keep `<target>_explain` in the output. */
    explain: z.boolean().default(false),
    /** Predict body: `data` wraps rows as {"data": [...]} (the reference server), `array` sends the bare array (the document). */
    envelope: z.enum(['data', 'array']).default('data'),
    /** Passed to the engine as predict `params`; at most MAX_PARAMS_DEPTH levels deep and MAX_PARAMS_BYTES of JSON. */
    params: predictParams.default({}),
    /** Predict calls the run may send in all, every attempt and retry counted, across its resumes; none by default (see CAP_OPTIONS). */
    maxRequests: z.int().min(1).optional(),
    /** Rows the run may send to the model in all, across its resumes (rows read and skipped are not counted); none by default. */
    maxRows: z.int().min(1).optional(),
    /**
     * When the run stops sending: a duration from the run's start (`90s`, `30m`, `2h`) or an ISO
     * 8601 time; stored as the time it means (see deadlineTime). None by default.
     */
    deadline: z
      .string()
      .transform((text, ctx) => deadlineTime(text) ?? (ctx.addIssue({ code: 'custom', message: DEADLINE_FORMAT }), z.NEVER))
      .optional(),
    /** Score only the first N data rows (of a database input, the first N by key): a canary run. */
    limit: z.int().min(1).optional(),
    /**
     * A database input's rows (`postgresql://...`): one SELECT of at most MAX_QUERY_BYTES, run
     * in a READ ONLY transaction; it needs `segmentBy`. A database input takes `query` or `table`,
     * one of them; files take neither. Never shown whole: messages and pages show its beginning.
     */
    query: z
      .string()
      .superRefine((text, ctx) => {
        const problem = queryProblem(text);
        if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
      })
      .optional(),
    /** A database input's table, `schema.table` (`table` alone is in `public`; quote a part as "Mixed Case"); its rows go in key order. */
    table: z
      .string()
      .refine(
        passes((text) => parseTableName(text, 'table')),
        `must be a table name: table, schema.table or "Quoted Name", each part at most ${MAX_IDENTIFIER_BYTES} bytes`,
      )
      .optional(),
    /**
     * A database input's key column: segments are ranges of its values, the rows go in its order,
     * and it must be unique and never NULL (checked as the run is planned). By default a table's
     * primary key, when it is one column; a `query` must name one.
     */
    segmentBy: z
      .string()
      .refine(
        passes((text) => checkIdentifier(text, 'segmentBy')),
        `must be a column name of at most ${MAX_IDENTIFIER_BYTES} bytes, without NUL`,
      )
      .optional(),
    /** The run's id and folder name; derived from the time when absent. Re-using an unfinished run's id resumes it. */
    runId: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, { message: 'use letters, digits, ".", "_" and "-" (at most 128)' })
      .optional(),
    /** Fail, instead of warning, when the input lacks some of the model's input columns. */
    strictColumns: z.boolean().default(false),
    /** Data rows per segment: the unit of work a worker takes and of resuming after a crash. */
    segmentRows: z.int().min(1).default(20_000),
    /**
     * The row id member the server echoes, to prove each answer row belongs to the row sent:
     * `auto` learns it when the run is planned (`__mindsdb_row_id` on the reference server,
     * `__service_row_id` in the interface document); a name forces that member.
     */
    rowIdMember: z
      .string()
      .regex(/^(auto|[A-Za-z_][A-Za-z0-9_]*)$/, { message: 'use auto or a member name such as __mindsdb_row_id' })
      .default('auto'),
    /**
     * What a model retrained during the run does to it, on servers that report no versions (where
     * a run cannot be pinned): `fail` the run, or `warn` in the manifest and keep the output.
     */
    onModelChange: z.enum(['fail', 'warn']).default('fail'),
    /**
     * Population stability index above which a column's drift from the baseline run flags the run
     * (`drift.level: warn` in the manifest). Drift is measured for runs started by a pipeline
     * (against its previous successful run) and runs naming `baselineRun`.
     */
    driftWarn: z.number().min(0).default(0.1),
    /**
     * Population stability index above which the run fails (E_DRIFT) once its outputs are written,
     * without `_SUCCESS`, until `batch-scorer accept` accepts it; none by default.
     */
    driftFail: z.number().min(0).optional(),
    /** The run, in the same --out, whose profile this run's drift is measured against, instead of the pipeline's previous one. */
    baselineRun: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, { message: 'use a run id: letters, digits, ".", "_" and "-" (at most 128)' })
      .optional(),
    /**
     * Shadow scoring: a second model (`project/model[.version]`, on the same service) that every
     * batch is also sent to, under the same concurrency; its answers are compared with the run's
     * model's in `comparison.json`, and never written as outputs.
     */
    compareModel: z
      .string()
      .regex(/^[^/\s]+\/[^/\s]+$/, { message: 'use project/model or project/model.version, e.g. mindsdb/home_rentals_model.2' })
      .optional(),
    /**
     * Queue mode: which runs workers take work from first. A `high` run's waiting segments go
     * before those of `normal` and `low` runs already waiting, `normal` before `low`; runs of one
     * priority go first come, first served. `score` has no queue and ignores it; it never changes
     * a run's output, and a run may be resumed with another.
     */
    priority: z.enum(RUN_PRIORITIES).default('normal'),
    /** Segments scored at once by `score` (queue workers use their own `--segments`). */
    segmentsAtOnce: z.int().min(1).max(64).default(2),
    /** Input columns carried to the output, in input order; by default all of them. Unknown names are an error naming the columns that exist. */
    keepColumns: z.array(columnName).min(1).optional(),
    /** Input columns left out of the output (applied after keepColumns). */
    dropColumns: z.array(columnName).min(1).optional(),
    /**
     * The prediction members written per target, always in the order value, confidence, interval
     * (`_min`, `_max`, for numeric targets), anomaly, explain; by default all but explain (which
     * `explain` adds).
     */
    predictionColumns: z.array(z.enum(PREDICTION_MEMBERS)).min(1).optional(),
    /** Write `row_number` first: the row's 1-based number in the run's input (file then row order). */
    rowNumber: z.boolean().default(false),
    /** One output per input file, named after it, instead of one `predictions.*` for the run. */
    outputPerFile: z.boolean().default(false),
    /** Output compression; by default gzip when every input file was gzipped. Parquet compresses its own pages. */
    compress: z.enum(['gzip', 'none']).optional(),
    /** Rows per output file at most: `predictions-00000.csv`, `predictions-00001.csv`, ... */
    maxRowsPerFile: z.int().min(1).optional(),
    /** CSV field delimiter, one character (`tab` or `\t` for a tab); by default `,`, or a tab for `.tsv` files. */
    delimiter: oneCharacter.optional(),
    /** CSV quote character, one character. */
    quote: oneCharacter.default('"'),
    /** The input's text encoding (`latin1`, `windows-1252`, `utf-16le`, ...); output text is always UTF-8. */
    encoding: z
      .string()
      .refine((name) => knownEncoding(name), { message: 'must be a text encoding such as utf-8, latin1, windows-1252 or utf-16le' })
      .default('utf-8'),
    /** The text encoding of CSV and JSON Lines outputs; UTF-8 unless told otherwise (errors.jsonl is always UTF-8). */
    outputEncoding: z
      .string()
      .refine((name) => knownEncoding(name), { message: 'must be a text encoding such as utf-8, latin1, windows-1252 or utf-16le' })
      .default('utf-8'),
    /**
     * Write the scored rows into this PostgreSQL table (`schema.table`, or `table` in `public`)
     * instead of `predictions.*`: made when missing, checked when present, its rows published in
     * one transaction when the run ends (see src/scoring/table-load.ts). The run folder keeps the
     * rest (manifest, describe snapshot, errors.jsonl, _SUCCESS). None by default.
     */
    outTable: tableNameText.optional(),
    /**
     * The database of `outTable`, `postgresql://user@host:5432/db` (never a password: PGPASSWORD or
     * ~/.pgpass supplies it); by default the input's, when the input is a database, and required
     * otherwise.
     */
    outDatabase: checkedText(parseDatabaseUrl).optional(),
    /**
     * The table that records each run published into `outTable` (its run id, when, rows, manifest,
     * the table); by default `batch_scorer_runs` in the out-table's schema, where a bare name goes too.
     */
    runsTable: tableNameText.optional(),
  })
  .strict();

export type RunOptions = z.output<typeof runOptionsSchema>;

/**
 * The database a run writes its rows to, as written: none without `outTable`; else `outDatabase`,
 * or the input's own database when the input is one (the default of --out-database). Undefined
 * with `outTable` means none was named where one is needed (see checkTableOptions).
 */
export function outDatabaseOf(input: string, options: { outTable?: string; outDatabase?: string }): string | undefined {
  if (options.outTable === undefined) return undefined;
  return options.outDatabase ?? (isDatabaseUrl(input) ? input : undefined);
}

/** `score`'s --concurrency when none is set: its process's requests in flight. */
export const DEFAULT_CONCURRENCY = 4;

/** The requests in flight a run scored in one process (`score`) may have: its --concurrency, or DEFAULT_CONCURRENCY. */
export function processConcurrency(options: Pick<RunOptions, 'concurrency'>): number | 'auto' {
  return options.concurrency ?? DEFAULT_CONCURRENCY;
}

/**
 * Options that change how a run goes but never the bytes it writes: a run may be resumed with
 * other values of these (a higher --max-error-rate after a failure, more --concurrency).
 */
export const OUTPUT_NEUTRAL_OPTIONS: readonly (keyof RunOptions)[] = [
  'runId',
  'concurrency',
  'timeout',
  'retries',
  'maxErrorRate',
  'segmentsAtOnce',
  // Which runs go first on the queue: the order work is taken in, never what it writes.
  'priority',
  // Learnt or taken when the run was planned; a resume goes on with that member.
  'rowIdMember',
  // Whether a changed model fails the run or warns: the output is the same bytes either way.
  'onModelChange',
  // What the run's values are compared with and held to: the outputs are the same bytes.
  'driftWarn',
  'driftFail',
  'baselineRun',
  // The caps (CAP_OPTIONS) stop a run early; what it scores is the same bytes.
  'maxRequests',
  'maxRows',
  'deadline',
];

/**
 * The caps: a run that reaches one stops sending and ends `expired` (E_EXPIRED), keeping what it
 * finished. A resume takes the caps it is asked with, none when it names none: a cap is not kept
 * from the run's earlier attempts as other output-neutral options are.
 */
export const CAP_OPTIONS = ['maxRequests', 'maxRows', 'deadline'] as const satisfies readonly (keyof RunOptions)[];

/** An option as users type it on the command line: `maxErrorRate` is `--max-error-rate`; `params` is set by the repeatable `--param`. */
export function optionFlag(field: string): string {
  return field === 'params' ? '--param' : `--${field.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

export type RunOptionsInput = z.input<typeof runOptionsSchema>;

/**
 * How a message names an option: as a field (`maxErrorRate`), the way config files and job data
 * are written, or as the flag a user typed (`--max-error-rate`).
 */
export type OptionNaming = 'fields' | 'flags';

/**
 * Validates run options, turning zod's issues into one message that starts with `source` (where
 * the options were written) and names each bad option as `naming` says.
 */
export function parseRunOptions(input: unknown, source = 'run options', naming: OptionNaming = 'fields'): RunOptions {
  const result = runOptionsSchema.safeParse(input);
  if (result.success) return result.data;
  throw new UsageError(`${source}: ${formatIssues(result.error, naming)}`);
}

/**
 * zod issues as `field: problem; field: problem`, with option names as users write them. Bounds,
 * types and choices are said as what the value must be (no schema here words those itself).
 */
export function formatIssues(error: z.ZodError, naming: OptionNaming = 'fields'): string {
  const name = (key: PropertyKey) => (naming === 'flags' ? optionFlag(String(key)) : String(key));
  return error.issues
    .map((issue) => {
      const path = issue.path.map((key, i) => (i === 0 ? name(key) : String(key))).join('.');
      if (issue.code === 'unrecognized_keys') return `unknown option(s) ${issue.keys.map((k) => `"${name(k)}"`).join(', ')}`;
      const problem = restate(issue);
      return path ? `${path}: ${problem}` : problem;
    })
    .join('; ');
}

const KINDS: Record<string, string> = { int: 'a whole number', number: 'a number', boolean: 'true or false', string: 'text', record: 'an object' };

/** One zod issue as what the value must be (`must be at most 100000`), without its path. */
export function restate(issue: z.core.$ZodIssue): string {
  if (issue.code === 'too_big' || issue.code === 'too_small') {
    const big = issue.code === 'too_big';
    const bound = Number(big ? issue.maximum : issue.minimum);
    if (issue.origin === 'string')
      return big ? `must be at most ${bound} characters long` : bound === 1 ? 'must not be empty' : `must be at least ${bound} characters long`;
    if (issue.origin === 'number' || issue.origin === 'int') {
      if (issue.inclusive === false) return `must be ${big ? 'below' : 'above'} ${bound}`;
      return `must be at ${big ? 'most' : 'least'} ${bound}`;
    }
  }
  if (issue.code === 'invalid_type' && KINDS[issue.expected] !== undefined) return `must be ${KINDS[issue.expected]}`;
  if (issue.code === 'invalid_value') return `must be ${issue.values.map((v) => JSON.stringify(v)).join(' or ')}`;
  if (issue.code === 'invalid_union') {
    // One of several shapes: `must be a number or "auto"`.
    const branches = issue.errors.map((branch) => (branch[0] ? restate(branch[0]) : ''));
    if (branches.every((b) => b.startsWith('must be '))) return `must be ${branches.map((b) => b.slice('must be '.length)).join(' or ')}`;
  }
  return issue.message;
}

function knownEncoding(name: string): boolean {
  try {
    checkEncoding(name);
    return true;
  } catch {
    return false;
  }
}
