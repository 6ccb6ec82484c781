import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSimulator, type Simulator } from '../../src/simulator/server.js';
import { readRecordedExchanges, sendRecorded, type RecordedAnswer } from '../helpers/recorded-exchange.js';

/**
 * The simulator held to a real MindsDB: each exchange recorded from MindsDB 26.0.1 by
 * scripts/record-mindsdb-fixtures.ts (test/fixtures/mindsdb) is sent to the simulator, whose answer
 * must have the same status, content type and body shape: member names in the server's order,
 * value types and null-ness, the server's own values (titles, error texts, model names, versions,
 * statuses, the row ids echoed). Predicted values differ (the models differ), as do timestamps and
 * the Python tracebacks MindsDB appends to engine errors.
 *
 * With `engine: 'byom'` the simulator answers every exchange as the recorded server did. Its
 * default (`lightwood`) models answer predictions and describe attributes as lightwood did, but
 * the server's own errors alike: every error answer but the engine's is held against it too.
 */
const exchanges = await readRecordedExchanges();
const serverErrors = exchanges.filter((e) => e.answer.status !== 200 && !isEngineError(e.answer));

/** The exchanges the brief of the recording asked for, so a re-recording cannot silently drop one. */
const REQUIRED = [
  'predict-row-ids',
  'predict-no-row-ids',
  'predict-extra-column',
  'predict-missing-column',
  'predict-string-number',
  'predict-version-1',
  'predict-version-2',
  'predict-churn',
  'describe-empty',
  'describe-info',
  'describe-features',
  'describe-model',
  'describe-unknown-attribute',
  'describe-no-content-type',
  'describe-empty-body',
  'predict-wrong-project',
  'predict-wrong-model',
  'predict-wrong-version',
  'predict-bare-array',
  'predict-data-string',
  'predict-engine-error',
  'predict-empty-data',
  'predict-not-json',
  'predict-get',
];

let byom: Simulator;
let lightwood: Simulator;
beforeAll(async () => {
  [byom, lightwood] = await Promise.all([createSimulator({ port: 0, engine: 'byom' }), createSimulator({ port: 0 })]);
});
afterAll(() => Promise.all([byom?.close(), lightwood?.close()]));

describe('the recorded exchanges', () => {
  it('cover what the client depends on, each recorded from a real MindsDB', () => {
    const names = exchanges.map((e) => e.name);
    expect(REQUIRED.filter((n) => !names.includes(n))).toEqual([]);
    expect(serverErrors.length).toBeGreaterThan(20);
    for (const e of exchanges) expect(e.server).toMatch(/^MindsDB \d+\.\d+\.\d+$/);
  });
});

describe('the simulator with engine byom answers as the recorded MindsDB', () => {
  it.each(exchanges.map((e) => [e.name, e] as const))('%s', async (_name, exchange) => {
    expect(shapeOf(await sendRecorded(origin(byom), exchange.request)), exchange.about).toEqual(shapeOf(exchange.answer));
  });
});

describe('the simulator with its default engine answers the server’s own errors as the recorded MindsDB', () => {
  it.each(serverErrors.map((e) => [e.name, e] as const))('%s', async (_name, exchange) => {
    expect(shapeOf(await sendRecorded(origin(lightwood), exchange.request)), exchange.about).toEqual(shapeOf(exchange.answer));
  });
});

function origin(sim: Simulator): string {
  return `http://127.0.0.1:${sim.port}`;
}

function isEngineError(answer: RecordedAnswer): boolean {
  return 'json' in answer.body && (answer.body.json as { title?: unknown } | null)?.title === 'MLEngineException';
}

/** What of an answer must be the same on the simulator: see the file's comment. */
function shapeOf(answer: RecordedAnswer): unknown {
  const body = 'json' in answer.body ? { json: shape(answer.body.json) } : answer.body;
  return { status: answer.status, contentType: answer.contentType, body };
}

/** Members whose value is the server's, not the model's: compared as they are. */
const KEPT = new Set(['title', 'NAME', 'ENGINE', 'PROJECT', 'ACTIVE', 'VERSION', 'STATUS', 'ACCURACY', 'PREDICT', 'UPDATE_STATUS', 'TAG', '__mindsdb_row_id']);
/** Members holding a model's column names: compared as sets (their order is the model's). */
const COLUMN_LISTS = new Set(['TABLES', 'inputs', 'outputs', 'accuracies', 'column_importances']);
const TRACEBACK = '\nTraceback (most recent call last):';
const PYTHON_NOW = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{6})?$/;

/**
 * A JSON value reduced to what must match: objects as [name, shape] pairs in their order, numbers
 * and strings as their type unless the server fixes them (see KEPT and `text`), null as null.
 */
function shape(value: unknown, member?: string): unknown {
  if (member !== undefined && COLUMN_LISTS.has(member)) return columnList(value);
  if (value === null || typeof value === 'boolean') return value;
  if (Array.isArray(value)) return value.map((v) => shape(v));
  if (typeof value === 'object') return Object.entries(value).map(([k, v]) => [k, shape(v, k)]);
  if (member !== undefined && KEPT.has(member)) return value;
  return typeof value === 'string' ? text(value, member) : `<${typeof value}>`;
}

function columnList(value: unknown): unknown {
  if (Array.isArray(value)) return [...(value as string[])].sort();
  const entries = Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, shape(v)]);
  return entries.sort(([a], [b]) => String(a).localeCompare(String(b)));
}

/** A string as far as the server fixes it (see each case); any other string is just a string. */
function text(value: string, member: string | undefined): string {
  switch (member) {
    case 'detail':
    case 'message':
      // The message exactly; of the traceback MindsDB appends, only that there is one.
      return value.includes(TRACEBACK) ? `${value.slice(0, value.indexOf(TRACEBACK))}${TRACEBACK} ...` : value;
    case 'timestamp':
      return PYTHON_NOW.test(value) ? '<python datetime>' : value;
    case 'TRAINING_OPTIONS':
      // Python's str() of the options, with what the model was made with (USING) left out.
      return value.replace(/'using': \{[^}]*\}/, "'using': {...}");
    case 'ERROR':
    case 'error':
      // The server's wording, without the paths of its storage and the training error of the model.
      return value.replace(/'[^']*'/g, "'...'").replace(/(Model error:\n\n)(?!-$).*$/s, '$1...');
    default:
      return '<string>';
  }
}
