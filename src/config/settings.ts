import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path, { join } from 'node:path';
import { z } from 'zod';
import { BatchScorerError, errorMessage } from '../errors.js';
import { isDatabaseUrl, parseDatabaseUrl, type DatabaseUrl } from '../database/index.js';
import { limitsFromEnv, type Limits } from './limits.js';
import { envLogLevel, PROCESS_DEFAULTS } from '../process-defaults.js';
import { redisUrlSchema } from './redis-url.js';
import { lineageSettingsFromEnv, type LineageSettings } from './lineage-settings.js';
import { hasScheme, inputKind, type Location, parseLocation, type S3Settings, s3SettingsFromEnv } from '../storage/index.js';
import { webhookUrlProblem } from './webhook-url.js';
import { serviceBase, type DeploymentPolicy } from './deployment-policy.js';
import { formatIssues, restate, runOptionsSchema, type RunOptionsInput } from './run-options.js';
import { retentionFileSchema, retentionFromEnv, type RetentionSettings } from './retention.js';
import type { ServiceTokens } from './service-tokens.js';

/**
 * `config/*.yaml`: defaults for this installation, below flags and environment. Secrets
 * (tokens, passwords) are read from the environment only, never from these files. Every key is
 * shown in config/example.yaml.sample (its test keeps it in step with this schema).
 */
export const configFileSchema = z
  .object({
    /**
     * Defaults for run options (see run-options.ts), e.g. `{ concurrency: 8, batchSize: 500 }`. Not
     * a deadline: read when the process starts, a duration would count from then, not from a run's start.
     */
    run: runOptionsSchema.omit({ deadline: true }).partial().strict().optional(),
    /** Redis for queue mode: `url` as REDIS_URL takes it (one node, or `redis-cluster://host1:port1,host2:port2`). */
    redis: z.object({ url: redisUrlSchema.optional(), prefix: z.string().optional() }).strict().optional(),
    s3: z.object({ endpoint: z.string().optional(), region: z.string().optional(), forcePathStyle: z.boolean().optional() }).strict().optional(),
    log: z
      .object({ level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).optional() })
      .strict()
      .optional(),
    /** How long and how many finished runs are kept, and finished jobs (see RetentionSettings). */
    retention: retentionFileSchema.optional(),
  })
  .strict();

type ConfigFile = z.output<typeof configFileSchema>;

/** The settings of a process, resolved once at start. */
export interface Settings {
  /** Defaults for run options: config files, then MODEL_SERVICE_URL. Flags override them. */
  runDefaults: RunOptionsInput;
  /**
   * MODEL_SERVICE_TOKEN, under the origin of MODEL_SERVICE_URL, and SERVICE_TOKENS: the bearer
   * token each service origin gets (see tokenFor); never logged.
   */
  serviceTokens: ServiceTokens;
  /** INPUT_ROOTS, OUTPUT_ROOTS and SERVICE_URLS: what runs may read, write and call (see deployment-policy.ts). */
  policy: DeploymentPolicy;
  /** REDIS_URL, default redis://127.0.0.1:6379: one node, or a cluster as `redis-cluster://host1:port1,host2:port2`. */
  redisUrl: string;
  /** Queue key prefix; a `{hash tag}` keeps a queue's keys on one Redis Cluster slot. */
  queuePrefix: string;
  s3: S3Settings;
  logLevel: string;
  /**
   * API_TOKEN: the bearer token of HTTP endpoints (`serve`'s API, `/metrics` and `/ui`; a worker's
   * `/metrics`) when set, of MIN_SECRET_LENGTH characters at least; never logged.
   */
  apiToken?: string;
  /** DASHBOARD_USER and DASHBOARD_PASSWORD: basic-auth credentials for `serve`'s `/ui`; both or neither, the password of MIN_SECRET_LENGTH characters at least. */
  dashboard?: { user: string; password: string };
  /** PORT: where `serve` listens unless `--port` says otherwise (PROCESS_DEFAULTS.servePort). */
  port: number;
  /** JOBS_DIR: the folder of `jobs/*.yaml` pipeline declarations (./jobs). */
  jobsDir: string;
  /** OPENLINEAGE_URL and the settings beside it: where run events go; unset, none are sent. */
  lineage?: LineageSettings;
  /** NOTIFY_URLS, NOTIFY_SECRET (never logged) and PUBLIC_URL: the webhooks told of every run's end (see src/notify/). */
  notify: NotifySettings;
  /** MAX_ANSWER_BYTES and the other bounds on sizes peers control (see LIMITS in limits.ts). */
  limits: Limits;
  /** RETENTION_OLDER_THAN, RETENTION_KEEP and RETENTION_JOBS: finished runs and jobs kept (see RetentionSettings); none set, everything is kept as before. */
  retention: RetentionSettings;
}

