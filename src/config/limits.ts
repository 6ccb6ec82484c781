import { BatchScorerError } from '../errors.js';

/**
 * One bound on a size a peer controls (a model's answers, an input's bytes, a submission): what it
 * bounds, the environment variable that sets it, its default, and what happens past it.
 * docs/limits.md is generated from LIMITS, and ENV_SETTINGS lists each variable from it, so a bound
 * is declared here once. Bounds are deployment settings, never run options: whoever submits a run
 * cannot raise them.
 */
export interface LimitSpec {
  /** The environment variable that sets it, e.g. `MAX_ANSWER_BYTES`. */
  setting: string;
  /** What applies when the variable is unset. */
  default: number;
  /** How the value reads: `bytes` also takes a KiB, MiB or GiB suffix (`64MiB`). */
  unit: 'bytes' | 'count' | 'ratio' | 'seconds';
  /** The smallest value the setting takes. */
  min: number;
  /** What it bounds, in a sentence (Markdown). */
  bounds: string;
  /** What happens past it: a submission's 4xx, a run's E_* code, or a row's quarantine (Markdown). */
  past: string;
}

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;

/** Below this, a gzipped input is never refused for its inflation ratio (a small file of one repeated value inflates far). */
export const INFLATION_FLOOR_BYTES = 64 * MiB;

/**
 * Below this, an answer is never refused for its ratio to the request (a one-row batch of a
 * model that explains itself answers many times the row's bytes).
 */
export const ANSWER_FLOOR_BYTES = 1 * MiB;

/** Every bound on a size a peer controls, by the name code reads it under (see LimitSpec). */
export const LIMITS = {
  answerBytes: {
    setting: 'MAX_ANSWER_BYTES',
    default: 64 * MiB,
    unit: 'bytes',
    min: 1 * KiB,
    bounds: "A predict answer's bytes, whatever the batch.",
    past: 'the run fails `E_LIMIT`, not retried: the answer is read no further (nor at all when its `Content-Length` is past it)',
  },
  answerRatio: {
    setting: 'MAX_ANSWER_RATIO',
    default: 64,
    unit: 'ratio',
    min: 1,
    bounds: `A predict answer's bytes per byte of its request (answers below ${ANSWER_FLOOR_BYTES / MiB} MiB are never refused for it).`,
    past: 'the run fails `E_LIMIT`, not retried: the answer is read no further (nor at all when its `Content-Length` is past it)',
  },
  answerDepth: {
    setting: 'MAX_ANSWER_DEPTH',
    default: 64,
    unit: 'count',
    min: 4,
    bounds: 'How deep arrays and objects nest in a predict or describe answer.',
    past: 'the run fails `E_LIMIT`, not retried, before the answer is parsed',
  },
  describeBytes: {
    setting: 'MAX_DESCRIBE_BYTES',
    default: 16 * MiB,
    unit: 'bytes',
    min: 1 * KiB,
    bounds: "A describe answer's bytes (stored as the run's `describe.json`).",
    past: 'the run fails `E_LIMIT` before it plans; none of the answer is written',
  },
  segments: {
    setting: 'MAX_SEGMENTS',
    default: 10_000,
    unit: 'count',
    min: 1,
    bounds: "Segments in one run, and so the smallest `--segment-rows` (`segmentRows`) a file's rows allow.",
    past: '`POST /runs` answers 422 `E_LIMIT` naming the smallest `segmentRows` (`enqueue` and `score` exit 1 so), before any job exists, when it can be checked within the dry-run bounds; otherwise the run fails `E_LIMIT` while it plans, before any segment job is added',
  },
  fieldBytes: {
    setting: 'MAX_FIELD_BYTES',
    default: 1 * MiB,
    unit: 'bytes',
    min: 64,
    bounds: "One field's bytes in a CSV or JSON Lines row, as written (a CSV field with its quotes; in JSON Lines, one string, a key or a value).",
    past: 'the row is quarantined (in `errors.jsonl`, with an excerpt); the run goes on (a CSV header past it fails the run `E_LIMIT`)',
  },
  rowBytes: {
    setting: 'MAX_ROW_BYTES',
    default: 4 * MiB,
    unit: 'bytes',
    min: 256,
    bounds: "One row's bytes in a CSV or JSON Lines file, without its line ending: about the most of a row reading holds.",
    past: 'the row is quarantined (in `errors.jsonl`, with an excerpt); the run goes on (a CSV header past it fails the run `E_LIMIT`)',
  },
  inflatedBytes: {
    setting: 'MAX_INFLATED_BYTES',
    default: 64 * GiB,
    unit: 'bytes',
    min: 1 * MiB,
    bounds: "A gzipped input file's bytes once inflated (and a gzipped output's, read by `compare`).",
    past: 'the run fails `E_LIMIT`; its partial staged copy is removed',
  },
  inflationRatio: {
    setting: 'MAX_INFLATION_RATIO',
    default: 200,
    unit: 'ratio',
    min: 1,
    bounds: `A gzipped input file's inflated bytes per compressed byte of the whole file (files inflating to at most ${INFLATION_FLOOR_BYTES / MiB} MiB are never refused for it).`,
    past: 'the run fails `E_LIMIT`; its partial staged copy is removed',
  },
  stagingFreeBytes: {
    setting: 'MIN_STAGING_FREE_BYTES',
    default: 1 * GiB,
    unit: 'bytes',
    min: 0,
    bounds:
      'Free disk space a local staged copy (of a gzipped or non-UTF-8 input) must leave: checked before staging, against the size gzip declares (a lower bound: it is mod 4 GiB), and every 64 MiB written. Staging into S3 is not checked.',
    past: 'the run fails `E_LIMIT`, before the copy is begun or with its partial copy removed',
  },
  parquetFooterBytes: {
    setting: 'MAX_PARQUET_FOOTER_BYTES',
    default: 16 * MiB,
    unit: 'bytes',
    min: 1 * KiB,
    bounds: "A Parquet file's footer (its metadata) bytes.",
    past: 'the run fails `E_LIMIT`, before the footer is read',
  },
  parquetRowGroups: {
    setting: 'MAX_PARQUET_ROW_GROUPS',
    default: 20_000,
    unit: 'count',
    min: 1,
    bounds: 'Row groups in one Parquet file.',
    past: 'the run fails `E_LIMIT`, before the footer is parsed or any row read',
  },
  dryRunSeconds: {
    setting: 'MAX_DRY_RUN_SECONDS',
    default: 30,
    unit: 'seconds',
    min: 1,
    bounds:
      "The time a dry run submitted to `serve` (`POST /runs` with `dryRun`) may take on the server; also the time `serve`, `enqueue` and `score` spend checking an input's segments against `MAX_SEGMENTS`.",
    past: "the dry run stops and the request answers 422 `E_LIMIT` (run the dry run with the CLI instead, which has no such bound); a check stops, and the run's planning checks instead",
  },
  dryRunBytes: {
    setting: 'MAX_DRY_RUN_BYTES',
    default: 1 * GiB,
    unit: 'bytes',
    min: 1 * MiB,
    bounds:
      "The input bytes a dry run submitted to `serve` may read as it plans (inflated bytes counted); also what `serve`, `enqueue` and `score` may read checking an input's segments against `MAX_SEGMENTS`.",
    past: "the dry run stops and the request answers 422 `E_LIMIT` (run the dry run with the CLI instead, which has no such bound); a check stops, and the run's planning checks instead",
  },
  idempotencyKeys: {
    setting: 'MAX_IDEMPOTENCY_KEYS',
    default: 100_000,
    unit: 'count',
    min: 1,
    bounds: '`Idempotency-Key`s `serve` remembers (each for 24 h), counted in Redis across every `serve` of the deployment.',
    past: 'the oldest keys are forgotten first, as if their 24 h had passed',
  },
} as const satisfies Record<string, LimitSpec>;

