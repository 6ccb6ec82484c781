import { formatLimit, LIMITS, type LimitName } from './limits.js';
import { MAX_KEPT_JOBS, MIN_KEPT_JOBS } from './retention.js';
import { PROCESS_DEFAULTS } from '../process-defaults.js';

/** One environment variable batch-scorer reads: what it means, its default, and whether it holds a secret. */
export interface EnvSetting {
  /** The variable's name, e.g. `REDIS_URL`. */
  name: string;
  /** What it sets, in a sentence or two (Markdown). */
  meaning: string;
  /** What applies when it is unset, as users would write it; absent when unset means "off" or "none". */
  default?: string;
  /** The `config/*.yaml` key that sets the same thing (the variable wins over it); absent when there is none. */
  configKey?: string;
  /** Never logged nor written anywhere; refused in `config/*.yaml`. */
  secret: boolean;
  /** The commands that read it; absent when every command does (through loadSettings). */
  commands?: string[];
}

/**
 * Every environment variable the source reads, declared once: the settings reference
 * (docs/reference/settings.md) is generated from it, and a test fails when the source reads a
 * variable missing here or when one named here is read nowhere. Flags win over these, which win
 * over `config/*.yaml`. Variables read by libraries (the AWS SDK's AWS_ACCESS_KEY_ID and the rest
 * of its credential chain; Node's NODE_OPTIONS, NODE_COMPILE_CACHE) are theirs, not listed.
 */
