import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { request } from 'undici';
import { modelCatalog, predictTargets } from '../../src/simulator/models.js';
import { ENGINE_ERROR_VALUE } from '../../src/simulator/predict.js';
import { createSimulator, type Simulator } from '../../src/simulator/server.js';
import type { SimulatorOptions } from '../../src/simulator/options.js';

const JSON_HEADERS = { 'content-type': 'application/json' };

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** The body parsed as JSON; undefined when it is not JSON. */
  json: unknown;
}

async function call(sim: Simulator, method: 'GET' | 'POST', path: string, body?: unknown, headers: Record<string, string> = JSON_HEADERS): Promise<Reply> {
  const res = await request(`${sim.url}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.body.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.statusCode, headers: res.headers, text, json };
}

/** A reply's body as rows: predict and describe answer a JSON array (of objects, unless `Row` says otherwise). */
const rowsOf = <Row = Record<string, unknown>>(reply: Reply) => reply.json as Row[];
/** A reply's body as the problem document errors are answered with. */
const problemOf = (reply: Reply) => reply.json as { title: string; detail: string };

/** describe's info row. */
interface InfoRow {
  inputs: string[];
  outputs: string[];
  accuracies: Record<string, number>;
  column_importances: Record<string, number>;
  model: string;
}

/** The members of a home_rentals_model answer row that these tests compare with each other. */
interface RentalAnswer {
  rental_price: number;
  rental_price_min: number;
  rental_price_max: number;
  rental_price_explain: string;
}

const predictPath = (model: string, project = 'mindsdb') => `/api/projects/${encodeURIComponent(project)}/models/${encodeURIComponent(model)}/predict`;
const describePath = (model: string, project = 'mindsdb') => `/api/projects/${encodeURIComponent(project)}/models/${encodeURIComponent(model)}/describe`;

const predict = (sim: Simulator, model: string, rows: unknown[], project?: string) => call(sim, 'POST', predictPath(model, project), { data: rows });
const describeModel = (sim: Simulator, model: string, body: unknown = {}) => call(sim, 'GET', describePath(model), body);

const house = {
  number_of_rooms: 2,
  number_of_bathrooms: 1,
  sqft: 917,
  location: 'great',
  days_on_market: 13,
  initial_price: 3901,
  neighborhood: 'berkeley_hills',
};

const started: Simulator[] = [];
async function start(options: SimulatorOptions = {}): Promise<Simulator> {
  const sim = await createSimulator({ port: 0, ...options });
  started.push(sim);
  return sim;
}

let sim: Simulator;
beforeAll(async () => {
  sim = await createSimulator({ port: 0 });
});
afterAll(() => sim.close());
afterEach(async () => {
  await Promise.all(started.splice(0).map((s) => s.close()));
});

describe('describe', () => {
  it('answers {} with the metadata row of the active version', async () => {
    const r = await describeModel(sim, 'home_rentals_model');
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('application/json');
    expect(r.json).toEqual([
      expect.objectContaining({
        TABLES: ['info', 'features', 'model', 'jsonai'],
        NAME: 'home_rentals_model',
        ENGINE: 'lightwood',
        PROJECT: 'mindsdb',
        ACTIVE: true,
        VERSION: 2,
        STATUS: 'complete',
        ACCURACY: 0.93,
        PREDICT: 'rental_price',
        UPDATE_STATUS: 'up_to_date',
        ERROR: null,
        TAG: null,
      }),
    ]);
  });

  it('answers info with inputs in model order and one importance above 1', async () => {
    const r = await describeModel(sim, 'home_rentals_model', { attribute: 'info' });
    expect(r.status).toBe(200);
    const [info] = rowsOf<InfoRow>(r);
    expect(info.inputs).toEqual(modelCatalog.find((m) => m.name === 'home_rentals_model')!.inputs);
    expect(info.outputs).toEqual(['rental_price']);
    expect(typeof info.accuracies.r2_score).toBe('number');
    expect(Object.values(info.column_importances).some((v) => v > 1)).toBe(true);
    expect(info.model).toBe('encoders --> dtype_dict --> dependency_dict --> model --> problem_definition --> identifiers --> imputers --> accuracy_functions');
  });

  it('answers features, model candidates, and table names for an unknown attribute', async () => {
    const features = await describeModel(sim, 'customer_churn', { attribute: 'features' });
    expect(features.json).toEqual([
      { column: 'tenure_months', type: 'integer', encoder: 'NumericEncoder', role: 'feature' },
      { column: 'plan', type: 'categorical', encoder: 'OneHotEncoder', role: 'feature' },
      { column: 'monthly_charges', type: 'float', encoder: 'NumericEncoder', role: 'feature' },
      { column: 'churn', type: 'binary', encoder: 'BinaryEncoder', role: 'target' },
    ]);
    const model = await describeModel(sim, 'customer_churn', { attribute: 'model' });
    expect(model.status).toBe(200);
    expect(rowsOf(model).length).toBeGreaterThan(1);
    expect(rowsOf(model)[0]).toMatchObject({ accuracy_functions: "['balanced_accuracy_score']" });
    const jsonai = await describeModel(sim, 'customer_churn', { attribute: 'jsonai' });
    expect(JSON.parse(rowsOf<{ ensemble: string }>(jsonai)[0].ensemble)).toMatchObject({ problem_definition: { target: 'churn' } });
    // As lightwood answers it: a DataFrame of one column, `tables`, read as records.
    const unknown = await describeModel(sim, 'customer_churn', { attribute: 'nope' });
    expect(unknown.status).toBe(200);
    expect(unknown.json).toEqual([{ tables: 'info' }, { tables: 'features' }, { tables: 'model' }, { tables: 'jsonai' }]);
  });

  it('needs a JSON content type and a body, like the reference server', async () => {
    const noType = await call(sim, 'GET', describePath('home_rentals_model'), '{}', {});
    expect(noType.status).toBe(415);
    expect(noType.headers['content-type']).toBe('application/json');
    expect(problemOf(noType).title).toBe('Unsupported Media Type');
    const empty = await call(sim, 'GET', describePath('home_rentals_model'));
    expect(empty.status).toBe(400);
    expect(problemOf(empty).title).toBe('Bad Request');
    const notJson = await call(sim, 'GET', describePath('home_rentals_model'), '{oops');
    expect(notJson.status).toBe(400);
    expect(notJson.json).toEqual({
      title: 'Bad Request',
      detail: 'The browser (or proxy) sent a request that this server could not understand.',
      message: 'The browser (or proxy) sent a request that this server could not understand.',
    });
  });

  it('answers {} with the info shape when legacyDescribe is set', async () => {
    const legacy = await start({ legacyDescribe: true });
    const r = await describeModel(legacy, 'home_rentals_model');
    expect(Object.keys(rowsOf(r)[0]).sort()).toEqual(['accuracies', 'column_importances', 'inputs', 'model', 'outputs']);
  });

  it('selects versions with name.N and 404s an unknown one', async () => {
    const v1 = await describeModel(sim, 'home_rentals_model.1');
    expect(rowsOf(v1)[0]).toMatchObject({ VERSION: 1, ACTIVE: false, ACCURACY: 0.91 });
    const v2 = await describeModel(sim, 'home_rentals_model.2');
    expect(rowsOf(v2)[0]).toMatchObject({ VERSION: 2, ACTIVE: true });
    const v9 = await describeModel(sim, 'home_rentals_model.9');
    expect(v9.status).toBe(404);
    expect(v9.json).toMatchObject({ title: 'Model not found', detail: 'Model with name home_rentals_model.9 not found' });
  });

  it('reports the training status', async () => {
    const r = await describeModel(sim, 'training_model');
    expect(rowsOf(r)[0]).toMatchObject({ STATUS: 'training', VERSION: 1 });
  });
});

describe('routing and auth', () => {
  it('404s unknown projects, models and routes with the reference bodies', async () => {
    const project = await predict(sim, 'home_rentals_model', [house], 'nope');
    expect(project.status).toBe(404);
    expect(project.headers['content-type']).toBe('application/problem+json');
    expect(project.json).toMatchObject({
      title: 'Project not found',
      detail: 'Project with name nope does not exist',
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}$/) as unknown,
    });
    const model = await predict(sim, 'no_such_model', [house]);
    expect(model.json).toMatchObject({ title: 'Model not found', detail: 'Model with name no_such_model not found' });
    const route = await call(sim, 'GET', '/api/status');
    expect(route.status).toBe(404);
    expect(route.json).toMatchObject({ title: 'Not found', detail: 'The endpoint you are trying to access does not exist on the server.' });
    const method = await call(sim, 'GET', predictPath('home_rentals_model'), {});
    expect(method.status).toBe(404);
    const post = await call(sim, 'POST', describePath('home_rentals_model'), {});
    expect(post.status).toBe(405);
    const outside = await call(sim, 'GET', '/v1/api/projects');
    expect([outside.status, outside.headers['content-type']]).toEqual([404, 'text/html; charset=utf-8']);
  });

  it('decodes path segments and serves under a base path', async () => {
    const prefixed = await start({ basePath: '/v1' });
    expect(prefixed.url).toBe(`http://127.0.0.1:${prefixed.port}/v1`);
    const r = await call(prefixed, 'POST', '/api/projects/%6Dindsdb/models/home%5Frentals_model/predict', {
      data: [house],
    });
    expect(r.status).toBe(200);
    const outside = await request(`http://127.0.0.1:${prefixed.port}${predictPath('home_rentals_model')}`, {
      method: 'POST',
      headers: JSON_HEADERS,
      body: JSON.stringify({ data: [house] }),
    });
    // Outside the API: Werkzeug's own page (a POST finds only the catch-all GET route there).
    expect(outside.statusCode).toBe(405);
    await outside.body.dump();
  });

  it('requires the bearer token when one is set', async () => {
    const secured = await start({ token: 's3cret' });
    const missing = await predict(secured, 'home_rentals_model', [house]);
    expect(missing.status).toBe(401);
    expect(missing.headers['content-type']).toBe('application/problem+json');
    const wrong = await call(
      secured,
      'GET',
      describePath('home_rentals_model'),
      {},
      {
        ...JSON_HEADERS,
        authorization: 'Bearer nope',
      },
    );
    expect(wrong.status).toBe(401);
    const ok = await call(
      secured,
      'POST',
      predictPath('home_rentals_model'),
      { data: [house] },
      {
        ...JSON_HEADERS,
        authorization: 'Bearer s3cret',
      },
    );
    expect(ok.status).toBe(200);
  });
});

