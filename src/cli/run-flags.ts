import { InvalidArgumentError, Option, type Command } from 'commander';
import { parseRunOptions, PREDICTION_MEMBERS, RUN_PRIORITIES, type RunOptions, type RunOptionsInput } from '../config/run-options.js';
import type { Settings } from '../config/settings.js';
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
  'input: a file, a folder or prefix ending in / (every file in it), or a glob such as s3://bucket/exports/part-*.csv.gz; local paths, file:///path or s3://bucket/key; CSV, TSV, JSON Lines (optionally .gz) or Parquet';

/** The run option flags shared by `score` and `enqueue`. */
export function addRunFlags(command: Command): Command {
  return command
    .requiredOption('--model <project/model[.version]>', 'the model to score with, e.g. mindsdb/home_rentals_model or mindsdb/home_rentals_model.2')
    .requiredOption('--out <prefix>', 'where run folders go: a local folder or s3://bucket/prefix')
    .option('--service <url>', 'Model Query Service base URL (env MODEL_SERVICE_URL; default http://127.0.0.1:47334)')
    .addOption(new Option('--format <format>', "output format (default: the input's)").choices(['csv', 'jsonl', 'parquet']))
    .option('--batch-size <rows>', 'rows per predict request (default 1000)', int('--batch-size'))
    .option('--max-batch-bytes <bytes>', 'JSON bytes per predict request (default 4 MiB)', int('--max-batch-bytes'))
    .option(
      '--concurrency <n|auto>',
      "predict requests in flight: score default 4; queued, the run's across its workers (unset: only the workers' own caps)",
      (v) => (v === 'auto' ? 'auto' : int('--concurrency')(v)),
    )
    .option('--timeout <ms>', 'time limit per request (default 60000)', int('--timeout'))
    .option('--retries <n>', 'retries of a request that failed for a passing reason (default 6)', int('--retries'))
    .option('--max-error-rate <fraction>', 'share of rows that may be quarantined before the run fails (default 0.01)', fraction)
    .option('--explain', 'keep <target>_explain in the output')
    .addOption(
      new Option('--envelope <envelope>', 'predict body: data ({"data": [...]}, the reference server) or array (bare array)').choices(['data', 'array']),
    )
    .option('--param <key=value>', 'predict params passed to the engine (repeatable; JSON values allowed)', param)
    .option('--limit <rows>', 'score only the first N rows (a canary)', int('--limit'))
    .option('--max-requests <n>', 'cap: predict calls in all, retries and resumes counted; past it the run ends expired', int('--max-requests'))
    .option('--max-rows <n>', 'cap: rows sent to the model in all, resumes counted; past it the run ends expired', int('--max-rows'))
    .option('--deadline <duration|time>', 'cap: stop sending at this time: 90s, 30m, 2h from the start, or 2026-11-26T06:00:00Z')
    .option('--run-id <id>', "run id and folder name (default: time-based); an unfinished run's id resumes it")
    .option('--strict-columns', "fail when the input lacks some of the model's input columns")
    .option('--segment-rows <rows>', 'rows per segment, the unit of resuming and of queue work (default 20000)', int('--segment-rows'))
    .option('--segments-at-once <n>', 'segments `score` works on at once (default 2; workers use their --segments)', int('--segments-at-once'))
    .option('--row-id-member <name>', 'row id member the server echoes, proving each answer row (default auto: learnt when planning)')
    .addOption(
      new Option('--on-model-change <action>', 'a model retrained mid-run on a server without versions: fail the run (default) or warn').choices([
        'fail',
        'warn',
      ]),
    )
    .option('--drift-warn <psi>', "flag the run when a column's PSI from its baseline run is above this (default 0.1)", psi('--drift-warn'))
    .option('--drift-fail <psi>', 'fail the run (E_DRIFT, outputs kept, no _SUCCESS) when a PSI is above this (default: never)', psi('--drift-fail'))
    .option('--baseline-run <id>', "measure drift against this run in the same --out (default: a pipeline's previous successful run)")
    .option(
      '--compare-model <project/model[.version]>',
      "shadow scoring: send every batch to this model too and write comparison.json (under the run's --concurrency)",
    )
    .option('--keep-columns <names>', 'input columns to carry to the output, comma-separated (repeatable; default all)', names)
    .option('--drop-columns <names>', 'input columns to leave out of the output, comma-separated (repeatable)', names)
    .option(
      '--prediction-columns <members>',
      `prediction members to write, comma-separated, of ${PREDICTION_MEMBERS.join(', ')} (default all but explain)`,
      names,
    )
    .option('--row-number', "write row_number first: the row's 1-based number in the input")
    .option('--output-per-file', 'one output per input file, named after it, in predictions/')
    .addOption(new Option('--compress <codec>', 'output compression (default gzip when every input is gzipped)').choices(['gzip', 'none']))
    .option('--max-rows-per-file <rows>', 'cut the output into files of at most N rows: predictions-00000.csv, ...', int('--max-rows-per-file'))
    .option('--delimiter <char>', 'CSV field delimiter, one character; tab or \\t for a tab (default , or a tab for .tsv)')
    .option('--quote <char>', 'CSV quote character (default ")')
    .option('--encoding <name>', "the input's text encoding: latin1, windows-1252, utf-16le, ... (default utf-8)")
    .option('--output-encoding <name>', 'the text encoding of CSV and JSON Lines outputs (default utf-8)');
}

/** `--priority`, on `enqueue` only: `score` runs in its own process, with no queue to go first in. */
export function addPriorityFlag(command: Command): Command {
  return command.addOption(
    new Option(
      '--priority <level>',
      "how soon workers take the run's segments: high before normal before low, even those already waiting (default normal)",
    ).choices(RUN_PRIORITIES),
  );
}

/** A comma-separated list, repeatable: `--keep-columns a,b --keep-columns c`. */
function names(value: string, previous: string[] = []): string[] {
  return [...previous, ...value.split(',').map((n) => n.trim())];
}

const RUN_FLAG_KEYS = [
  'service',
  'format',
  'batchSize',
  'maxBatchBytes',
  'concurrency',
  'timeout',
  'retries',
  'maxErrorRate',
  'explain',
  'envelope',
  'params',
  'limit',
  'maxRequests',
  'maxRows',
  'deadline',
  'runId',
  'strictColumns',
  'segmentRows',
  'rowIdMember',
  'segmentsAtOnce',
  'priority',
  'onModelChange',
  'driftWarn',
  'driftFail',
  'baselineRun',
  'compareModel',
  'keepColumns',
  'dropColumns',
  'predictionColumns',
  'rowNumber',
  'outputPerFile',
  'compress',
  'maxRowsPerFile',
  'delimiter',
  'quote',
  'encoding',
  'outputEncoding',
] as const;

/** The run options set by flags over settings (environment and config files); schema defaults not filled in. */
export function runOptionsInputFromFlags(flags: Record<string, unknown>, settings: Settings): RunOptionsInput {
  const given: RunOptionsInput = {};
  const renamed: Record<string, unknown> = { ...flags, params: flags.param };
  for (const key of RUN_FLAG_KEYS) if (renamed[key] !== undefined) (given as Record<string, unknown>)[key] = renamed[key];
  return { ...settings.runDefaults, ...given };
}

/** Run options from flags over settings, validated, with every default; a bad one is named by its flag after `command`. */
export function runOptionsFromFlags(flags: Record<string, unknown>, settings: Settings, command: string): RunOptions {
  return parseRunOptions(runOptionsInputFromFlags(flags, settings), command, 'flags');
}
