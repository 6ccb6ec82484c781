/**
 * Records how a real MindsDB answers the predict and describe API, one exchange per file in
 * test/fixtures/mindsdb/<name>.json, for test/integration/simulator-fixtures.test.ts to hold the
 * bundled simulator to. It starts MindsDB as the real-server suite does (test/mindsdb: the
 * project's .mindsdb/venv, made by `bash scripts/mindsdb-env.sh`), trains the suite's models, sends
 * each request below once and writes what came back. Python tracebacks in error answers are cut
 * after their first lines (they run to several KB of the server's own file paths); everything else
 * is kept as answered, timestamps included.
 *
 *   npx tsx scripts/record-mindsdb-fixtures.ts              re-record every fixture
 *   npx tsx scripts/record-mindsdb-fixtures.ts --out <dir>  write them elsewhere (to compare)
 */
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { format, resolveConfig } from 'prettier';
import { requestValue } from '../src/scoring/request-row.js';
import { HOME_RENTALS_INPUTS } from '../src/simulator/models.js';
import { csvLine, RENTAL_COLUMNS, rentalRow } from '../src/simulator/sample-data.js';
import {
  MINDSDB_FIXTURES,
  sendRecorded,
  type RecordedAnswer,
  type RecordedBody,
  type RecordedExchange,
  type RecordedRequest,
} from '../test/helpers/recorded-exchange.js';
import { MINDSDB_PYTHON, sqlRows, startMindsdb, type MindsdbServer } from '../test/mindsdb/mindsdb-server.js';
import { ENGINE, trainModels, waitForVersions } from '../test/mindsdb/models.js';
import { waitFor } from '../test/helpers/queue.js';

const STATUS_MODEL = fileURLToPath(new URL('./mindsdb/status_model.py', import.meta.url));
const EMPTY_REQUIREMENTS = fileURLToPath(new URL('../test/mindsdb/byom/requirements.txt', import.meta.url));
/** The checkout's absolute path, replaced in stored answers so that fixtures do not depend on where they were recorded. */
const CHECKOUT = fileURLToPath(new URL('..', import.meta.url)).replace(/\/$/, '');

const JSON_TYPE = { 'content-type': 'application/json', accept: 'application/json' };

/** The i-th sample rentals row as the client sends it: the model's inputs, each value as a CSV field is sent. */
function clientRow(i: number): Record<string, unknown> {
  const fields = rentalRow(i);
  return Object.fromEntries(HOME_RENTALS_INPUTS.map((c) => [c, requestValue(fields[RENTAL_COLUMNS.indexOf(c)], true)]));
}

/** Two home-rentals rows: every value given, and one with a blank (null) and non-ASCII text. */
const HOUSE = clientRow(0);
const FLAT = clientRow(1);
const CUSTOMER = { tenure_months: 3, plan: 'basic', monthly_charges: 89.5 };

const path = (model: string, op: string, project = 'mindsdb') => `/api/projects/${project}/models/${model}/${op}`;
/** A request of any method, content type and body to a model's route. */
const raw = (
  method: RecordedRequest['method'],
  model: string,
  op: string,
  body?: RecordedBody,
  headers: Record<string, string> = JSON_TYPE,
): RecordedRequest => ({
  method,
  path: path(model, op),
  headers,
  ...(body === undefined ? {} : { body }),
});
const NOT_JSON_TYPE = { accept: 'application/json' };
const predict = (model: string, json: unknown, project?: string): RecordedRequest => ({
  ...raw('POST', model, 'predict', { json }),
  path: path(model, 'predict', project),
});
const describe = (model: string, json: unknown, project?: string): RecordedRequest => ({
  ...raw('GET', model, 'describe', { json }),
  path: path(model, 'describe', project),
});