describe('predict', () => {
  it('answers the formula values, in order, with the documented members', async () => {
    const rows = [house, { ...house, sqft: 1200, location: 'poor' }, { sqft: 500 }];
    const r = await predict(sim, 'home_rentals_model', rows);
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('application/json');
    expect(r.json).toHaveLength(3);
    const answers = rowsOf<RentalAnswer>(r);
    rows.forEach((row, i) => {
      const expected = predictTargets('home_rentals_model', 2, row);
      expect(answers[i]).toMatchObject(expected);
      const got = answers[i];
      expect(got.rental_price_min).toBeLessThanOrEqual(got.rental_price);
      expect(got.rental_price).toBeLessThanOrEqual(got.rental_price_max);
      expect(JSON.parse(got.rental_price_explain)).toMatchObject({
        predicted_value: got.rental_price,
        confidence_lower_bound: got.rental_price_min,
        confidence_upper_bound: got.rental_price_max,
      });
    });
    expect(Object.keys(answers[0])).toEqual([
      'rental_price',
      'rental_price_confidence',
      'rental_price_min',
      'rental_price_max',
      'rental_price_anomaly',
      'rental_price_original',
      'rental_price_explain',
      'number_of_rooms',
      'number_of_bathrooms',
      'sqft',
      'location',
      'days_on_market',
      'initial_price',
      'neighborhood',
      '__mindsdb_row_id',
      'select_data_query',
      'when_data',
    ]);
    expect(answers[2]).toMatchObject({ location: null, initial_price: null, sqft: 500 });
  });

  it('keeps the formulas as specified', () => {
    const t = predictTargets('home_rentals_model', 2, house);
    expect(t.rental_price).toBe(Math.round((300 + 2.5 * 917 + 240 + 60 - 19.5 + 390.1 + 400) * 100) / 100);
    const c = t.rental_price_confidence as number;
    expect(c).toBeGreaterThanOrEqual(0.5);
    expect(c).toBeLessThan(0.99);
    const v1 = predictTargets('home_rentals_model', 1, house);
    expect(v1.rental_price).toBe(Math.round((300 + 2.5 * 917 + 240 + 60 - 19.5 + 400 + 50) * 100) / 100);
    const churn = predictTargets('customer_churn', 1, { tenure_months: 2, plan: 'basic', monthly_charges: 80 });
    expect(churn.churn).toBe('yes');
    expect(churn).not.toHaveProperty('churn_min');
    expect(predictTargets('forecast_model', 1, { sales: '100' })).toMatchObject({
      sales_next: 110,
      sales_next_confidence: 0.8,
      sales_next_min: 99,
      sales_next_max: 121,
    });
  });

  it('selects the version given as name.N', async () => {
    const v1 = await predict(sim, 'home_rentals_model.1', [house]);
    expect(rowsOf(v1)[0].rental_price).toBe(predictTargets('home_rentals_model', 1, house).rental_price);
    const v9 = await predict(sim, 'home_rentals_model.9', [house]);
    expect(v9.status).toBe(404);
    expect(problemOf(v9).title).toBe('Model not found');
  });

  it('echoes the row id, re-types numeric strings and drops untrained columns', async () => {
    const row = { ...house, sqft: '823', extra: 'dropped', __mindsdb_row_id: 'r-17', __service_row_id: 'r-17' };
    const r = await predict(sim, 'home_rentals_model', [row, house]);
    expect(rowsOf(r)[0].sqft).toBe(823);
    expect(rowsOf(r)[0].__mindsdb_row_id).toBe('r-17');
    // Only its own brand's member is echoed, as on the reference server; unsent, it answers null.
    expect(rowsOf(r)[0]).not.toHaveProperty('__service_row_id');
    expect(rowsOf(r)[0]).not.toHaveProperty('extra');
    expect(rowsOf(r)[1].__mindsdb_row_id).toBeNull();
    expect(rowsOf(r)[0]).toMatchObject(predictTargets('home_rentals_model', 2, row));
    const custom = await start({ rowIdMember: '__service_row_id' });
    const c = await predict(custom, 'customer_churn', [{ tenure_months: 3, __service_row_id: 7, __mindsdb_row_id: 8 }]);
    expect(rowsOf(c)[0]).toMatchObject({ __service_row_id: 7, plan: null, monthly_charges: null });
    expect(rowsOf(c)[0]).not.toHaveProperty('__mindsdb_row_id');
    const none = await start({ rowIdMember: 'none' });
    const n = await predict(none, 'customer_churn', [{ tenure_months: 3, __service_row_id: 7, __mindsdb_row_id: 8 }]);
    expect(Object.keys(rowsOf(n)[0]).filter((k) => k.endsWith('_row_id'))).toEqual([]);
  });

  it('answers one row too few or too many at shortAnswerRate, and counts them', async () => {
    const s = await start({ shortAnswerRate: 1 });
    const even = await predict(s, 'home_rentals_model', [house, house]);
    expect(even.json).toHaveLength(1);
    const odd = await predict(s, 'home_rentals_model', [house, house, house]);
    expect(odd.json).toHaveLength(4);
    expect(s.stats.faults.shortAnswers).toBe(2);
  });

  it('retrains every model after retrainAfterPredicts: other predictions and describe answers', async () => {
    const s = await start({ retrainAfterPredicts: 1, legacyDescribe: true });
    const before = await predict(s, 'home_rentals_model', [house]);
    const describedBefore = await describeModel(s, 'home_rentals_model');
    const after = await predict(s, 'home_rentals_model', [house]);
    const describedAfter = await describeModel(s, 'home_rentals_model');
    const v2 = predictTargets('home_rentals_model', 2, house);
    expect(rowsOf(before)[0]).toMatchObject(v2);
    expect(rowsOf(after)[0].rental_price).toBe((v2.rental_price as number) + 1);
    expect(rowsOf(after)[0].rental_price_max).toBe((v2.rental_price_max as number) + 1);
    expect(describedAfter.json).not.toEqual(describedBefore.json);
  });

  it('ignores params and accepts data as a JSON string', async () => {
    const withParams = await call(sim, 'POST', predictPath('customer_churn'), {
      data: [{ tenure_months: 40, plan: 'pro', monthly_charges: 20 }],
      params: { partition_size: 10, foo: 'bar' },
    });
    const asString = await call(sim, 'POST', predictPath('customer_churn'), {
      data: JSON.stringify([{ tenure_months: 40, plan: 'pro', monthly_charges: 20 }]),
    });
    expect(withParams.status).toBe(200);
    expect(asString.json).toEqual(withParams.json);
    expect(rowsOf(asString)[0]).toMatchObject(predictTargets('customer_churn', 1, { tenure_months: 40, plan: 'pro', monthly_charges: 20 }));
  });

  it('breaks the interval for negative sqft', async () => {
    const r = await predict(sim, 'home_rentals_model', [{ ...house, sqft: -100 }]);
    const [answer] = rowsOf<RentalAnswer>(r);
    expect(answer.rental_price_min).toBeGreaterThan(answer.rental_price);
  });

  it('answers the envelope errors of the matching real server', async () => {
    const bare = await call(sim, 'POST', predictPath('home_rentals_model'), [house]);
    expect(bare.status).toBe(500);
    expect(bare.json).toMatchObject({ title: 'TypeError', detail: 'list indices must be integers or slices, not str' });
    const noType = await call(sim, 'POST', predictPath('home_rentals_model'), { data: [house] }, {});
    expect(noType.status).toBe(415);
    const arraySim = await start({ envelope: 'array' });
    const ok = await call(arraySim, 'POST', predictPath('home_rentals_model'), [house]);
    expect(ok.status).toBe(200);
    expect(rowsOf(ok)[0]).toMatchObject(predictTargets('home_rentals_model', 2, house));
    const wrapped = await call(arraySim, 'POST', predictPath('home_rentals_model'), { data: [house] });
    expect(wrapped.status).toBe(500);
    expect(problemOf(wrapped).title).toBe('KeyError');
  });

  it('fails the engine on __engine_error__ values, naming the row', async () => {
    const r = await predict(sim, 'home_rentals_model', [house, { ...house, neighborhood: ENGINE_ERROR_VALUE }]);
    expect(r.status).toBe(500);
    expect(r.headers['content-type']).toBe('application/json');
    expect(problemOf(r).title).toBe('MLEngineException');
    expect(problemOf(r).detail).toMatch(
      /^\[lightwood\/home_rentals_model\]: ValueError: row 1: could not convert value '__engine_error__'\nTraceback \(most recent call last\):/,
    );
  });

  it('refuses training and obsolete models with the reference messages', async () => {
    const training = await predict(sim, 'training_model', [house]);
    expect(training.status).toBe(500);
    expect(problemOf(training).title).toBe('Exception');
    expect(problemOf(training).detail).toBe('Error: model creation not completed');
    const failed = await predict(sim, 'failed_model', [house]);
    expect(problemOf(failed).detail).toBe('Error: model creation not completed');
    const obsolete = await predict(sim, 'obsolete_model', [house]);
    expect(obsolete.status).toBe(500);
    expect(problemOf(obsolete).detail).toBe("model 'obsolete_model' is obsolete and needs to be updated. Run 'RETRAIN obsolete_model;'");
  });

  it('expands the last row of a forecast request into the horizon', async () => {
    const rows = [
      { store: 'a', day: 1, sales: 100 },
      { store: 'a', day: 2, sales: '120.5' },
    ];
    const r = await predict(sim, 'forecast_model', rows);
    expect(r.status).toBe(200);
    expect(r.json).toHaveLength(rows.length + 2);
    expect(rowsOf(r)[0]).toMatchObject(predictTargets('forecast_model', 1, rows[0]));
    expect(rowsOf(r)[3]).toMatchObject({ ...predictTargets('forecast_model', 1, rows[1]), sales: 120.5 });
  });
});

