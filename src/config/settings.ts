import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { BatchScorerError } from '../errors.js';
import { redisUrlSchema } from '../queue/redis-target.js';
import type { S3Settings } from '../storage/s3-settings.js';
import { s3SettingsFromEnv } from '../storage/s3-settings.js';
import { formatIssues, runOptionsSchema, type RunOptionsInput } from './run-options.js';

/**
 * `config/*.yaml`: defaults for this installation, below flags and environment. Secrets
 * (tokens, passwords) are read from the environment only, never from these files.
 */
const configFileSchema = z
  .object({
    /** Defaults for run options (see run-options.ts), e.g. `{ concurrency: 8, batchSize: 500 }`. */
    run: runOptionsSchema.partial().strict().optional(),
    /** Redis for queue mode: `url` as REDIS_URL takes it (one node, or `redis-cluster://host1:port1,host2:port2`). */
    redis: z.object({ url: redisUrlSchema.optional(), prefix: z.string().optional() }).strict().optional(),
    s3: z.object({ endpoint: z.string().optional(), region: z.string().optional(), forcePathStyle: z.boolean().optional() }).strict().optional(),
    log: z
      .object({ level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).optional() })
      .strict()
      .optional(),
  })
  .strict();

type ConfigFile = z.output<typeof configFileSchema>;

/** The settings of a process, resolved once at start. */
export interface Settings {
  /** Defaults for run options: config files, then MODEL_SERVICE_URL. Flags override them. */
  runDefaults: RunOptionsInput;
  /** MODEL_SERVICE_TOKEN: sent as a bearer token, never logged. */
  serviceToken?: string;
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
  /** PORT: where `serve` listens unless `--port` says otherwise (8080). */
  port: number;
  /** JOBS_DIR: the folder of `jobs/*.yaml` pipeline declarations (./jobs). */
  jobsDir: string;
}

/** Reads `config/*.yaml` (in name order, later files win) and the environment; names the file and key on error. */
export function loadSettings(env: NodeJS.ProcessEnv = process.env, configDir = env.CONFIG_DIR ?? 'config'): Settings {
  const file = readConfigFiles(configDir);
  const s3 = { ...file.s3, ...definedOnly(s3SettingsFromEnv(env)) };
  return {
    runDefaults: { ...file.run, ...(env.MODEL_SERVICE_URL ? { service: env.MODEL_SERVICE_URL } : {}) },
    serviceToken: env.MODEL_SERVICE_TOKEN || undefined,
    redisUrl: env.REDIS_URL ?? file.redis?.url ?? 'redis://127.0.0.1:6379',
    queuePrefix: env.QUEUE_PREFIX ?? file.redis?.prefix ?? '{batch-scorer}',
    s3,
    logLevel: env.LOG_LEVEL ?? file.log?.level ?? 'info',
    apiToken: secretFromEnv(env, 'API_TOKEN'),
    dashboard: dashboardFromEnv(env),
    port: portFromEnv(env.PORT),
    jobsDir: env.JOBS_DIR || 'jobs',
  };
}

/**
 * The shortest API_TOKEN or DASHBOARD_PASSWORD taken: a shorter one falls to guessing, however
 * slowly failed attempts are let through.
 */
export const MIN_SECRET_LENGTH = 16;

/** A secret setting, refused when set but shorter than MIN_SECRET_LENGTH (its length is said, never its value). */
function secretFromEnv(env: NodeJS.ProcessEnv, name: 'API_TOKEN' | 'DASHBOARD_PASSWORD'): string | undefined {
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

/** Whether a text is a TCP port number a server may listen on (1 to 65535). */
export function isTcpPort(value: string): boolean {
  return /^\d+$/.test(value) && Number(value) >= 1 && Number(value) <= 65535;
}

function portFromEnv(value: string | undefined): number {
  if (value === undefined || value === '') return 8080;
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
  for (const name of names) {
    const path = join(dir, name);
    let doc: unknown;
    try {
      doc = parseYaml(readFileSync(path, 'utf8')) ?? {};
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
