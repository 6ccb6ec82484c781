import { badRequest, jsonAnswer, uncaught, type Answer } from './answer.js';
import { ENGINE_NAMES, retype, type EngineFlavour, type ModelDefinition, type ModelVersion } from './models.js';

/** The value that makes the simulated engine fail, so clients can test isolating bad rows. */
export const ENGINE_ERROR_VALUE = '__engine_error__';

type Row = Record<string, unknown>;

/**
 * The rows of a parsed predict body, or the answer the matching real server gives to a body it
 * cannot use. The reference server (`data`) reads `body["data"]`, parses it when it is a string and
 * makes a pandas DataFrame of it, so a wrong body gets that Python code's uncaught exception as a
 * 500: TypeError for a bare array (or null, a number, a string), KeyError for an object without
 * `data`, ValueError for data pandas cannot make rows of. Elements of `data` that are not objects
 * are rows without any named column, as pandas makes them. The `array` server (the interface
 * document) answers an object with a KeyError, and anything else but an array with a 400.
 */
export function readPredictRows(body: unknown, envelope: 'data' | 'array'): Row[] | Answer {
  if (envelope === 'array') {
    if (Array.isArray(body)) return asRows(body);
    return typeof body === 'object' && body !== null ? uncaught('KeyError', '0') : badRequest;
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return uncaught('TypeError', notSubscriptable(body));
  if (!Object.hasOwn(body, 'data')) return uncaught('KeyError', "'data'");
  let data: unknown = (body as { data: unknown }).data;
  if (typeof data === 'string') {
    try {
      data = JSON.parse(data);
    } catch (err) {
      return uncaught('JSONDecodeError', jsonDecodeMessage(data as string, err as Error));
    }
  }
  return dataFrameRows(data);
}

/** Python's TypeError for `body["data"]` when body is not a dict. */
function notSubscriptable(body: unknown): string {
  if (Array.isArray(body)) return 'list indices must be integers or slices, not str';
  if (typeof body === 'string') return "string indices must be integers, not 'str'";
  return `'${pythonType(body)}' object is not subscriptable`;
}

/** Python's name of the type JSON value `value` is read as. */
export function pythonType(value: unknown): string {
  if (value === null) return 'NoneType';
  if (typeof value === 'boolean') return 'bool';
  if (typeof value === 'number') return Number.isInteger(value) ? 'int' : 'float';
  if (typeof value === 'string') return 'str';
  return Array.isArray(value) ? 'list' : 'dict';
}

/**
 * Python's message for text json.loads refuses, where it is refused at its first value (the usual
 * case: text that is not JSON at all); elsewhere, JavaScript's own message.
 */
function jsonDecodeMessage(text: string, err: Error): string {
  const at = text.length - text.trimStart().length;
  const startsValue = /^(["{[\-\d]|true|false|null|NaN|Infinity)/.test(text.slice(at));
  return startsValue ? err.message : `Expecting value: line 1 column ${at + 1} (char ${at})`;
}

/** The rows pandas makes of `pd.DataFrame(data)`, or its ValueError. */
function dataFrameRows(data: unknown): Row[] | Answer {
  if (data === null) return [];
  if (Array.isArray(data)) return asRows(data);
  if (typeof data !== 'object') return uncaught('ValueError', 'DataFrame constructor not properly called!');
  // An object is a table by columns: its arrays are the columns, its other values repeated down them.
  const columns = Object.entries(data);
  const lengths = new Set(columns.filter(([, v]) => Array.isArray(v)).map(([, v]) => (v as unknown[]).length));
  if (lengths.size === 0) return uncaught('ValueError', 'If using all scalar values, you must pass an index');
  if (lengths.size > 1) return uncaught('ValueError', 'All arrays must be of the same length');
  const [length] = lengths;
  return Array.from({ length }, (_, i) => Object.fromEntries(columns.map(([k, v]) => [k, Array.isArray(v) ? (v as unknown[])[i] : v])));
}

/** The elements as rows: an object is a row, anything else a row without named columns. */
function asRows(elements: unknown[]): Row[] {
  return elements.map((e) => (typeof e === 'object' && e !== null && !Array.isArray(e) ? (e as Row) : {}));
}

/**
 * The answer to valid rows: the model's state errors, the engine refusing a row, or the prediction
 * array (one object per row in order; with lightwood, the last row expands into a forecast's
 * horizon). `short` answers one row too few or too many, as a fault.
 */
export function predictAnswer(
  model: ModelDefinition,
  version: ModelVersion,
  rows: Row[],
  rowIdMember: string,
  short = false,
  engine: EngineFlavour = 'lightwood',
  engineErrors = true,
): Answer {
  if (model.obsolete) {
    return uncaught('Exception', `model '${model.name}' is obsolete and needs to be updated. Run 'RETRAIN ${model.name};'`);
  }
  if (version.status !== 'complete') return uncaught('Exception', 'Error: model creation not completed');
  const refusal = engineRefusal(model, rows, engine, engineErrors);
  if (refusal) return uncaught('MLEngineException', `[${ENGINE_NAMES[engine]}/${model.name}]: ${refusal}\n${SIMULATED_TRACEBACK}`);
  const out = engine === 'byom' ? byomRows(version, rows, rowIdMember) : lightwoodRows(model, version, rows, rowIdMember);
  // A cut body loses its last row; a flaky engine repeats one (odd and even batch sizes, both seen).
  if (short && out.length > 0) {
    if (out.length % 2 === 0) out.pop();
    else out.push({ ...out[out.length - 1] });
  }
  return jsonAnswer(200, out);
}

/** Where the reference server's engine errors carry the engine process's Python traceback (several KB). */
const SIMULATED_TRACEBACK = 'Traceback (most recent call last):\n\n  File "<simulator>", in predict\n';

/**
 * Why the engine refuses these rows (the first row it cannot read), as `<Exception>: <message>`:
 * a value `__engine_error__` (unless `engineErrors` is off), or (byom, as the real-server suite's model) text that is not a
 * number in a numeric input.
 */
function engineRefusal(model: ModelDefinition, rows: Row[], engine: EngineFlavour, engineErrors: boolean): string | undefined {
  if (engine === 'byom') {
    for (const column of model.inputs) {
      const type = model.columnTypes[column];
      if (type !== 'integer' && type !== 'float') continue;
      const bad = rows.findIndex((row) => notANumber(row[column]));
      if (bad >= 0) return `ValueError: row ${bad}: column '${column}' is not a number`;
    }
  }
  if (!engineErrors) return undefined;
  const bad = rows.findIndex((row) => Object.values(row).includes(ENGINE_ERROR_VALUE));
  return bad >= 0 ? `ValueError: row ${bad}: could not convert value '${ENGINE_ERROR_VALUE}'` : undefined;
}

/** Text that is not blank and not a number. */
function notANumber(value: unknown): boolean {
  return typeof value === 'string' && value.trim() !== '' && !Number.isFinite(Number(value));
}

function lightwoodRows(model: ModelDefinition, version: ModelVersion, rows: Row[], rowIdMember: string): Row[] {
  const out = new Array<Row>(rows.length);
  for (let i = 0; i < rows.length; i++) out[i] = lightwoodRow(model, version, rows[i], rowIdMember);
  const last = out[out.length - 1];
  if (last && model.horizon > 1) {
    for (let step = 1; step < model.horizon; step++) out.push({ ...last });
  }
  return out;
}

function lightwoodRow(model: ModelDefinition, version: ModelVersion, row: Row, rowIdMember: string): Row {
  const out = version.predict(row);
  for (const column of model.inputs) out[column] = retype(row[column]);
  // Echoed when sent, null otherwise (as the interface document shows it); `none`: a server without the member.
  if (rowIdMember !== 'none') out[rowIdMember] = row[rowIdMember] ?? null;
  out.select_data_query = null;
  out.when_data = null;
  return out;
}

/** Members of the lightwood answers that a Bring-Your-Own-Model engine does not give. */
const LIGHTWOOD_ONLY = ['_anomaly', '_original', '_explain'];

/**
 * The engine's columns only (the target, its confidence, and its interval for a numeric target),
 * then the row id member when any request row carries it (null on the rows that do not), as the
 * reference server adds it to an engine's answer.
 */
function byomRows(version: ModelVersion, rows: Row[], rowIdMember: string): Row[] {
  const echo = rowIdMember !== 'none' && rows.some((row) => Object.hasOwn(row, rowIdMember));
  return rows.map((row) => {
    const out: Row = {};
    for (const [member, value] of Object.entries(version.predict(row))) {
      if (!LIGHTWOOD_ONLY.some((suffix) => member.endsWith(suffix))) out[member] = value;
    }
    if (echo) out[rowIdMember] = row[rowIdMember] ?? null;
    return out;
  });
}
