import { afterEach, describe, expect, it } from 'vitest';
import { answerBounds } from '../../src/app/service-clients.js';
import { DEFAULT_LIMITS } from '../../src/config/limits.js';
import { ServiceClient } from '../../src/service/client.js';
import { DEFAULT_RETRY_POLICY } from '../../src/service/retry-policy.js';
import { ServiceError } from '../../src/service/service-error.js';
import type { Simulator } from '../../src/simulator/server.js';
import { filler, startHostileModel } from '../helpers/hostile-model.js';
import { rejection } from '../helpers/rejection.js';
import { startSimulator } from '../helpers/scoring.js';

const answers = answerBounds(DEFAULT_LIMITS);
const model = { project: 'mindsdb', model: 'home_rentals_model' };
const row = JSON.stringify({ sqft: 100, location: 'good', __mindsdb_row_id: 0 });
const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((o) => o.close()));
});

async function setup(
  simOptions: Parameters<typeof startSimulator>[0],
  clientOptions: Partial<ConstructorParameters<typeof ServiceClient>[0]> & { retries?: number } = {},
) {
  const sim: Simulator = await startSimulator(simOptions);
  const { retries = 0, ...rest } = clientOptions;
  const client = new ServiceClient({
    baseUrl: sim.url,
    timeoutMs: 5_000,
    answers,
    retry: { ...DEFAULT_RETRY_POLICY, retries, minDelayMs: 1, maxDelayMs: 5 },
    ...rest,
  });
  opened.push(client, sim);
  return { sim, client };
}

const rejectionOf = (p: Promise<unknown>) => rejection(p, ServiceError);

