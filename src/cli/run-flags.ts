import { InvalidArgumentError, Option, type Command } from 'commander';
import { z } from 'zod';
import {
  DEFAULT_CONCURRENCY,
  optionFlag,
  parseRunOptions,
  PREDICTION_MEMBERS,
  type RunOptions,
  type RunOptionsInput,
  runOptionsSchema,
  type Settings,
} from '../config/index.js';
import { excerpt } from '../text-excerpt.js';

const int = (flag: string) => (value: string) => {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError(`${flag} takes a whole number, got "${excerpt(value)}"`);
  return Number(value);
};
const fraction = (value: string) => {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n)) throw new InvalidArgumentError(`takes a number from 0 to 1, got "${excerpt(value)}"`);
  return n;
};
const psi = (flag: string) => (value: string) => {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0) throw new InvalidArgumentError(`${flag} takes a number of 0 or more, got "${excerpt(value)}"`);
  return n;
};
const param = (value: string, previous: Record<string, unknown> = {}) => {
  const eq = value.indexOf('=');
  if (eq <= 0) throw new InvalidArgumentError(`--param takes key=value, got "${excerpt(value)}"`);
  const raw = value.slice(eq + 1);
  let parsed: unknown = raw;
  try {
    parsed = JSON.parse(raw);
  } catch {
    // Not JSON: the value is the text as written.
  }
  return { ...previous, [value.slice(0, eq)]: parsed };
};

/** What `<input>` may be, for the help of `score` and `enqueue`. */
export const INPUT_ARGUMENT =
  'input: a file, a folder or prefix ending in / (every file in it), or a glob such as s3://bucket/exports/part-*.csv.gz; local paths, file:///path or s3://bucket/key; CSV, TSV, JSON Lines (optionally .gz) or Parquet; or a PostgreSQL database, postgresql://user@host:5432/db, with --table or --query';

/**
 * How one run option is typed on the command line. Its flag is the field's name (optionFlag), its
 * default is read from the schema: only what the schema cannot say is written here.
 */
interface RunFlag {
  /** The value's name in help (`rows` for `<rows>`); none for a switch, which sets true. */
  value?: string;
  /** What the option does, in a few words; the default is added from the schema. */
  help: string;
  /** Turns the text typed after `flag` into the option's value; the schema then validates it. */
  parse?: (flag: string) => (value: string, previous: never) => unknown;
  /** What leaving an option without a schema default unset means ("the input's"). */
  unset?: string;
  /** The schema's default as help shows it, where the bare value would not read well (bytes as MiB). */
  showDefault?: (value: never) => string;
  /** On `enqueue` only: `score` runs in its own process, with no queue to go first in. */
  queueOnly?: true;
}

/**
 * Every run option's flag, in the order help lists them. Keyed by the schema's fields, so an
 * option added to the schema without a flag, or a flag without a field, does not compile.
 */
