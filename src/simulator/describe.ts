import { jsonAnswer, uncaught, type Answer } from './answer.js';
import { PROJECT_NAME, type ColumnType, type EngineFlavour, type ModelDefinition, type ModelVersion } from './models.js';
import { pythonType } from './predict.js';

/** What lightwood describes besides the model row: the row's TABLES. */
const LIGHTWOOD_TABLES = ['info', 'features', 'model', 'jsonai'];

const PIPELINE = 'encoders --> dtype_dict --> dependency_dict --> model --> problem_definition --> identifiers --> imputers --> accuracy_functions';

const ENCODERS: Record<ColumnType, string> = {
  integer: 'NumericEncoder',
  float: 'NumericEncoder',
  categorical: 'OneHotEncoder',
  binary: 'BinaryEncoder',
  text: 'PretrainedLangEncoder',
};

type Row = Record<string, unknown>;

/**
 * Answer to `GET .../describe` with an already parsed body. The reference server asks
 * `"attribute" in body` and then `body["attribute"]`, so a body that is not an object is read as
 * Python reads it: an array or a string without "attribute" in it describes the model, null or a
 * number is a TypeError. An attribute (any value but null) goes to the engine. `legacy` makes `{}`
 * answer the info shape, as older servers do.
 */
export function describeModel(model: ModelDefinition, version: ModelVersion, body: unknown, legacy: boolean, engine: EngineFlavour = 'lightwood'): Answer {
  const asked = requestedAttribute(body);
  if ('status' in asked) return asked;
  const { attribute } = asked;
  if (attribute === null) return jsonAnswer(200, [legacy ? info(model, version) : metadata(model, version, engine)]);
  return jsonAnswer(200, engine === 'byom' ? byomAttribute(model, version, attribute) : lightwoodAttribute(model, version, attribute));
}

/** The attribute a describe body asks for (null: none, the model row), or the server's TypeError. */
function requestedAttribute(body: unknown): { attribute: unknown } | Answer {
  if (typeof body === 'string' || Array.isArray(body)) {
    if (!body.includes('attribute')) return { attribute: null };
    return uncaught('TypeError', typeof body === 'string' ? "string indices must be integers, not 'str'" : 'list indices must be integers or slices, not str');
  }
  if (typeof body !== 'object' || body === null) return uncaught('TypeError', `argument of type '${pythonType(body)}' is not iterable`);
  return { attribute: (body as { attribute?: unknown }).attribute ?? null };
}

/** The reference server's model row (its own, whatever the engine), TABLES first: what the engine describes. */
function metadata(model: ModelDefinition, version: ModelVersion, engine: EngineFlavour): Row {
  return {
    TABLES: engine === 'byom' ? [] : LIGHTWOOD_TABLES,
    NAME: model.name,
    ENGINE: engine,
    PROJECT: PROJECT_NAME,
    ACTIVE: version.version === model.activeVersion,
    VERSION: version.version,
    STATUS: engine === 'byom' && version.status === 'training' ? 'generating' : version.status,
    ACCURACY: engine === 'byom' ? null : version.accuracy,
    PREDICT: model.target,
    UPDATE_STATUS: model.obsolete ? 'available' : 'up_to_date',
    MINDSDB_VERSION: 'simulator',
    ERROR: engine === 'byom' ? byomError(model, version) : (version.trainingError ?? null),
    SELECT_DATA_QUERY: model.selectDataQuery,
    TRAINING_OPTIONS: model.trainingOptions,
    TAG: null,
  };
}

/**
 * A Bring-Your-Own-Model engine reads its trained model's file to describe it, so a model that
 * has none (training, or failed) answers the server's wrapping of that FileNotFoundError.
 */
function byomError(model: ModelDefinition, version: ModelVersion): string | null {
  if (version.status === 'complete') return null;
  return `ML engine error:\n\n${missingModelFile(model, version)}\n\nModel error:\n\n${version.trainingError ?? '-'}`;
}

function missingModelFile(model: ModelDefinition, version: ModelVersion): string {
  return `FileNotFoundError: [Errno 2] No such file or directory: '/simulator/storage/content/predictor/predictor_${model.name}_${version.version}/model'`;
}

/** The real-server suite's model describes `info` (no accuracies, no importances), and nothing else. */
function byomAttribute(model: ModelDefinition, version: ModelVersion, attribute: unknown): Row[] {
  if (version.status !== 'complete') return [{ error: missingModelFile(model, version) }];
  if (attribute !== 'info') return [];
  return [
    {
      accuracies: { [accuracyMetric(model)]: null },
      column_importances: Object.fromEntries(model.inputs.map((c) => [c, null])),
      inputs: [...model.inputs],
      outputs: [model.target],
    },
  ];
}

/** lightwood's attributes, and its list of them (as rows of `tables`) for any other. */
function lightwoodAttribute(model: ModelDefinition, version: ModelVersion, attribute: unknown): Row[] {
  switch (attribute) {
    case 'info':
      return [info(model, version)];
    case 'features':
      return features(model);
    case 'model':
      return candidates(model, version);
    case 'jsonai':
      return [{ ensemble: jsonAi(model) }];
    default:
      return LIGHTWOOD_TABLES.map((tables) => ({ tables }));
  }
}

function accuracyMetric(model: ModelDefinition): string {
  const type = model.columnTypes[model.target];
  return type === 'integer' || type === 'float' ? 'r2_score' : 'balanced_accuracy_score';
}

function info(model: ModelDefinition, version: ModelVersion): Row {
  return {
    accuracies: { [accuracyMetric(model)]: version.accuracy },
    column_importances: { ...model.importances },
    inputs: [...model.inputs],
    outputs: [model.target],
    model: PIPELINE,
  };
}

function features(model: ModelDefinition): Row[] {
  return [...model.inputs, model.target].map((column) => {
    const type = model.columnTypes[column] ?? 'text';
    return { column, type, encoder: ENCODERS[type], role: column === model.target ? 'target' : 'feature' };
  });
}

/** lightwood's candidate models; `accuracy_functions` is Python's `str()` of the list, as lightwood writes it. */
function candidates(model: ModelDefinition, version: ModelVersion): Row[] {
  const accuracy = version.accuracy ?? 0;
  const functions = `['${accuracyMetric(model)}']`;
  return [
    { name: 'Neural', performance: round3(accuracy - 0.04), training_time: 41.7, selected: 0, accuracy_functions: functions },
    { name: 'LightGBM', performance: accuracy, training_time: 12.9, selected: 1, accuracy_functions: functions },
    { name: 'Regression', performance: round3(accuracy - 0.11), training_time: 0.8, selected: 0, accuracy_functions: functions },
  ];
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}

/** The JSON-AI document, indented as lightwood writes it. */
function jsonAi(model: ModelDefinition): string {
  return JSON.stringify(
    {
      problem_definition: { target: model.target },
      dtype_dict: model.columnTypes,
      encoders: Object.fromEntries(model.inputs.map((c) => [c, ENCODERS[model.columnTypes[c] ?? 'text']])),
    },
    null,
    2,
  );
}
