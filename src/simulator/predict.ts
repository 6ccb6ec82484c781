import { jsonAnswer, problem, uncaught, type Answer } from './answer.js';
import { retype, type ModelDefinition, type ModelVersion } from './models.js';

/** The value that makes the simulated engine fail, so clients can test isolating bad rows. */
export const ENGINE_ERROR_VALUE = '__engine_error__';

type Row = Record<string, unknown>;

/**
 * The rows of a parsed predict body, or the answer the matching real server gives to a body it
 * cannot use: a wrong envelope gets the reference server's uncaught-exception 500s (TypeError for
 * a bare array where `{"data": ...}` is expected, KeyError for an object where an array is).
 */
export function readPredictRows(body: unknown, envelope: 'data' | 'array'): Row[] | Answer {
  let rows: unknown = body;
  if (envelope === 'data') {
    if (Array.isArray(body)) {
      return uncaught('TypeError', 'list indices must be integers or slices, not str');
    }
    if (typeof body !== 'object' || body === null) {
      return problem(400, 'Bad request', 'The predict body must be a JSON object with member "data"');
    }
    if (!Object.hasOwn(body, 'data')) return uncaught('KeyError', "'data'");
    rows = (body as { data: unknown }).data;
    if (typeof rows === 'string') {
      try {
        rows = JSON.parse(rows);
      } catch (err) {
        return uncaught('JSONDecodeError', (err as Error).message);
      }
    }
  } else if (typeof body === 'object' && body !== null && !Array.isArray(body)) {
    return uncaught('KeyError', '0');
  }
  if (!Array.isArray(rows)) return problem(400, 'Bad request', 'The predict rows must be a JSON array');
  for (let i = 0; i < rows.length; i++) {
    const row: unknown = rows[i];
    if (typeof row !== 'object' || row === null || Array.isArray(row)) {
      return problem(400, 'Bad request', `Row ${i} is not a JSON object`);
    }
  }
  return rows as Row[];
}

/**
 * The answer to valid rows: the model's status errors, the simulated engine failure, or the
 * prediction array (one object per row in order; the last row expands into the horizon). `short`
 * answers one row too few or too many, as a fault.
 */
export function predictAnswer(model: ModelDefinition, version: ModelVersion, rows: Row[], rowIdMember: string, short = false): Answer {
  if (version.status !== 'complete') {
    return problem(500, 'Exception', `Model '${model.name}' creation not completed: status is ${version.status}`);
  }
  if (model.obsolete) {
    return problem(500, 'Exception', `Model '${model.name}' is obsolete and needs to be updated. Run 'RETRAIN ${model.name};'`);
  }
  const bad = rows.findIndex((row) => Object.values(row).includes(ENGINE_ERROR_VALUE));
  if (bad >= 0) {
    return problem(500, 'MLEngineException', `[${model.name}]: engine failed on row ${bad}: could not convert value`);
  }
  const out = new Array<Row>(rows.length);
  for (let i = 0; i < rows.length; i++) out[i] = answerRow(model, version, rows[i], rowIdMember);
  const last = out[out.length - 1];
  if (last && model.horizon > 1) {
    for (let step = 1; step < model.horizon; step++) out.push({ ...last });
  }
  // A cut body loses its last row; a flaky engine repeats one (odd and even batch sizes, both seen).
  if (short && out.length > 0) {
    if (out.length % 2 === 0) out.pop();
    else out.push({ ...out[out.length - 1] });
  }
  return jsonAnswer(200, out);
}

function answerRow(model: ModelDefinition, version: ModelVersion, row: Row, rowIdMember: string): Row {
  const out = version.predict(row);
  for (const column of model.inputs) out[column] = retype(row[column]);
  // Echoed when sent, null otherwise (as the interface document shows it); `none`: a server without the member.
  if (rowIdMember !== 'none') out[rowIdMember] = row[rowIdMember] ?? null;
  out.select_data_query = null;
  out.when_data = null;
  return out;
}