/** The exchanges recorded, in the order they are sent (file name, what it shows, the request). */
const EXCHANGES: [string, string, RecordedRequest][] = [
  [
    'predict-row-ids',
    'predict with __mindsdb_row_id on each row: the engine columns, then the row id',
    predict('home_rentals_model', {
      data: [
        { ...HOUSE, __mindsdb_row_id: 0 },
        { ...FLAT, __mindsdb_row_id: 1 },
      ],
    }),
  ],
  ['predict-no-row-ids', 'predict without a row id: the engine columns only', predict('home_rentals_model', { data: [HOUSE, FLAT] })],
  [
    'predict-extra-column',
    'a column the model was not trained on is accepted and not echoed',
    predict('home_rentals_model', { data: [{ ...HOUSE, notes: 'sunny, quiet', __mindsdb_row_id: 0 }] }),
  ],
  [
    'predict-missing-column',
    'a row lacking an input column is scored',
    predict('home_rentals_model', { data: [{ number_of_rooms: 2, location: 'great', __mindsdb_row_id: 0 }] }),
  ],
  [
    'predict-null-values',
    'null values are scored as missing',
    predict('home_rentals_model', { data: [{ ...HOUSE, sqft: null, location: null, __mindsdb_row_id: 0 }] }),
  ],
  [
    'predict-string-number',
    'a number sent as a string ("823") is read as the number',
    predict('home_rentals_model', { data: [{ ...HOUSE, sqft: '823', __mindsdb_row_id: 0 }] }),
  ],
  ['predict-version-1', 'version 1 by name.1', predict('home_rentals_model.1', { data: [{ ...HOUSE, __mindsdb_row_id: 0 }] })],
  ['predict-version-2', 'version 2 (the active one) by name.2', predict('home_rentals_model.2', { data: [{ ...HOUSE, __mindsdb_row_id: 0 }] })],
  [
    'predict-churn',
    'a categorical target: the class and its confidence',
    predict('customer_churn', {
      data: [
        { ...CUSTOMER, __mindsdb_row_id: 0 },
        { tenure_months: 60, plan: 'premium', monthly_charges: 30, __mindsdb_row_id: 1 },
      ],
    }),
  ],
  [
    'predict-params',
    'params are passed to the engine (this one ignores them)',
    predict('home_rentals_model', { data: [{ ...HOUSE, __mindsdb_row_id: 0 }], params: { explain: true } }),
  ],
  [
    'predict-data-string',
    'data given as a JSON string is parsed',
    predict('home_rentals_model', { data: JSON.stringify([{ ...HOUSE, __mindsdb_row_id: 0 }]) }),
  ],
  ['predict-empty-data', 'an empty data array', predict('home_rentals_model', { data: [] })],
  [
    'predict-engine-error',
    'the engine raises on a row it cannot read: the whole request is a 500 MLEngineException',
    predict('home_rentals_model', {
      data: [
        { ...HOUSE, __mindsdb_row_id: 0 },
        { ...FLAT, sqft: 'lots', __mindsdb_row_id: 1 },
      ],
    }),
  ],
  ['predict-bare-array', 'the bare-array envelope (the interface document as written)', predict('home_rentals_model', [{ ...HOUSE, __mindsdb_row_id: 0 }])],
  ['predict-no-data', 'an object without data', predict('home_rentals_model', { rows: [HOUSE] })],
  ['predict-data-not-array', 'data that is not an array', predict('home_rentals_model', { data: 5 })],
  ['predict-data-scalars', 'data holding scalars rather than row objects', predict('home_rentals_model', { data: [1, 2] })],
  ['predict-wrong-project', 'an unknown project', predict('home_rentals_model', { data: [HOUSE] }, 'nosuchproject')],
  ['predict-wrong-model', 'an unknown model', predict('nosuchmodel', { data: [HOUSE] })],
  ['predict-wrong-version', 'an unknown version', predict('home_rentals_model.9', { data: [HOUSE] })],
  [
    'predict-wrong-model-bad-body',
    'an unknown model with a body that is not JSON: which is checked first',
    raw('POST', 'nosuchmodel', 'predict', { text: 'not json' }),
  ],
  ['predict-not-json', 'a body that is not JSON', raw('POST', 'home_rentals_model', 'predict', { text: '{"data": [' })],
  ['predict-empty-body', 'an empty body', raw('POST', 'home_rentals_model', 'predict', { text: '' })],
  ['predict-no-content-type', 'JSON without a JSON content type', raw('POST', 'home_rentals_model', 'predict', { json: { data: [HOUSE] } }, NOT_JSON_TYPE)],
  [
    'predict-charset',
    'a content type with a charset parameter',
    raw(
      'POST',
      'home_rentals_model',
      'predict',
      { json: { data: [{ ...HOUSE, __mindsdb_row_id: 0 }] } },
      { 'content-type': 'application/json; charset=utf-8', accept: 'application/json' },
    ),
  ],
  ['predict-get', 'GET on the predict route', raw('GET', 'home_rentals_model', 'predict', { json: { data: [HOUSE] } })],
  ['describe-empty', 'describe {}: the model row of the version asked (the active one)', describe('home_rentals_model', {})],
  ['describe-version-1', 'describe {} of version 1', describe('home_rentals_model.1', {})],
  ['describe-churn', 'describe {} of customer_churn', describe('customer_churn', {})],
  ['describe-info', 'describe info: what the engine describes', describe('home_rentals_model', { attribute: 'info' })],
  ['describe-features', 'describe features', describe('home_rentals_model', { attribute: 'features' })],
  ['describe-model', 'describe model', describe('home_rentals_model', { attribute: 'model' })],
  ['describe-jsonai', 'describe jsonai', describe('home_rentals_model', { attribute: 'jsonai' })],
  ['describe-unknown-attribute', 'describe an attribute nobody knows', describe('home_rentals_model', { attribute: 'nonsense' })],
  ['describe-attribute-number', 'describe an attribute that is not a string', describe('home_rentals_model', { attribute: 5 })],
  ['describe-no-content-type', 'describe without a content type', raw('GET', 'home_rentals_model', 'describe', { json: {} }, NOT_JSON_TYPE)],
  ['describe-no-body', 'describe without a body', raw('GET', 'home_rentals_model', 'describe')],
  ['describe-empty-body', 'describe with an empty body', raw('GET', 'home_rentals_model', 'describe', { text: '' })],
  ['describe-not-json', 'describe with a body that is not JSON', raw('GET', 'home_rentals_model', 'describe', { text: 'not json' })],
  ['describe-array-body', 'describe with a JSON array body', describe('home_rentals_model', [])],
  ['describe-wrong-project', 'describe an unknown project', describe('home_rentals_model', {}, 'nosuchproject')],
  ['describe-wrong-model', 'describe an unknown model', describe('nosuchmodel', {})],
  ['describe-wrong-version', 'describe an unknown version', describe('home_rentals_model.9', {})],
  [
    'describe-wrong-model-no-content-type',
    'describe an unknown model without a content type: which is checked first',
    raw('GET', 'nosuchmodel', 'describe', { json: {} }, NOT_JSON_TYPE),
  ],
  ['describe-post', 'POST on the describe route', raw('POST', 'home_rentals_model', 'describe', { json: {} })],
  [
    'unknown-route',
    'a path the API does not have (a client given a wrong base path)',
    { method: 'POST', path: `/v1${path('home_rentals_model', 'predict')}`, headers: JSON_TYPE, body: { json: { data: [HOUSE] } } },
  ],
  [
    'unknown-route-get',
    'GET on a path the API does not have (describe with a wrong base path)',
    { method: 'GET', path: `/v1${path('home_rentals_model', 'describe')}`, headers: JSON_TYPE, body: { json: {} } },
  ],
  ['unknown-operation', 'an operation the models API does not have', raw('POST', 'home_rentals_model', 'score', { json: { data: [HOUSE] } })],
  ['unknown-operation-get', 'GET on an operation the models API does not have', raw('GET', 'home_rentals_model', 'score', { json: {} })],
  ['predict-null-body', 'a JSON null body', predict('home_rentals_model', null)],
  ['predict-string-body', 'a JSON string body', predict('home_rentals_model', 'data')],
  ['predict-data-null', 'data null', predict('home_rentals_model', { data: null })],
  ['predict-data-object', 'data an object of scalars', predict('home_rentals_model', { data: HOUSE })],
  ['predict-data-bad-string', 'data a string that is not JSON', predict('home_rentals_model', { data: 'not json' })],
  ['predict-row-id-some-rows', 'a row id on some rows only', predict('home_rentals_model', { data: [{ ...HOUSE, __mindsdb_row_id: 0 }, FLAT] })],
  ['describe-null-body', 'describe with a JSON null body', describe('home_rentals_model', null)],
  ['describe-number-body', 'describe with a JSON number body', describe('home_rentals_model', 5)],
  ['describe-attribute-null', 'describe with attribute null', describe('home_rentals_model', { attribute: null })],
  ['describe-churn-info', 'describe info of customer_churn', describe('customer_churn', { attribute: 'info' })],
  ['describe-forecast', 'describe {} of a time-series model (ORDER BY, GROUP BY, WINDOW, HORIZON)', describe('forecast_model', {})],
  [
    'predict-forecast',
    'predict of a time-series model',
    predict('forecast_model', {
      data: [
        { store: 'a', day: 31, sales: 120.5, __mindsdb_row_id: 0 },
        { store: 'a', day: 32, sales: 118, __mindsdb_row_id: 1 },
      ],
    }),
  ],
  ['describe-training', 'describe {} of a model still training', describe('training_model', {})],
  ['describe-training-info', 'describe info of a model still training', describe('training_model', { attribute: 'info' })],
  ['predict-training', 'predict on a model still training', predict('training_model', { data: [HOUSE] })],
  ['describe-failed', 'describe {} of a model whose training failed', describe('failed_model', {})],
  ['describe-failed-info', 'describe info of a model whose training failed', describe('failed_model', { attribute: 'info' })],
  ['predict-failed', 'predict on a model whose training failed', predict('failed_model', { data: [HOUSE] })],
];