const RUN_FLAGS: { readonly [K in keyof RunOptions]-?: RunFlag } = {
  service: { value: 'url', help: 'Model Query Service base URL, or env MODEL_SERVICE_URL' },
  format: { value: 'format', help: 'output format', unset: "the input's" },
  batchSize: { value: 'rows', help: 'rows per predict request', parse: int },
  maxBatchBytes: { value: 'bytes', help: 'JSON bytes per predict request', parse: int, showDefault: (bytes: number) => `${bytes / 1024 / 1024} MiB` },
  concurrency: {
    value: 'n|auto',
    help: `predict requests in flight: score default ${DEFAULT_CONCURRENCY}; queued, the run's across its workers (unset: only the workers' own caps)`,
    parse: (flag) => (v) => (v === 'auto' ? 'auto' : int(flag)(v)),
  },
  timeout: { value: 'ms', help: 'time limit per request', parse: int },
  retries: { value: 'n', help: 'retries of a request that failed for a passing reason', parse: int },
  maxErrorRate: { value: 'fraction', help: 'share of rows that may be quarantined before the run fails', parse: () => fraction },
  explain: { help: 'keep <target>_explain in the output' },
  envelope: { value: 'envelope', help: 'predict body: data ({"data": [...]}, the reference server) or array (bare array)' },
  params: { value: 'key=value', help: 'predict params passed to the engine (repeatable; JSON values allowed)', parse: () => param },
  limit: { value: 'rows', help: 'score only the first N rows (a canary; of a database input, the first N by key)', parse: int },
  query: { value: 'sql', help: 'a database input: the rows of one SELECT, read in a READ ONLY transaction (needs --segment-by)' },
  table: { value: 'schema.table', help: 'a database input: the rows of this table' },
  segmentBy: {
    value: 'column',
    help: "a database input: the unique, never NULL key column segments are ranges of, and the rows' order",
    unset: "--table's primary key",
  },
  maxRequests: { value: 'n', help: 'cap: predict calls in all, retries and resumes counted; past it the run ends expired', parse: int },
  maxRows: { value: 'n', help: 'cap: rows sent to the model in all, retries and resumes counted; past it the run ends expired', parse: int },
  deadline: { value: 'duration|time', help: 'cap: stop sending at this time: 90s, 30m, 2h from the start, or 2026-11-26T06:00:00Z' },
  runId: { value: 'id', help: "run id and folder name; an unfinished run's id resumes it", unset: 'time-based' },
  strictColumns: { help: "fail when the input lacks some of the model's input columns" },
  segmentRows: { value: 'rows', help: 'rows per segment, the unit of resuming and of queue work', parse: int },
  segmentsAtOnce: { value: 'n', help: 'segments `score` works on at once; workers use their --segments', parse: int },
  rowIdMember: { value: 'name', help: 'row id member the server echoes, proving each answer row; auto: learnt when planning' },
  onModelChange: { value: 'action', help: 'a model retrained mid-run on a server without versions: fail the run or warn' },
  driftWarn: { value: 'psi', help: "flag the run when a column's PSI from its baseline run is above this", parse: psi },
  driftFail: { value: 'psi', help: 'fail the run (E_DRIFT, outputs kept, no _SUCCESS) when a PSI is above this', parse: psi, unset: 'never' },
  baselineRun: { value: 'id', help: 'measure drift against this run in the same --out', unset: "a pipeline's previous successful run" },
  compareModel: {
    value: 'project/model[.version]',
    help: "shadow scoring: send every batch to this model too and write comparison.json (under the run's --concurrency)",
  },
  keepColumns: { value: 'names', help: 'input columns to carry to the output, comma-separated (repeatable)', parse: () => names, unset: 'all' },
  dropColumns: { value: 'names', help: 'input columns to leave out of the output, comma-separated (repeatable)', parse: () => names },
  predictionColumns: {
    value: 'members',
    help: `prediction members to write, comma-separated, of ${PREDICTION_MEMBERS.join(', ')}`,
    parse: () => names,
    unset: 'all but explain',
  },
  rowNumber: { help: "write row_number first: the row's 1-based number in the input" },
  outputPerFile: { help: 'one output per input file, named after it, in predictions/' },
  compress: { value: 'codec', help: 'output compression', unset: 'gzip when every input is gzipped' },
  maxRowsPerFile: { value: 'rows', help: 'cut the output into files of at most N rows: predictions-00000.csv, ...', parse: int },
  delimiter: { value: 'char', help: 'CSV field delimiter, one character; tab or \\t for a tab', unset: ', or a tab for .tsv' },
  quote: { value: 'char', help: 'CSV quote character' },
  encoding: { value: 'name', help: "the input's text encoding: latin1, windows-1252, utf-16le, ..." },
  outputEncoding: { value: 'name', help: 'the text encoding of CSV and JSON Lines outputs' },
  outTable: { value: 'schema.table', help: 'write the scored rows into this PostgreSQL table (made when missing), not predictions.*' },
  outDatabase: {
    value: 'url',
    help: 'the database of --out-table, postgresql://user@host:5432/db (password from PGPASSWORD or ~/.pgpass)',
    unset: "the input's, when it is a database",
  },
  runsTable: { value: 'schema.table', help: 'the table recording each run published into --out-table', unset: "batch_scorer_runs in --out-table's schema" },
  priority: { value: 'level', help: "how soon workers take the run's segments: high before normal before low, even those already waiting", queueOnly: true },
};