/** The notification settings of a process (see notifyFromEnv); src/notify/ tells run ends with them. */
export interface NotifySettings {
  /** NOTIFY_URLS: told of every run's end. */
  urls: string[];
  /** NOTIFY_SECRET: signs every delivery; never logged. */
  secret?: string;
  /** PUBLIC_URL, without a trailing slash: where people reach `serve`, for a delivery's link to the run page. */
  publicUrl?: string;
}

/** Reads `config/*.yaml` (in name order, later files win) and the environment; names the file and key on error. */
export function loadSettings(env: NodeJS.ProcessEnv = process.env, configDir = env.CONFIG_DIR ?? 'config'): Settings {
  const file = readConfigFiles(configDir);
  const s3 = { ...file.s3, ...definedOnly(s3SettingsFromEnv(env)) };
  const runDefaults = { ...file.run, ...(env.MODEL_SERVICE_URL ? { service: env.MODEL_SERVICE_URL } : {}) };
  const home = serviceSetting(runDefaults.service, 'MODEL_SERVICE_URL');
  const policy = policyFromEnv(env, home);
  const notify = notifyFromEnv(env);
  return {
    runDefaults,
    serviceTokens: serviceTokensFromEnv(env, home, policy),
    policy,
    redisUrl: env.REDIS_URL ?? file.redis?.url ?? 'redis://127.0.0.1:6379',
    queuePrefix: env.QUEUE_PREFIX ?? file.redis?.prefix ?? '{batch-scorer}',
    s3,
    logLevel: envLogLevel(env) ?? file.log?.level ?? PROCESS_DEFAULTS.logLevel,
    apiToken: secretFromEnv(env, 'API_TOKEN'),
    dashboard: dashboardFromEnv(env),
    port: portFromEnv(env.PORT),
    jobsDir: env.JOBS_DIR || 'jobs',
    lineage: lineageSettingsFromEnv(env, notify.publicUrl),
    notify,
    limits: limitsFromEnv(env),
    retention: retentionFromEnv(env, file.retention),
  };
}

/**
 * The shortest API_TOKEN or DASHBOARD_PASSWORD taken: a shorter one falls to guessing, however
 * slowly failed attempts are let through.
 */
export const MIN_SECRET_LENGTH = 16;

/** A secret setting, refused when set but shorter than MIN_SECRET_LENGTH (its length is said, never its value). */
function secretFromEnv(env: NodeJS.ProcessEnv, name: 'API_TOKEN' | 'DASHBOARD_PASSWORD' | 'NOTIFY_SECRET'): string | undefined {
  const value = env[name] || undefined;
  if (value !== undefined && value.length < MIN_SECRET_LENGTH) {
    throw new BatchScorerError(
      'E_CONFIG',
      `${name} is ${value.length} characters long: set one of ${MIN_SECRET_LENGTH} characters at least, e.g. ${name}=$(openssl rand -hex 24)`,
    );
  }
  return value;
}

function dashboardFromEnv(env: NodeJS.ProcessEnv): Settings['dashboard'] {
  const user = env.DASHBOARD_USER || undefined;
  const password = secretFromEnv(env, 'DASHBOARD_PASSWORD');
  if (user && password) return { user, password };
  if (user || password) {
    const missing = user ? 'DASHBOARD_PASSWORD' : 'DASHBOARD_USER';
    throw new BatchScorerError('E_CONFIG', `${missing} is not set: set both DASHBOARD_USER and DASHBOARD_PASSWORD, or neither`);
  }
  return undefined;
}

/**
 * NOTIFY_URLS, each refused without being quoted (a path or query may hold a token); NOTIFY_SECRET,
 * which any target needs (an unsigned delivery could be forged by anyone who finds the receiver);
 * PUBLIC_URL, `serve`'s address as people reach it, for links to run pages.
 */