const TRACEBACK = 'Traceback (most recent call last):';
/** Lines of a traceback kept: its header only (its frames name the server's files on the recording machine). */
const TRACEBACK_LINES = 1;

/**
 * A string with any Python traceback in it cut after its first lines, with a marker saying how
 * much was cut; the text before the traceback (the exception's message) is kept whole.
 */
function cutTraceback(text: string): string {
  const at = text.indexOf(TRACEBACK);
  if (at < 0) return text;
  const lines = text.slice(at).split('\n');
  if (lines.length <= TRACEBACK_LINES) return text;
  const kept = lines.slice(0, TRACEBACK_LINES).join('\n');
  const cut = text.length - at - kept.length;
  return `${text.slice(0, at)}${kept}\n[${cut} more characters of traceback cut by scripts/record-mindsdb-fixtures.ts]`;
}

function cutTracebacks(value: unknown): unknown {
  if (typeof value === 'string') return cutTraceback(value);
  if (Array.isArray(value)) return value.map(cutTracebacks);
  if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, cutTracebacks(v)]));
  return value;
}

/** A time-series training file: two stores, 40 days each, sales_next the next day's sales. */
function storeSalesCsv(): string {
  const lines = [csvLine(['store', 'day', 'sales', 'sales_next'])];
  for (const store of ['a', 'b']) {
    const sales = (day: number) => 100 + (store === 'a' ? 2 : 3) * day + ((day * 7) % 11);
    for (let day = 1; day <= 40; day++) lines.push(csvLine([store, String(day), String(sales(day)), String(sales(day + 1))]));
  }
  return lines.join('');
}

