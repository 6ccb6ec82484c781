/** Configuration: run options and their flags, settings and their catalogue, limits, deployment policy. */

// A run's options: the schema (every default), the flags derived from it, and their checks.
export {
  CAP_OPTIONS,
  DEFAULT_CONCURRENCY,
  formatIssues,
  optionFlag,
  outDatabaseOf,
  OUTPUT_NEUTRAL_OPTIONS,
  parseRunOptions,
  PREDICTION_MEMBERS,
  processConcurrency,
  restate,
  RUN_PRIORITIES,
  runOptionsSchema,
  type PredictionMember,
  type RunOptions,
  type RunOptionsInput,
  type RunPriority,
} from './run-options.js';

// A process's settings (environment and config file), and the parts commands read apart.
export { isTcpPort, loadSettings, type NotifySettings, type Settings } from './settings.js';
export type { LineageSettings } from './lineage-settings.js';
export { parseRedisUrl, type RedisTarget } from './redis-url.js';
export { tokenFor, type ServiceTokens } from './service-tokens.js';
export { targetOrigin, webhookUrlProblem } from './webhook-url.js';

// How long and how many finished runs and jobs are kept.
export { MAX_KEPT_JOBS, RETENTION_AGE_FORMAT, retentionAge, type RetentionSettings } from './retention.js';

// The deployment's limits (MAX_* settings) and the error naming the one passed.
export { ANSWER_FLOOR_BYTES, DEFAULT_LIMITS, formatLimit, INFLATION_FLOOR_BYTES, limitError, LIMITS, type Limits } from './limits.js';

// The deployment policy: which services, inputs and outputs a run may name.
export {
  checkInput,
  checkInputDatabase,
  checkOutput,
  checkOutputDatabase,
  checkRun,
  checkService,
  openSettings,
  storageGuard,
  type DeploymentPolicy,
} from './deployment-policy.js';

// A run's input: files at a location, or a database, and the options that fit each.
export { checkInputOptions, formatRunInput, parseRunInput, type RunInput } from './run-input.js';

// Text a user or file gave, checked before it is used or shown.
export { checkedText } from './checked-text.js';