describe('engine byom', () => {
  it('answers the engine columns only, and the row id when the rows carry it', async () => {
    const s = await start({ engine: 'byom' });
    const lightwoodOnly = (k: string) => /_(anomaly|original|explain)$/.test(k);
    const rows = [
      { ...house, __mindsdb_row_id: 4 },
      { ...house, sqft: '823' },
    ];
    const r = await predict(s, 'home_rentals_model', rows);
    const expected = Object.entries(predictTargets('home_rentals_model', 2, house)).filter(([k]) => !lightwoodOnly(k));
    expect(rowsOf(r)[0]).toEqual({ ...Object.fromEntries(expected), __mindsdb_row_id: 4 });
    expect(Object.keys(rowsOf(r)[1])).toEqual(['rental_price', 'rental_price_confidence', 'rental_price_min', 'rental_price_max', '__mindsdb_row_id']);
    expect(rowsOf(r)[1].__mindsdb_row_id).toBeNull();
    const churn = await predict(s, 'customer_churn', [{ tenure_months: 3 }]);
    expect(Object.keys(rowsOf(churn)[0])).toEqual(['churn', 'churn_confidence']);
    const forecast = await predict(s, 'forecast_model', [{ store: 'a', day: 1, sales: 100 }]);
    expect(forecast.json).toHaveLength(1);
    const retrained = await start({ engine: 'byom', retrainAfterPredicts: 1 });
    await predict(retrained, 'home_rentals_model', [house]);
    const after = await predict(retrained, 'home_rentals_model', [house]);
    expect(rowsOf(after)[0]).toEqual({
      ...Object.fromEntries(expected),
      rental_price: (predictTargets('home_rentals_model', 2, house).rental_price as number) + 1,
      rental_price_min: expect.any(Number) as unknown,
      rental_price_max: expect.any(Number) as unknown,
    });
  });

  it('refuses text that is not a number in a numeric input, and __engine_error__, as the suite’s model', async () => {
    const s = await start({ engine: 'byom' });
    const lots = await predict(s, 'home_rentals_model', [house, { ...house, sqft: 'lots' }]);
    expect(lots.status).toBe(500);
    expect(problemOf(lots).detail).toMatch(/^\[scorer_byom\/home_rentals_model\]: ValueError: row 1: column 'sqft' is not a number\nTraceback/);
    const marked = await predict(s, 'customer_churn', [{ plan: ENGINE_ERROR_VALUE }]);
    expect(problemOf(marked).detail).toMatch(/^\[scorer_byom\/customer_churn\]: ValueError: row 0: could not convert value '__engine_error__'/);
  });

  it('describes the model row without tables or accuracy, info as the suite’s model, and nothing else', async () => {
    const s = await start({ engine: 'byom' });
    const [row] = rowsOf(await describeModel(s, 'home_rentals_model'));
    expect(row).toMatchObject({ TABLES: [], ENGINE: 'byom', ACCURACY: null, VERSION: 2, STATUS: 'complete', ERROR: null });
    const [info] = rowsOf<InfoRow>(await describeModel(s, 'home_rentals_model', { attribute: 'info' }));
    expect(info).toEqual({
      accuracies: { r2_score: null },
      column_importances: Object.fromEntries(info.inputs.map((c) => [c, null])),
      inputs: modelCatalog.find((m) => m.name === 'home_rentals_model')!.inputs,
      outputs: ['rental_price'],
    });
    for (const attribute of ['features', 'model', 'jsonai', 'nope', 5]) expect((await describeModel(s, 'home_rentals_model', { attribute })).json).toEqual([]);
    const [training] = rowsOf(await describeModel(s, 'training_model'));
    expect(training).toMatchObject({ STATUS: 'generating', ERROR: expect.stringMatching(/^ML engine error:\n\nFileNotFoundError: /) as unknown });
    expect(rowsOf(await describeModel(s, 'failed_model', { attribute: 'info' }))[0]).toEqual({
      error: expect.stringMatching(/^FileNotFoundError: /) as unknown,
    });
  });
});