describe('ServiceClient against the simulator', () => {
  it('describes with a JSON body on GET, under a base path prefix', async () => {
    const { client } = await setup({ basePath: '/v1' });
    const meta = (await client.describe(model, {})) as Record<string, unknown>[];
    expect(meta[0]).toMatchObject({ NAME: 'home_rentals_model', VERSION: 2, STATUS: 'complete' });
    const info = (await client.describe(model, { attribute: 'info' })) as Record<string, unknown>[];
    expect(info[0].outputs).toEqual(['rental_price']);
  });

  it('predicts in both envelopes and passes params', async () => {
    const data = await setup({ envelope: 'data' });
    const [a] = await data.client.predict(model, row, { envelope: 'data', params: { partition_size: 10 } });
    expect(a).toMatchObject({ __mindsdb_row_id: 0, sqft: 100 });
    const array = await setup({ envelope: 'array' });
    const [b] = await array.client.predict(model, row, { envelope: 'array' });
    expect(b.rental_price).toBe(a.rental_price);
  });

  it("classifies the wrong envelope, with the server's title and a hint", async () => {
    const { client } = await setup({ envelope: 'array' });
    const err = await rejectionOf(client.predict(model, row, { envelope: 'data' }));
    expect(err).toMatchObject({ kind: 'wrong-envelope', code: 'E_WRONG_ENVELOPE', status: 500, exitCode: 2 });
    expect(err.message).toMatch(/KeyError.*--envelope array/);
  });

  it('retries 429s until it succeeds, never sooner than Retry-After', async () => {
    const { client, sim } = await setup({ rateLimitRate: 0.5, retryAfterSeconds: 0, seed: 3 }, { retries: 20 });
    const delays: number[] = [];
    for (let i = 0; i < 10; i++) await client.predict(model, row, { envelope: 'data', onRetry: (r) => delays.push(r.delayMs) });
    expect(sim.stats.faults.rateLimited).toBeGreaterThan(0);
    expect(delays).toHaveLength(sim.stats.faults.rateLimited);
    // Retry-After: 0 is a floor; the backoff (min 1 ms here) still applies.
    for (const d of delays) expect(d).toBeGreaterThanOrEqual(1);
  });

  it('uses the Retry-After seconds the server sends', async () => {
    const { client } = await setup({ rateLimitRate: 1, retryAfterSeconds: 7 });
    const err = await rejectionOf(client.predict(model, row, { envelope: 'data' }));
    expect(err).toMatchObject({ kind: 'unavailable', status: 429, retryAfterMs: 7_000 });
  });

  it('gives up on a request that never answers after --timeout, and no longer calls it retriable', async () => {
    const { client } = await setup({ hangRate: 1 }, { timeoutMs: 150 });
    const err = await rejectionOf(client.predict(model, row, { envelope: 'data' }));
    expect(err).toMatchObject({ kind: 'unavailable', code: 'E_SERVICE_UNAVAILABLE', retriable: true });
    expect(err.message).toMatch(/no answer within 150 ms .*gave up after 1 attempt/);
    expect(err.message).not.toMatch(/retriable/i);
  });

  it('treats connection resets and proxy HTML pages as passing faults, tried until the retries run out', async () => {
    const reset = await setup({ resetRate: 1 }, { retries: 2 });
    const resetErr = await rejectionOf(reset.client.predict(model, row, { envelope: 'data' }));
    expect(resetErr).toMatchObject({ kind: 'unavailable', code: 'E_SERVICE_UNAVAILABLE' });
    expect(resetErr.message).toMatch(/gave up after 3 attempts/);
    expect(reset.sim.stats.predictRequests).toBe(3);
    const gateway = await setup({ gatewayErrorRate: 1 });
    const err = await rejectionOf(gateway.client.predict(model, row, { envelope: 'data' }));
    expect(err).toMatchObject({ kind: 'unavailable', status: 503 });
  });

  it('fails at once, naming the address, when nothing answers at first contact; retries later', async () => {
    const sim = await startSimulator({});
    const url = sim.url;
    await sim.close();
    const client = new ServiceClient({ baseUrl: url, timeoutMs: 2_000, answers, retry: { ...DEFAULT_RETRY_POLICY, retries: 2, minDelayMs: 1, maxDelayMs: 5 } });
    opened.push(client);
    const first = await rejectionOf(client.describe(model, {}, { firstContact: true }));
    expect(first).toMatchObject({ kind: 'unreachable', code: 'E_SERVICE_UNREACHABLE', exitCode: 2 });
    expect(first.message).toContain(`nothing answers at ${url}`);
    expect(first.message).toContain('check --service');
    const later = await rejectionOf(client.predict(model, row, { envelope: 'data' }));
    expect(later).toMatchObject({ kind: 'unavailable', code: 'E_SERVICE_UNAVAILABLE' });
    expect(later.message).toMatch(/ECONNREFUSED.*gave up after 3 attempts/);
  });

  it("says a URL does not look like the service when its 404 is not the service's own", async () => {
    const { client, sim } = await setup({ basePath: '/v1' });
    const wrong = new ServiceClient({ baseUrl: sim.url.replace(/\/v1$/, ''), timeoutMs: 2_000, answers });
    opened.push(wrong);
    const err = await rejectionOf(wrong.describe(model, {}));
    expect(err).toMatchObject({ kind: 'wrong-url', code: 'E_SERVICE_URL', status: 404, exitCode: 2 });
    expect(err.message).toMatch(/does not look like a Model Query Service: check --service and its path prefix/);
    const unknown = await rejectionOf(client.describe({ project: 'mindsdb', model: 'nope' }, {}));
    expect(unknown).toMatchObject({ kind: 'not-found', code: 'E_MODEL_NOT_FOUND' });
  });

  it('retries an answer its check refuses, then reports it with the count of attempts', async () => {
    const { client, sim } = await setup({}, { retries: 2 });
    const refuse = () => {
      throw new ServiceError('bad-answer', 'one row missing', { overload: true });
    };
    const err = await rejectionOf(client.predict(model, row, { envelope: 'data', check: refuse }));
    expect(err).toMatchObject({ kind: 'bad-answer', code: 'E_ALIGNMENT', retriable: false });
    expect(err.message).toBe('one row missing (on each of 3 attempts)');
    expect(sim.stats.predictRequests).toBe(3);
  });

  it('retries an engine failure once, then reports it as bad rows', async () => {
    const { client, sim } = await setup({}, { retries: 5 });
    const bad = JSON.stringify({ location: '__engine_error__' });
    const err = await rejectionOf(client.predict(model, bad, { envelope: 'data' }));
    expect(err).toMatchObject({ kind: 'bad-rows', title: 'MLEngineException' });
    expect(sim.stats.predictRequests).toBe(2);
  });

  it('reads an error answer no further than its allowance, and tells it by its status alone', async () => {
    // A proxy's 503 page of 1.5 GB.
    const hostile = await startHostileModel({ predict: () => filler(1.5e9), status: 503 });
    const client = new ServiceClient({
      baseUrl: hostile.url,
      timeoutMs: 5_000,
      answers,
      retry: { ...DEFAULT_RETRY_POLICY, retries: 1, minDelayMs: 1, maxDelayMs: 5 },
    });
    opened.push(client, hostile);
    const err = await rejectionOf(client.predict(model, row, { envelope: 'data' }));
    expect(err).toMatchObject({ kind: 'unavailable', status: 503 });
    expect(hostile.predicts).toBe(2);
    // Each attempt was read to its allowance (the floor, 1 MiB), then its connection closed.
    expect(hostile.bytesWritten()).toBeLessThan(20 * 1024 * 1024);
  });

  it('tells an error answer nested too deep to read by its status alone', async () => {
    const deep = `{"title":${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
    const hostile = await startHostileModel({ predict: () => deep, status: 503 });
    const client = new ServiceClient({ baseUrl: hostile.url, timeoutMs: 5_000, answers, retry: { ...DEFAULT_RETRY_POLICY, retries: 0 } });
    opened.push(client, hostile);
    const err = await rejectionOf(client.predict(model, row, { envelope: 'data' }));
    expect(err).toMatchObject({ kind: 'unavailable', status: 503, title: undefined });
  });

  it('sends the bearer token, and says what to do without one', async () => {
    const sim = await startSimulator({ token: 's3cret-token' });
    opened.push(sim);
    const without = new ServiceClient({ baseUrl: sim.url, timeoutMs: 2_000, answers });
    const withToken = new ServiceClient({ baseUrl: sim.url, timeoutMs: 2_000, answers, token: 's3cret-token' });
    opened.push(without, withToken);
    const err = await rejectionOf(without.describe(model, {}));
    expect(err).toMatchObject({ kind: 'unauthorized', status: 401 });
    expect(err.message).toMatch(/MODEL_SERVICE_TOKEN/);
    expect(await withToken.describe(model, {})).toBeInstanceOf(Array);
    expect(err.message).not.toContain('s3cret-token');
  });

  it('encodes names as path segments', async () => {
    const { client } = await setup({});
    const err = await rejectionOf(client.describe({ project: 'a/b c', model: 'x?y' }, {}));
    expect(err).toMatchObject({ kind: 'not-found', status: 404 });
    expect(err.detail).toBe('Project name a/b c does not exist');
  });

  it('close() is safe to call twice', async () => {
    const { client } = await setup({});
    await client.close();
    await client.close();
  });
});