export const ENV_SETTINGS: readonly EnvSetting[] = [
  {
    name: 'MODEL_SERVICE_URL',
    meaning: 'The Model Query Service base URL runs call unless `--service` names another; the deployment policy always allows it.',
    default: 'http://127.0.0.1:47334',
    configKey: 'run.service',
    secret: false,
  },
  {
    name: 'MODEL_SERVICE_TOKEN',
    meaning: 'Bearer token sent to the origin of `MODEL_SERVICE_URL` only.',
    secret: true,
  },
  {
    name: 'SERVICE_URLS',
    meaning: 'Comma-separated base URLs of the other services a run may name with `--service` (the deployment policy); unset, any service may be named.',
    secret: false,
  },
  {
    name: 'SERVICE_TOKENS',
    meaning: 'Comma-separated `<origin>=<token>` entries: the bearer token of each other service `SERVICE_URLS` allows.',
    secret: true,
  },
  {
    name: 'INPUT_ROOTS',
    meaning:
      'Comma-separated absolute folders, `file://` URLs or `s3://bucket/prefix`es runs may read from, and PostgreSQL databases (`postgresql://host:port/db`) they may read tables and queries of (the deployment policy); unset, any.',
    secret: false,
  },
  {
    name: 'OUTPUT_ROOTS',
    meaning:
      'Comma-separated absolute folders, `file://` URLs or `s3://bucket/prefix`es runs may write to, and `postgresql://host:5432/db` databases `--out-database` may name (the deployment policy); unset, any.',
    secret: false,
  },
  {
    name: 'REDIS_URL',
    meaning: 'Redis for queue mode: one node, or a cluster as `redis-cluster://host1:port1,host2:port2`.',
    default: 'redis://127.0.0.1:6379',
    configKey: 'redis.url',
    secret: false,
  },
  {
    name: 'QUEUE_PREFIX',
    meaning: "Queue key prefix; a `{hash tag}` keeps a queue's keys on one Redis Cluster slot.",
    default: '{batch-scorer}',
    configKey: 'redis.prefix',
    secret: false,
  },
  {
    name: 'S3_ENDPOINT',
    meaning: 'An S3-compatible server (MinIO, s3rver) as an http(s) URL; unset, AWS S3.',
    configKey: 's3.endpoint',
    secret: false,
  },
  {
    name: 'S3_REGION',
    meaning: 'The S3 region.',
    default: '`AWS_REGION`, else `s3.region`, else us-east-1',
    configKey: 's3.region',
    secret: false,
  },
  {
    name: 'AWS_REGION',
    meaning: 'The S3 region when `S3_REGION` is unset.',
    default: 'us-east-1',
    secret: false,
  },
  {
    name: 'S3_FORCE_PATH_STYLE',
    meaning: '`true`, `false`, `1` or `0`: path-style S3 addresses (MinIO needs them).',
    default: 'false',
    configKey: 's3.forcePathStyle',
    secret: false,
  },
  {
    name: 'LOG_LEVEL',
    meaning: '`fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`; `debug` also prints the stack of an unexpected error.',
    default: `${PROCESS_DEFAULTS.logLevel} (\`score\` on a terminal with a progress bar: ${PROCESS_DEFAULTS.progressBarLogLevel})`,
    configKey: 'log.level',
    secret: false,
  },
  {
    name: 'API_TOKEN',
    meaning: "Bearer token of `serve`'s API, `/metrics` and `/ui`, and of a worker's `/metrics`; 16 characters at least.",
    secret: true,
  },
  {
    name: 'DASHBOARD_USER',
    meaning: "Basic-auth user of `serve`'s `/ui`; set with `DASHBOARD_PASSWORD` or not at all.",
    secret: false,
  },
  {
    name: 'DASHBOARD_PASSWORD',
    meaning: "Basic-auth password of `serve`'s `/ui`; 16 characters at least.",
    secret: true,
  },
  {
    name: 'PORT',
    meaning: 'Where `serve` listens unless `--port` says otherwise.',
    default: String(PROCESS_DEFAULTS.servePort),
    secret: false,
  },
  {
    name: 'CONFIG_DIR',
    meaning: 'The folder of the `config/*.yaml` files (read in name order, later files win).',
    default: 'config',
    secret: false,
  },
  {
    name: 'JOBS_DIR',
    meaning: 'The folder of the `*.yaml` pipeline declarations; a worker without it takes no scheduled runs.',
    default: 'jobs',
    secret: false,
  },
  {
    name: 'OPENLINEAGE_URL',
    meaning: "The lineage server's base URL (Marquez: `http://marquez:5000`); set, runs send OpenLineage events.",
    secret: false,
  },
  {
    name: 'OPENLINEAGE_ENDPOINT',
    meaning: 'The path below `OPENLINEAGE_URL` events are POSTed to.',
    default: 'api/v1/lineage',
    secret: false,
  },
  {
    name: 'OPENLINEAGE_NAMESPACE',
    meaning: 'The namespace of the jobs the events name.',
    default: 'batch-scorer',
    secret: false,
  },
  {
    name: 'OPENLINEAGE_API_KEY',
    meaning: 'Bearer token sent with the lineage events.',
    secret: true,
  },
  {
    name: 'NOTIFY_URLS',
    meaning: "Comma-separated http(s) webhooks told of every run's end; no credentials in them.",
    secret: false,
  },
  {
    name: 'NOTIFY_SECRET',
    meaning: 'Signs every webhook delivery, and seals delivery jobs; needed when `NOTIFY_URLS` is set; 16 characters at least.',
    secret: true,
  },
  {
    name: 'PUBLIC_URL',
    meaning:
      'Where people reach `serve` (`https://scorer.example`): webhooks link to the run page under it, and lineage events name the schemas of their custom facets under it.',
    secret: false,
  },
  {
    name: 'RETENTION_OLDER_THAN',
    meaning:
      '`runs prune` deletes finished runs that ended longer ago than this (`30d`, `12h`, `90m`) unless `RETENTION_KEEP` keeps them; finished jobs also leave the queues past it, if sooner. See [retention](../retention.md).',
    configKey: 'retention.olderThan',
    secret: false,
  },
  {
    name: 'RETENTION_KEEP',
    meaning: 'The newest finished runs of each pipeline (the runs of none counted as one more) that `runs prune` keeps whatever their age.',
    configKey: 'retention.keep',
    secret: false,
  },
  {
    name: 'RETENTION_JOBS',
    meaning: `Finished jobs each queue (runs, segments) keeps of each end state, ${MIN_KEPT_JOBS} to ${MAX_KEPT_JOBS}, applied by the workers; a run's other keys in Redis go with its job.`,
    default: 'runs 1000 / 5000 failed, segments 20000',
    configKey: 'retention.jobs',
    secret: false,
  },
  {
    name: 'SIMULATOR_TOKEN',
    meaning: 'Makes the simulator require this bearer token.',
    secret: true,
    commands: ['simulate'],
  },
  // The bounds on sizes peers control, declared in LIMITS (docs/limits.md says what each does past it).
  ...(Object.entries(LIMITS) as [LimitName, (typeof LIMITS)[LimitName]][]).map(([name, spec]) => ({
    name: spec.setting,
    meaning: `${spec.bounds} See [limits](../limits.md).`,
    default: formatLimit(name, spec.default),
    secret: false,
  })),
];