function notifyFromEnv(env: NodeJS.ProcessEnv): NotifySettings {
  const urls = (listSetting(env, 'NOTIFY_URLS') ?? []).map((text, i) => {
    const problem = webhookUrlProblem(text);
    if (problem) throw new BatchScorerError('E_CONFIG', `NOTIFY_URLS entry ${i + 1} ${problem}`);
    return text;
  });
  const secret = secretFromEnv(env, 'NOTIFY_SECRET');
  if (urls.length > 0 && !secret) {
    throw new BatchScorerError(
      'E_CONFIG',
      `NOTIFY_URLS is set but NOTIFY_SECRET is not: every delivery is signed with it; set one of ${MIN_SECRET_LENGTH} characters at least, e.g. NOTIFY_SECRET=$(openssl rand -hex 24)`,
    );
  }
  const publicUrl = env.PUBLIC_URL ? publicUrlSetting(env.PUBLIC_URL) : undefined;
  return { urls, ...(secret && { secret }), ...(publicUrl && { publicUrl }) };
}

/** PUBLIC_URL without its trailing slash: http(s), without credentials, query or fragment (not quoted: it might hold them). */
function publicUrlSetting(text: string): string {
  const problem =
    webhookUrlProblem(text) ?? (/[?#]/.test(text) ? 'has a query or fragment: write the address run pages are under, e.g. https://scorer.example' : undefined);
  if (problem) throw new BatchScorerError('E_CONFIG', `PUBLIC_URL ${problem}`);
  return text.replace(/\/+$/, '');
}

/**
 * INPUT_ROOTS, OUTPUT_ROOTS and SERVICE_URLS. The deployment's own service is always allowed, so
 * SERVICE_URLS lists only the others a run may name.
 */
function policyFromEnv(env: NodeJS.ProcessEnv, home: string): DeploymentPolicy {
  const services = listSetting(env, 'SERVICE_URLS')?.map((text, i) => serviceBase(serviceSetting(text, `SERVICE_URLS entry ${i + 1}`)));
  const inputs = rootsSetting(env, 'INPUT_ROOTS');
  const outputs = rootsSetting(env, 'OUTPUT_ROOTS');
  return {
    ...(inputs && { inputRoots: inputs.roots, inputDatabases: inputs.databases }),
    ...(outputs && { outputRoots: outputs.roots, outputDatabases: outputs.databases }),
    ...(services && { serviceUrls: [...new Set([serviceBase(home), ...services])] }),
  };
}

/** A comma-separated setting's entries, trimmed; undefined when unset or empty. */
function listSetting(env: NodeJS.ProcessEnv, name: string): string[] | undefined {
  const value = env[name];
  if (value === undefined || value.trim() === '') return undefined;
  const entries = value.split(',').map((entry) => entry.trim());
  if (entries.includes('')) throw new BatchScorerError('E_CONFIG', `${name} has an empty entry: write its entries separated by single commas`);
  return entries;
}

/**
 * A roots setting (INPUT_ROOTS, OUTPUT_ROOTS), undefined when unset: its folders and prefixes, and
 * apart its PostgreSQL databases (none listed: none allowed).
 */
function rootsSetting(env: NodeJS.ProcessEnv, name: string): { roots: Location[]; databases: DatabaseUrl[] } | undefined {
  const entries = listSetting(env, name);
  if (entries === undefined) return undefined;
  return {
    roots: rootLocations(
      entries.filter((e) => !isDatabaseUrl(e)),
      name,
    ),
    databases: databaseRoots(entries.filter(isDatabaseUrl), name),
  };
}

/** Database roots (`postgresql://host:5432/db`), checked as a database input and --out-database are: a password in one is refused without being shown. */
function databaseRoots(entries: string[], name: string): DatabaseUrl[] {
  return entries.map((text) => {
    try {
      return parseDatabaseUrl(text);
    } catch (err) {
      throw new BatchScorerError('E_CONFIG', `${name}: ${errorMessage(err)}`, { cause: err });
    }
  });
}

/** The entries of a roots setting that are folders or prefixes: absolute local folders (or `file://` URLs) and `s3://bucket/prefix`es, never globs. */
function rootLocations(entries: string[], name: string): Location[] {
  return entries.map((text) => {
    const fix = 'write /absolute/folder, file:///absolute/folder or s3://bucket/prefix';
    if (!hasScheme(text) && !path.isAbsolute(text)) {
      throw new BatchScorerError('E_CONFIG', `${name}: "${text}" is not an absolute path: ${fix}`);
    }
    let loc: Location;
    try {
      loc = parseLocation(text);
    } catch (err) {
      throw new BatchScorerError('E_CONFIG', `${name}: ${errorMessage(err)}`, { cause: err });
    }
    if (inputKind(loc) === 'glob') throw new BatchScorerError('E_CONFIG', `${name}: "${text}" is a glob: ${fix}`);
    return loc;
  });
}

/**
 * A service base URL setting, checked as `--service` is; the deployment's own when unset. The
 * message does not quote it: a URL refused for carrying credentials would show them.
 */
function serviceSetting(text: string | undefined, name: string): string {
  const parsed = runOptionsSchema.shape.service.safeParse(text);
  if (!parsed.success) throw new BatchScorerError('E_CONFIG', `${name} ${restate(parsed.error.issues[0])}`);
  return parsed.data;
}

/**
 * MODEL_SERVICE_TOKEN for the origin of the deployment's own service, and SERVICE_TOKENS
 * (`<origin>=<token>`, split at the first `=`) for the others SERVICE_URLS allows. Messages name
 * an entry by its number and origin, never by its text: it holds a secret.
 */
function serviceTokensFromEnv(env: NodeJS.ProcessEnv, home: string, policy: DeploymentPolicy): ServiceTokens {
  const homeOrigin = new URL(home).origin;
  const tokens = new Map<string, string>();
  if (env.MODEL_SERVICE_TOKEN) tokens.set(homeOrigin, env.MODEL_SERVICE_TOKEN);
  const allowed = new Set([homeOrigin, ...(policy.serviceUrls ?? []).map((url) => new URL(url).origin)]);
  for (const [i, entry] of (listSetting(env, 'SERVICE_TOKENS') ?? []).entries()) {
    const which = `SERVICE_TOKENS entry ${i + 1}`;
    const eq = entry.indexOf('=');
    const origin = eq > 0 ? originOf(entry.slice(0, eq)) : undefined;
    const token = entry.slice(eq + 1);
    if (origin === undefined || token === '') {
      throw new BatchScorerError(
        'E_CONFIG',
        `${which} is not <origin>=<token>: write e.g. https://models.example:8443=<token> (scheme, host and port, no path)`,
      );
    }
    if (!allowed.has(origin)) {
      throw new BatchScorerError(
        'E_CONFIG',
        `${which} names ${origin}, which is neither the origin of MODEL_SERVICE_URL nor that of a SERVICE_URLS entry: add the service to SERVICE_URLS`,
      );
    }
    if (tokens.has(origin)) {
      const first = origin === homeOrigin && env.MODEL_SERVICE_TOKEN ? 'MODEL_SERVICE_TOKEN' : 'an earlier entry';
      throw new BatchScorerError('E_CONFIG', `${which} names ${origin}, which ${first} gives a token already: keep one`);
    }
    tokens.set(origin, token);
  }
  return tokens;
}

/** The origin an http(s) URL without path, query or credentials names, or undefined for any other text. */
function originOf(text: string): string | undefined {
  try {
    const u = new URL(text);
    const bare = u.pathname === '/' && u.search === '' && u.hash === '' && u.username === '' && u.password === '';
    return bare && (u.protocol === 'http:' || u.protocol === 'https:') ? u.origin : undefined;
  } catch {
    return undefined;
  }
}

/** Whether a text is a TCP port number a server may listen on (1 to 65535). */
export function isTcpPort(value: string): boolean {
  return /^\d+$/.test(value) && Number(value) >= 1 && Number(value) <= 65535;
}

function portFromEnv(value: string | undefined): number {
  if (value === undefined || value === '') return PROCESS_DEFAULTS.servePort;
  if (!isTcpPort(value)) {
    throw new BatchScorerError('E_CONFIG', `PORT must be a TCP port number from 1 to 65535, got "${value}"`);
  }
  return Number(value);
}

function readConfigFiles(dir: string): ConfigFile {
  let names: string[];
  try {
    names = readdirSync(dir)
      .filter((n) => /\.ya?ml$/.test(n))
      .sort();
  } catch {
    return {};
  }
  const merged: Record<string, Record<string, unknown>> = {};
  // Loaded where there is a file to parse: most installations have none, and every command would
  // otherwise load the parser's ~70 modules at start-up (reading settings is synchronous).
  const parseYaml = names.length > 0 ? (createRequire(import.meta.url)('yaml') as typeof import('yaml')).parse : undefined;
  for (const name of names) {
    const path = join(dir, name);
    let doc: unknown;
    try {
      doc = parseYaml!(readFileSync(path, 'utf8')) ?? {};
    } catch (err) {
      throw new BatchScorerError('E_CONFIG', `${path}: not valid YAML: ${(err as Error).message}`);
    }
    const parsed = configFileSchema.safeParse(doc);
    if (!parsed.success) throw new BatchScorerError('E_CONFIG', `${path}: ${formatIssues(parsed.error)}`);
    for (const [section, values] of Object.entries(parsed.data)) merged[section] = { ...merged[section], ...values };
  }
  return merged;
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