/** The run options' defaults, as the schema fills them in. */
const SCHEMA_DEFAULTS: Partial<RunOptions> = runOptionsSchema.parse({});

/** The run option fields `command` has a flag for. */
export function runFlagFields(command: 'score' | 'enqueue'): (keyof RunOptions)[] {
  return (Object.keys(RUN_FLAGS) as (keyof RunOptions)[]).filter((field) => command === 'enqueue' || !RUN_FLAGS[field].queueOnly);
}

/** The flags of `score` and `enqueue`: the model, the output and every run option (`--priority` on `enqueue` only). */
export function addRunFlags(command: Command, name: 'score' | 'enqueue'): Command {
  command
    .requiredOption('--model <project/model[.version]>', 'the model to score with, e.g. mindsdb/home_rentals_model or mindsdb/home_rentals_model.2')
    .requiredOption('--out <prefix>', 'where run folders go: a local folder or s3://bucket/prefix');
  for (const field of runFlagFields(name)) command.addOption(runFlagOption(field));
  return command;
}

/** The commander option of one run option: flag and value name, help with its default, parser and choices. */
function runFlagOption(field: keyof RunOptions): Option {
  const spec = RUN_FLAGS[field];
  const flag = optionFlag(field);
  const option = new Option(spec.value ? `${flag} <${spec.value}>` : flag, `${spec.help}${defaultNote(field, spec)}`);
  // Each parser takes the previous value of its own kind (a repeatable flag's list so far).
  if (spec.parse) option.argParser(spec.parse(flag) as (value: string, previous: unknown) => unknown);
  const choices = enumChoices(runOptionsSchema.shape[field]);
  if (choices) option.choices(choices);
  return option;
}

/**
 * ` (default: X)`, X the schema's default or what unset means; nothing for an option without one,
 * a switch (off unless given) or `--param` (no params unless given).
 */
function defaultNote(field: keyof RunOptions, spec: RunFlag): string {
  const value = SCHEMA_DEFAULTS[field];
  if (spec.unset !== undefined) return ` (default: ${spec.unset})`;
  if (value === undefined || typeof value === 'boolean' || typeof value === 'object') return '';
  return ` (default: ${spec.showDefault ? spec.showDefault(value as never) : String(value)})`;
}

/** The values an enum option takes, read from its schema through optional and default; undefined for any other. */
function enumChoices(schema: z.ZodType): readonly string[] | undefined {
  if (schema instanceof z.ZodEnum) return schema.options as string[];
  if (schema instanceof z.ZodOptional || schema instanceof z.ZodDefault) return enumChoices(schema.def.innerType as z.ZodType);
  return undefined;
}

/** A comma-separated list, repeatable: `--keep-columns a,b --keep-columns c`. */
function names(value: string, previous: string[] = []): string[] {
  return [...previous, ...value.split(',').map((n) => n.trim())];
}

/** Where commander keeps a flag's value: `--max-error-rate` under maxErrorRate, `--param` under param. */
function flagAttribute(field: keyof RunOptions): string {
  return optionFlag(field)
    .slice(2)
    .replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}

/** The run options set by flags over settings (environment and config files); schema defaults not filled in. */
export function runOptionsInputFromFlags(flags: Record<string, unknown>, settings: Settings): RunOptionsInput {
  const given: Record<string, unknown> = {};
  for (const field of Object.keys(RUN_FLAGS) as (keyof RunOptions)[]) if (flags[flagAttribute(field)] !== undefined) given[field] = flags[flagAttribute(field)];
  return { ...settings.runDefaults, ...given };
}

/** Run options from flags over settings, validated, with every default; a bad one is named by its flag after `command`. */
export function runOptionsFromFlags(flags: Record<string, unknown>, settings: Settings, command: string): RunOptions {
  return parseRunOptions(runOptionsInputFromFlags(flags, settings), command, 'flags');
}