describe('faults', () => {
  it('answers 429 with Retry-After at rateLimitRate 1', async () => {
    const f = await start({ rateLimitRate: 1, retryAfterSeconds: 7 });
    const r = await predict(f, 'home_rentals_model', [house]);
    expect(r.status).toBe(429);
    expect(r.headers['retry-after']).toBe('7');
    expect(f.stats.faults.rateLimited).toBe(1);
  });

  it('answers 500 at errorRate 1 and HTML 503 at gatewayErrorRate 1', async () => {
    const e = await start({ errorRate: 1 });
    const r = await predict(e, 'home_rentals_model', [house]);
    expect(r.status).toBe(500);
    expect(r.json).toMatchObject({ title: 'InternalServerError', detail: 'simulated failure' });
    const g = await start({ gatewayErrorRate: 1 });
    const h = await predict(g, 'home_rentals_model', [house]);
    expect(h.status).toBe(503);
    expect(h.headers['content-type']).toBe('text/html');
    expect(h.text).toBe('<html><body><h1>503 Service Unavailable</h1></body></html>');
    const d = await describeModel(g, 'home_rentals_model');
    expect(d.status).toBe(200); // faults hit predict only
  });

  it('resets the socket at resetRate 1', async () => {
    const f = await start({ resetRate: 1 });
    await expect(predict(f, 'home_rentals_model', [house])).rejects.toThrow();
    expect(f.stats.faults.resets).toBe(1);
  });

  it('hangs until the client gives up, then closes promptly', async () => {
    const f = await createSimulator({ port: 0, hangRate: 1 });
    const res = request(`${f.url}${predictPath('home_rentals_model')}`, {
      method: 'POST',
      headers: JSON_HEADERS,
      body: JSON.stringify({ data: [house] }),
      headersTimeout: 200,
    });
    await expect(res).rejects.toMatchObject({ code: 'UND_ERR_HEADERS_TIMEOUT' });
    expect(f.stats.faults.hangs).toBe(1);
    const t0 = Date.now();
    await f.close();
    expect(Date.now() - t0).toBeLessThan(1000);
  });

  it('destroys hanging sockets on close()', async () => {
    const f = await createSimulator({ port: 0, hangRate: 1 });
    const res = request(`${f.url}${predictPath('home_rentals_model')}`, {
      method: 'POST',
      headers: JSON_HEADERS,
      body: JSON.stringify({ data: [house] }),
    });
    const settled = res.then(
      () => 'answered',
      () => 'failed',
    );
    await vi.waitFor(() => expect(f.stats.faults.hangs).toBe(1));
    const t0 = Date.now();
    await f.close();
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(await settled).toBe('failed');
  });

  it('draws the same faults for the same seed', async () => {
    const outcomes = async (seed: number) => {
      const f = await start({ errorRate: 0.3, rateLimitRate: 0.3, seed });
      const statuses: number[] = [];
      for (let i = 0; i < 20; i++) statuses.push((await predict(f, 'home_rentals_model', [house])).status);
      return statuses;
    };
    const a = await outcomes(42);
    expect(await outcomes(42)).toEqual(a);
    expect(a).toContain(429);
    expect(a).toContain(500);
    expect(a).toContain(200);
  });

  it('rejects fault rates adding up to more than 1', async () => {
    await expect(createSimulator({ port: 0, errorRate: 0.6, hangRate: 0.6 })).rejects.toThrow(/add up/);
  });
});