/** A bound's name in LIMITS. */
export type LimitName = keyof typeof LIMITS;

/** The bounds a process applies: each LIMITS entry's value. */
export type Limits = { readonly [K in LimitName]: number };

/** Every bound at its default. */
export const DEFAULT_LIMITS: Limits = Object.fromEntries(Object.entries(LIMITS).map(([name, spec]) => [name, spec.default])) as Limits;

const BYTE_SUFFIXES: Record<string, number> = { '': 1, b: 1, kib: KiB, kb: KiB, k: KiB, mib: MiB, mb: MiB, m: MiB, gib: GiB, gb: GiB, g: GiB };

/** Reads each bound's variable, or takes its default; a bad value is E_CONFIG naming the variable. */
export function limitsFromEnv(env: NodeJS.ProcessEnv): Limits {
  const limits: Record<string, number> = {};
  for (const [name, spec] of Object.entries(LIMITS) as [LimitName, LimitSpec][]) {
    const text = env[spec.setting]?.trim();
    limits[name] = text ? limitValue(spec, text) : spec.default;
  }
  return limits as Limits;
}

function limitValue(spec: LimitSpec, text: string): number {
  const match = /^(\d+(?:\.\d+)?)\s*([a-zA-Z]*)$/.exec(text);
  const scale = match && (spec.unit === 'bytes' ? BYTE_SUFFIXES[match[2].toLowerCase()] : match[2] === '' ? 1 : undefined);
  const value = match && scale !== undefined && scale !== null ? Math.floor(Number(match[1]) * scale) : NaN;
  if (!(value >= spec.min) || !Number.isSafeInteger(value)) {
    const form = spec.unit === 'bytes' ? 'a number of bytes, with KiB, MiB or GiB if you like (e.g. 64MiB)' : 'a number';
    throw new BatchScorerError('E_CONFIG', `${spec.setting} must be ${form} of at least ${spec.min}; it is "${text.slice(0, 40)}"`);
  }
  return value;
}

