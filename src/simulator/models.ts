/**
 * The simulator's model catalog and its deterministic prediction formulas. Exported so tests and
 * benchmarks can recompute every expected answer instead of trusting the server.
 */

/** The only project, named like the default project of the reference server. */
export const PROJECT_NAME = 'mindsdb';

/** Describe `features` column types, as the reference engine (lightwood) names them. */
export type ColumnType = 'integer' | 'float' | 'categorical' | 'binary' | 'text';

/**
 * The engine the models answer like (see docs/real-servers.md):
 * - `lightwood`: MindsDB's default engine up to 25.x. Answers echo every input, with
 *   `<target>_anomaly`, `_original` and `_explain`; describe knows info, features, model, jsonai.
 * - `byom`: MindsDB 26.x, which no longer ships lightwood, with a Bring-Your-Own-Model engine like
 *   the real-server suite's (test/mindsdb/byom/linear_model.py). Answers carry only the engine's
 *   columns, and the row id when the request rows carried it; ACCURACY is null; describe answers
 *   `info` and `[]` for any other attribute.
 */
export type EngineFlavour = 'lightwood' | 'byom';

/**
 * The name of the engine each flavour's models were made with, which the reference server puts in
 * front of an engine's error (`[<engine>/<model>]: ...`); `byom` is the real-server suite's engine.
 */
export const ENGINE_NAMES: Readonly<Record<EngineFlavour, string>> = { lightwood: 'lightwood', byom: 'scorer_byom' };

/**
 * Training states a client must tell apart (`complete` answers, the others must not be used).
 * `training` is shown as `generating` by the byom flavour: MindsDB 26 shows no other state
 * until a Bring-Your-Own-Model engine's training ends.
 */
export type ModelStatus = 'complete' | 'training' | 'error';

export interface ModelVersion {
  readonly version: number;
  readonly status: ModelStatus;
  /** Null while training, as on the reference server (and always for the byom flavour). */
  readonly accuracy: number | null;
  /** Why training failed, as the reference server words it (status `error` only). */
  readonly trainingError?: string;
  /** The target members of one answer row (see `predictTargets`). */
  readonly predict: (row: Record<string, unknown>) => Record<string, unknown>;
}

export interface ModelDefinition {
  readonly name: string;
  readonly target: string;
  /** Input columns in model order: the order of the echo and of describe `inputs`. */
  readonly inputs: readonly string[];
  /** Types of the inputs and the target, for describe `features`. */
  readonly columnTypes: Readonly<Record<string, ColumnType>>;
  /** Describe `column_importances`; one value is above 1, as real servers allow. */
  readonly importances: Readonly<Record<string, number>>;
  readonly activeVersion: number;
  readonly versions: readonly ModelVersion[];
  /**
   * Rows the last input row of a request expands into (time-series forecast horizon); 1 for
   * ordinary models, whose answers line up one to one with the request.
   */
  readonly horizon: number;
  /** Trained fine but must be retrained before it predicts (reference: UPDATE_STATUS 'available'). */
  readonly obsolete: boolean;
  readonly selectDataQuery: string;
  /** The training options as describe's TRAINING_OPTIONS writes them: Python's `str()` of a dict. */
  readonly trainingOptions: string;
}

/** A finite number read loosely, as the formulas need: numbers, numeric strings, else 0. */
export function num(v: unknown): number {
  if (typeof v === 'number') return Number.isFinite(v) ? v : 0;
  if (typeof v === 'string' && v !== '') {
    const n = Number(v.trim());
    if (Number.isFinite(n)) return n;
  }
  return 0;
}