describe('stats', () => {
  it('counts requests, rows answered and received, and describes', async () => {
    const s = await start();
    const before = Date.now();
    await predict(s, 'home_rentals_model', [house, house, house]);
    await predict(s, 'customer_churn', [{ tenure_months: 1 }]);
    await predict(s, 'training_model', [house]);
    const after = Date.now();
    await describeModel(s, 'home_rentals_model');
    expect(s.stats.lastPredictAt).toBeGreaterThanOrEqual(before);
    expect(s.stats.lastPredictAt).toBeLessThanOrEqual(after);
    expect(s.stats).toEqual({
      predictRequests: 3,
      lastPredictAt: s.stats.lastPredictAt,
      predictRows: 4,
      // The row sent to the model in training, answered 500, was received all the same.
      predictRowsReceived: 5,
      describeRequests: 1,
      faults: { error500: 0, rateLimited: 0, resets: 0, hangs: 0, gateway: 0, shortAnswers: 0 },
      overCapacity: 0,
      peakInFlight: 1,
    });
  });

  it('answers 429 with Retry-After to requests beyond its capacity', async () => {
    const s = await start({ capacity: 2, latencyMs: 200, retryAfterSeconds: 3 });
    const answers = await Promise.all(
      [0, 1, 2].map(() =>
        request(`${s.url}/api/projects/mindsdb/models/home_rentals_model/predict`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ data: [house] }),
        }).then(async (r) => ({ status: r.statusCode, retryAfter: r.headers['retry-after'], body: await r.body.text() })),
      ),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 429]);
    expect(answers.find((a) => a.status === 429)).toMatchObject({ retryAfter: '3' });
    expect(s.stats).toMatchObject({ overCapacity: 1, peakInFlight: 2 });
  });
});
