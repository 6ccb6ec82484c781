import { jsonAnswer, problem, type Answer } from './answer.js';
import { PROJECT_NAME, type ColumnType, type ModelDefinition, type ModelVersion } from './models.js';

const TABLES = ['info', 'features', 'model', 'jsonai'];

const PIPELINE = 'encoders --> dtype_dict --> dependency_dict --> model --> problem_definition --> identifiers --> imputers --> accuracy_functions';

const ENCODERS: Record<ColumnType, string> = {
  integer: 'NumericEncoder',
  float: 'NumericEncoder',
  categorical: 'OneHotEncoder',
  binary: 'BinaryEncoder',
  text: 'PretrainedLangEncoder',
};

/**
 * Answer to `GET .../describe` with an already parsed body. `legacy` makes `{}` answer the info
 * shape, as older servers do.
 */
export function describeModel(model: ModelDefinition, version: ModelVersion, body: unknown, legacy: boolean): Answer {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return problem(400, 'Bad request', 'The describe body must be a JSON object');
  }
  const attribute = (body as { attribute?: unknown }).attribute;
  if (attribute === undefined) {
    return jsonAnswer(200, [legacy ? info(model, version) : metadata(model, version)]);
  }
  if (typeof attribute !== 'string') {
    return problem(400, 'Bad request', "'attribute' must be a string");
  }
  switch (attribute) {
    case 'info':
      return jsonAnswer(200, [info(model, version)]);
    case 'features':
      return jsonAnswer(200, features(model));
    case 'model':
      return jsonAnswer(200, candidates(model, version));
    case 'jsonai':
      return jsonAnswer(200, [{ code: jsonAi(model) }]);
    default:
      return jsonAnswer(200, TABLES);
  }
}

function metadata(model: ModelDefinition, version: ModelVersion): Record<string, unknown> {
  return {
    TABLES,
    NAME: model.name,
    ENGINE: 'lightwood',
    PROJECT: PROJECT_NAME,
    ACTIVE: version.version === model.activeVersion,
    VERSION: version.version,
    STATUS: version.status,
    ACCURACY: version.accuracy,
    PREDICT: model.target,
    UPDATE_STATUS: model.obsolete ? 'available' : 'up_to_date',
    MINDSDB_VERSION: 'simulator',
    ERROR: null,
    SELECT_DATA_QUERY: model.selectDataQuery,
    TRAINING_OPTIONS: model.trainingOptions,
    TAG: null,
  };
}

function accuracyMetric(model: ModelDefinition): string {
  const type = model.columnTypes[model.target];
  return type === 'integer' || type === 'float' ? 'r2_score' : 'balanced_accuracy_score';
}

function info(model: ModelDefinition, version: ModelVersion): Record<string, unknown> {
  return {
    accuracies: { [accuracyMetric(model)]: version.accuracy },
    column_importances: { ...model.importances },
    inputs: [...model.inputs],
    outputs: [model.target],
    model: PIPELINE,
  };
}

function features(model: ModelDefinition): Record<string, unknown>[] {
  return [...model.inputs, model.target].map((column) => {
    const type = model.columnTypes[column] ?? 'text';
    return { column, type, encoder: ENCODERS[type], role: column === model.target ? 'target' : 'feature' };
  });
}

function candidates(model: ModelDefinition, version: ModelVersion): Record<string, unknown>[] {
  const accuracy = version.accuracy ?? 0;
  const functions = [accuracyMetric(model)];
  return [
    { name: 'Neural', performance: round3(accuracy - 0.04), training_time: 41.7, selected: 0, accuracy_functions: functions },
    { name: 'LightGBM', performance: accuracy, training_time: 12.9, selected: 1, accuracy_functions: functions },
    { name: 'Regression', performance: round3(accuracy - 0.11), training_time: 0.8, selected: 0, accuracy_functions: functions },
  ];
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}

function jsonAi(model: ModelDefinition): string {
  return JSON.stringify({
    problem_definition: { target: model.target },
    dtype_dict: model.columnTypes,
    encoders: Object.fromEntries(model.inputs.map((c) => [c, ENCODERS[model.columnTypes[c] ?? 'text']])),
  });
}