export function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** 32-bit FNV-1a over UTF-16 code units, unsigned: a cheap stable hash for per-row confidences. */
export function fnv1a(str: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < str.length; i++) {
    h ^= str.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

const DECIMAL = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

/**
 * An input value as the server echoes it: a decimal string becomes a number (`"823"` → 823, as
 * the reference server's dataframe does), a missing value becomes null, anything else is kept.
 */
export function retype(v: unknown): unknown {
  if (v === undefined) return null;
  if (typeof v === 'string' && DECIMAL.test(v)) {
    const n = Number(v);
    if (Number.isFinite(n)) return n;
  }
  return v;
}

/** The inputs of `home_rentals_model`, in model order. */
export const HOME_RENTALS_INPUTS = ['number_of_rooms', 'number_of_bathrooms', 'sqft', 'location', 'days_on_market', 'initial_price', 'neighborhood'] as const;

const HOME_RENTALS_TYPES: Record<string, ColumnType> = {
  number_of_rooms: 'integer',
  number_of_bathrooms: 'integer',
  sqft: 'integer',
  location: 'categorical',
  days_on_market: 'integer',
  initial_price: 'integer',
  neighborhood: 'categorical',
  rental_price: 'integer',
};

const HOME_RENTALS_IMPORTANCES: Record<string, number> = {
  number_of_rooms: 0.21,
  number_of_bathrooms: 0.14,
  sqft: 1.12,
  location: 0.35,
  days_on_market: 0.08,
  initial_price: 0.62,
  neighborhood: 0.27,
};

const LOCATION_BONUS = new Map<unknown, number>([
  ['great', 400],
  ['good', 200],
  ['poor', 0],
]);

/** The raw inputs in model order (missing as null), JSON-encoded: what a row's confidence hashes. */
function inputsKey(row: Record<string, unknown>, inputs: readonly string[]): string {
  return JSON.stringify(inputs.map((c) => row[c] ?? null));
}

/**
 * Builds the members of a numeric target. Member names are made once per target, so every answer
 * row is built with the same key sequence (fast objects; this runs once per row served).
 */
function numericTarget(target: string): (value: number, confidence: number, min: number, max: number) => Record<string, unknown> {
  const confidenceName = `${target}_confidence`;
  const minName = `${target}_min`;
  const maxName = `${target}_max`;
  const anomalyName = `${target}_anomaly`;
  const originalName = `${target}_original`;
  const explainName = `${target}_explain`;
  return (value, confidence, min, max) => {
    const out: Record<string, unknown> = {};
    out[target] = value;
    out[confidenceName] = confidence;
    out[minName] = min;
    out[maxName] = max;
    out[anomalyName] = null;
    out[originalName] = null;
    out[explainName] = JSON.stringify({
      predicted_value: value,
      confidence,
      anomaly: null,
      truth: null,
      confidence_lower_bound: min,
      confidence_upper_bound: max,
    });
    return out;
  };
}

const rentalPrice = numericTarget('rental_price');
const salesNext = numericTarget('sales_next');

function homeRentals(version: 1 | 2): (row: Record<string, unknown>) => Record<string, unknown> {
  return (row) => {
    const bonus = LOCATION_BONUS.get(row.location) ?? 100;
    const base = 300 + 2.5 * num(row.sqft) + 120 * num(row.number_of_rooms) + 60 * num(row.number_of_bathrooms) - 1.5 * num(row.days_on_market);
    const value = round(version === 2 ? base + 0.1 * num(row.initial_price) + bonus : base + bonus + 50, 2);
    const confidence = round(0.5 + (fnv1a(inputsKey(row, HOME_RENTALS_INPUTS)) % 4900) / 10000, 4);
    const width = round(Math.abs(value) * 0.08 + 25, 2);
    // Negative sqft yields a broken interval (min above the value) so clients can count violations.
    const min = num(row.sqft) < 0 ? round(value + 1, 2) : round(value - width, 2);
    const max = round(value + width, 2);
    return rentalPrice(value, confidence, min, max);
  };
}

/**
 * Whether a challenger model (`*_challenger`) answers this row differently from its champion:
 * every 20th row by the row id the request carries (`__mindsdb_row_id` or `__service_row_id`),
 * else by a hash of the row, so that a run of a multiple of 20 rows differs on exactly 5%.
 */
export function challengerDisagrees(row: Record<string, unknown>): boolean {
  const id = row.__mindsdb_row_id ?? row.__service_row_id;
  return typeof id === 'number' ? id % 20 === 19 : fnv1a(JSON.stringify(row)) % 20 === 19;
}

/** A champion's answers, but 10% higher (interval too) on the rows challengerDisagrees picks. */
function rentalsChallenger(row: Record<string, unknown>): Record<string, unknown> {
  const out = homeRentals(2)(row);
  if (!challengerDisagrees(row)) return out;
  const [value, min, max] = [num(out.rental_price), num(out.rental_price_min), num(out.rental_price_max)];
  return rentalPrice(round(value * 1.1, 2), num(out.rental_price_confidence), round(min * 1.1, 2), round(max * 1.1, 2));
}

/** customer_churn's answers, the class flipped on the rows challengerDisagrees picks. */
function churnChallenger(row: Record<string, unknown>): Record<string, unknown> {
  const out = customerChurn(row);
  return challengerDisagrees(row) ? { ...out, churn: out.churn === 'yes' ? 'no' : 'yes' } : out;
}

function customerChurn(row: Record<string, unknown>): Record<string, unknown> {
  const s = -0.05 * num(row.tenure_months) + 0.02 * num(row.monthly_charges) + (row.plan === 'basic' ? 0.3 : 0);
  const p = 1 / (1 + Math.exp(-s));
  const churn = p >= 0.5 ? 'yes' : 'no';
  const confidence = round(Math.max(p, 1 - p), 4);
  return {
    churn,
    churn_confidence: confidence,
    churn_anomaly: null,
    churn_original: null,
    churn_explain: JSON.stringify({
      predicted_value: churn,
      confidence,
      anomaly: null,
      truth: null,
      probability_class_yes: round(p, 4),
      probability_class_no: round(1 - p, 4),
    }),
  };
}

function forecast(row: Record<string, unknown>): Record<string, unknown> {
  const value = round(num(row.sales) * 1.1, 2);
  const spread = Math.abs(value) * 0.1;
  return salesNext(value, 0.8, round(value - spread, 2), round(value + spread, 2));
}

const homeRentalsColumns = {
  target: 'rental_price',
  inputs: HOME_RENTALS_INPUTS,
  columnTypes: HOME_RENTALS_TYPES,
  importances: HOME_RENTALS_IMPORTANCES,
  horizon: 1,
  selectDataQuery: 'SELECT * FROM home_rentals',
  trainingOptions: "{'__mdb_sql_task': None, 'target': 'rental_price', 'using': {}}",
} as const;

const customerChurnColumns = {
  target: 'churn',
  inputs: ['tenure_months', 'plan', 'monthly_charges'],
  columnTypes: { tenure_months: 'integer', plan: 'categorical', monthly_charges: 'float', churn: 'binary' },
  importances: { tenure_months: 0.74, plan: 0.31, monthly_charges: 0.52 },
  activeVersion: 1,
  obsolete: false,
  horizon: 1,
  selectDataQuery: 'SELECT * FROM customer_churn',
  trainingOptions: "{'__mdb_sql_task': None, 'target': 'churn', 'using': {}}",
} as const;

/** Every model of project `mindsdb`. */
export const modelCatalog: readonly ModelDefinition[] = [
  {
    name: 'home_rentals_model',
    ...homeRentalsColumns,
    activeVersion: 2,
    obsolete: false,
    versions: [
      { version: 1, status: 'complete', accuracy: 0.91, predict: homeRentals(1) },
      { version: 2, status: 'complete', accuracy: 0.93, predict: homeRentals(2) },
    ],
  },
  {
    name: 'customer_churn',
    ...customerChurnColumns,
    versions: [{ version: 1, status: 'complete', accuracy: 0.84, predict: customerChurn }],
  },
  {
    name: 'home_rentals_challenger',
    ...homeRentalsColumns,
    activeVersion: 1,
    obsolete: false,
    versions: [{ version: 1, status: 'complete', accuracy: 0.92, predict: rentalsChallenger }],
  },
  {
    name: 'customer_churn_challenger',
    ...customerChurnColumns,
    versions: [{ version: 1, status: 'complete', accuracy: 0.83, predict: churnChallenger }],
  },
  {
    name: 'training_model',
    ...homeRentalsColumns,
    activeVersion: 1,
    obsolete: false,
    versions: [{ version: 1, status: 'training', accuracy: null, predict: homeRentals(2) }],
  },
  {
    name: 'failed_model',
    ...homeRentalsColumns,
    activeVersion: 1,
    obsolete: false,
    versions: [
      {
        version: 1,
        status: 'error',
        accuracy: null,
        trainingError: "ValueError: could not convert string to float: 'n/a', raised at: mindsdb/integrations/libs/ml_handler_process/learn_process.py#119",
        predict: homeRentals(2),
      },
    ],
  },
  {
    name: 'obsolete_model',
    ...homeRentalsColumns,
    activeVersion: 1,
    obsolete: true,
    versions: [{ version: 1, status: 'complete', accuracy: 0.9, predict: homeRentals(2) }],
  },
  {
    name: 'forecast_model',
    target: 'sales_next',
    inputs: ['store', 'day', 'sales'],
    columnTypes: { store: 'categorical', day: 'integer', sales: 'float', sales_next: 'float' },
    importances: { store: 0.18, day: 0.44, sales: 1.05 },
    activeVersion: 1,
    obsolete: false,
    horizon: 3,
    selectDataQuery: 'SELECT * FROM store_sales',
    trainingOptions:
      "{'__mdb_sql_task': None, 'target': 'sales_next', 'using': {}, 'timeseries_settings': {'is_timeseries': True, 'order_by': 'day', 'horizon': 3, 'window': 10, 'group_by': ['store']}}",
    versions: [{ version: 1, status: 'complete', accuracy: 0.88, predict: forecast }],
  },
];

const byName = new Map(modelCatalog.map((m) => [m.name, m]));

/** A catalog model by exact name. */
export function findModel(name: string): ModelDefinition | undefined {
  return byName.get(name);
}

/**
 * A model and version from a path segment: `name` selects the active version, `name.N` version N.
 * After a simulated retrain the active version is the retrained one (see `retrainedVersion`).
 * Undefined when either is unknown (both are a 404 "Model not found").
 */
export function resolveModel(segment: string, retrained = false): { model: ModelDefinition; version: ModelVersion } | undefined {
  const match = /^(.+)\.(\d+)$/.exec(segment);
  const model = findModel(match ? match[1] : segment);
  if (!model) return undefined;
  const versions = retrained ? [...model.versions, retrainedVersion(model)] : model.versions;
  const wanted = match ? Number(match[2]) : retrained ? versions.at(-1)!.version : model.activeVersion;
  const version = versions.find((v) => v.version === wanted);
  return version && { model, version };
}

/**
 * The version a simulated retrain produces: one past the newest, a point more accurate, and
 * predicting one more than the active version does (numeric targets; the interval moves with it).
 */
export function retrainedVersion(model: ModelDefinition): ModelVersion {
  const active = model.versions.find((v) => v.version === model.activeVersion)!;
  const target = numericTarget(model.target);
  return {
    version: Math.max(...model.versions.map((v) => v.version)) + 1,
    status: 'complete',
    accuracy: active.accuracy === null ? null : round(active.accuracy + 0.01, 3),
    predict: (row) => {
      const out = active.predict(row);
      const [value, confidence, min, max] = [out[model.target], out[`${model.target}_confidence`], out[`${model.target}_min`], out[`${model.target}_max`]];
      if (typeof value !== 'number' || typeof min !== 'number' || typeof max !== 'number') return out;
      return target(round(value + 1, 2), confidence as number, round(min + 1, 2), round(max + 1, 2));
    },
  };
}

/**
 * The target members the simulator answers for one request row (without the input echo, row id
 * and query members). Throws for an unknown model or version.
 */
export function predictTargets(modelName: string, version: number, row: Record<string, unknown>): Record<string, unknown> {
  const v = findModel(modelName)?.versions.find((x) => x.version === version);
  if (!v) throw new Error(`no model ${modelName} version ${version} in the simulator catalog`);
  return v.predict(row);
}