/**
 * The models beside the suite's: a time-series one (the suite's engine), one held in training
 * until `holdFile` exists and one whose training failed (scripts/mindsdb/status_model.py).
 */
async function trainStatusModels(server: MindsdbServer, holdFile: string): Promise<void> {
  await server.sql(`CREATE ML_ENGINE scorer_status FROM byom USING code='${STATUS_MODEL}', modules='${EMPTY_REQUIREMENTS}', type='inhouse'`);
  await server.uploadFile('store_sales', storeSalesCsv());
  await server.sql(
    `CREATE MODEL mindsdb.forecast_model FROM files (SELECT * FROM store_sales) PREDICT sales_next ORDER BY day GROUP BY store WINDOW 10 HORIZON 3 USING engine='${ENGINE}'`,
  );
  await server.sql(`CREATE MODEL mindsdb.failed_model FROM files (SELECT * FROM home_rentals) PREDICT rental_price USING engine='scorer_status'`);
  await server.sql(
    `CREATE MODEL mindsdb.training_model FROM files (SELECT * FROM home_rentals) PREDICT rental_price USING engine='scorer_status', hold_until='${holdFile}'`,
  );
  await waitForVersions(server, 'forecast_model', 1);
  await waitForStatus(server, 'failed_model', 'error');
  await waitForStatus(server, 'training_model', 'generating');
}