/** A bound's value as docs and messages show it: `64 MiB`, `10,000`, `30 s`. */
export function formatLimit(name: LimitName, value: number): string {
  return formatBound(LIMITS[name].unit, value);
}

/** A value in its unit as docs and messages show it. */
function formatBound(unit: LimitSpec['unit'] | FixedBound['unit'], value: number): string {
  if (unit === 'seconds') return `${value} s`;
  if (unit === 'levels') return `${value} levels`;
  if (unit !== 'bytes') return value.toLocaleString('en-US');
  for (const [suffix, size] of [
    ['GiB', GiB],
    ['MiB', MiB],
    ['KiB', KiB],
  ] as const) {
    if (value >= size && value % size === 0) return `${value / size} ${suffix}`;
  }
  return `${value.toLocaleString('en-US')} bytes`;
}

/** A bound no setting moves: the code holds it as a constant, which test/unit/limits.test.ts keeps equal to `value`. */
export interface FixedBound {
  /** The constant that holds it, where it is used (`http/http-errors.ts BODY_LIMIT_BYTES`). */
  constant: string;
  value: number;
  unit: 'bytes' | 'count' | 'levels' | 'characters';
  /** What it bounds (Markdown). */
  bounds: string;
  /** What happens past it (Markdown). */
  past: string;
}

/**
 * The bounds fixed in the code, listed beside LIMITS in docs/limits.md: each is small enough that
 * no real use comes near it, so it is not a setting.
 */
export const FIXED_BOUNDS: readonly FixedBound[] = [
  {
    constant: 'http/http-errors.ts BODY_LIMIT_BYTES',
    value: 64 * KiB,
    unit: 'bytes',
    bounds: "An HTTP API request's body.",
    past: '413, "request body too large"',
  },
  {
    constant: 'http/idempotency-key.ts MAX_IDEMPOTENCY_KEY_LENGTH',
    value: 255,
    unit: 'characters',
    bounds: 'An `Idempotency-Key` (printable ASCII).',
    past: '400 `E_USAGE`',
  },
  {
    constant: 'config/run-options.ts MAX_PARAMS_BYTES',
    value: 16 * KiB,
    unit: 'bytes',
    bounds: 'The `params` of a run, as JSON.',
    past: '`E_USAGE` naming `--param` (`params`)',
  },
  {
    constant: 'config/run-options.ts MAX_PARAMS_DEPTH',
    value: 32,
    unit: 'levels',
    bounds: 'How deep `params` nest.',
    past: '`E_USAGE` naming `--param` (`params`)',
  },
  { constant: 'formats/row-parser.ts MAX_ROW_DEPTH', value: 64, unit: 'levels', bounds: 'How deep a JSON Lines row nests.', past: 'the row is quarantined' },
  {
    constant: 'scoring/plan.ts MAX_JSONL_KEYS',
    value: 10_000,
    unit: 'count',
    bounds: 'Distinct keys (columns) of a JSON Lines input.',
    past: 'the run fails `E_INPUT`, naming the line',
  },
  {
    constant: 'text-excerpt.ts MESSAGE_BYTES',
    value: 4 * KiB,
    unit: 'bytes',
    bounds: 'An error message, wherever it goes (log, manifest, Redis, API); a value it quotes takes 1 KiB at most.',
    past: 'cut, ending "... N more bytes"',
  },
  {
    constant: 'notify/pipeline-notify.ts MAX_TARGETS',
    value: 10,
    unit: 'count',
    bounds: 'Webhook URLs one pipeline declares.',
    past: 'the declaration is refused, by `pipelines check` and every command that reads `jobs/`',
  },
  { constant: 'notify/run-end.ts MESSAGE_BYTES', value: 500, unit: 'bytes', bounds: "A run's error message in a webhook body.", past: 'cut' },
  {
    constant: 'lineage/lineage-sender.ts MAX_PENDING',
    value: 1_000,
    unit: 'count',
    bounds: 'OpenLineage events waiting to be sent by one process.',
    past: 'new events are dropped, with a warning',
  },
];

/** A fixed bound's value as docs show it. */
export function formatFixedBound(bound: FixedBound): string {
  return bound.unit === 'characters' ? `${bound.value} characters` : formatBound(bound.unit, bound.value);
}

/**
 * The error of a size past its bound: E_LIMIT, naming the setting that raises it (a submission
 * answers its 4xx status from the catalogue, a run fails with it).
 */
export function limitError(name: LimitName, value: number, what: string): BatchScorerError {
  const { setting } = LIMITS[name];
  return new BatchScorerError('E_LIMIT', `${what} passes ${setting} (${formatLimit(name, value)}): raise ${setting} if this is expected`);
}