async function waitForStatus(server: MindsdbServer, model: string, status: string): Promise<void> {
  let rows: Record<string, unknown>[] = [];
  const reached = async () => {
    rows = sqlRows(await server.sql(`SELECT status, error FROM mindsdb.models WHERE name = '${model}'`));
    return rows.length > 0 && rows.every((r) => r.status === status);
  };
  try {
    await waitFor(`MindsDB's ${model} to reach status ${status}`, reached, 120_000, 200);
  } catch (err) {
    throw new Error(`${(err as Error).message}: ${JSON.stringify(rows)}`, { cause: err });
  }
}

/** The exchange's answer as stored: tracebacks cut, the checkout's own path (in error messages) replaced. */
function storedAnswer(answer: RecordedAnswer): RecordedAnswer {
  const body = 'json' in answer.body ? { json: cutTracebacks(answer.body.json) } : { text: cutTraceback(answer.body.text) };
  return { ...answer, body: JSON.parse(JSON.stringify(body).replaceAll(CHECKOUT, '<checkout>')) as RecordedAnswer['body'] };
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { out: { type: 'string' } } });
  const out = values.out ?? MINDSDB_FIXTURES;
  const version = execFileSync(MINDSDB_PYTHON, ['-c', 'import mindsdb; print(mindsdb.__version__)'], { encoding: 'utf8' }).trim();
  const started = Date.now();
  const scratch = await mkdtemp(join(tmpdir(), 'batch-scorer-record-'));
  // The server runs in a process group of its own, which no Ctrl-C reaches: stopped by a signal
  // (even while it starts) or a closed pipe, this script stops it before leaving.
  let server: MindsdbServer | undefined;
  let stopping: Promise<unknown> | undefined;
  const cleanUp = () => Promise.all([server?.close(), rm(scratch, { recursive: true, force: true })]);
  const stop = () => {
    stopping ??= Promise.resolve();
    if (server) stopping = cleanUp().finally(() => process.exit(130));
  };
  process.once('SIGINT', stop).once('SIGTERM', stop);
  process.stdout.on('error', () => undefined);
  try {
    server = await startMindsdb();
    if (stopping) return stop();
    await trainModels(server);
    // Never created: training_model stays in training until the server stops.
    await trainStatusModels(server, join(scratch, 'never-created'));
    console.log(`MindsDB ${version} up and trained in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    await rm(out, { recursive: true, force: true });
    await mkdir(out, { recursive: true });
    for (const [name, about, request] of EXCHANGES) await record(server.url, out, { name, about, server: `MindsDB ${version}`, request });
  } finally {
    // Once a signal came, the answers fail as the server stops: wait for stop() to end the process.
    await (stopping ?? cleanUp());
  }
}

/** Sends one exchange's request and writes the exchange, as the project's Prettier settings format it (so that `npm run lint` passes it). */
async function record(url: string, out: string, exchange: Omit<RecordedExchange, 'answer'>): Promise<void> {
  const answer = storedAnswer(await sendRecorded(url, exchange.request));
  const file = join(out, `${exchange.name}.json`);
  await writeFile(file, await format(JSON.stringify({ ...exchange, answer }, null, 2), { ...(await resolveConfig(file)), filepath: file }));
  console.log(`${exchange.name}: ${answer.status} ${answer.contentType ?? '(no content type)'}`);
}

await main();
