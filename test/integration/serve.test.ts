import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { fetchFrom } from '../helpers/fetch-from.js';
import { freePort, useQueueFixture, waitFor } from '../helpers/queue.js';
import { byOutcome, parseSamples, sample } from '../helpers/metrics.js';
import { score, tempDir, writeRentals, writeShiftedRentals } from '../helpers/scoring.js';
import { useServeProcesses } from '../helpers/serve.js';
import { startWebhookReceiver } from '../helpers/webhook-receiver.js';

const TOKEN = 'tok-3f9a1c7e5b2d4086';
const USER = 'operator';
const PASSWORD = 'pw-8e1d6b0a9c4f2357';
const CREDENTIALS = { API_TOKEN: TOKEN, DASHBOARD_USER: USER, DASHBOARD_PASSWORD: PASSWORD };
const bearer = { authorization: `Bearer ${TOKEN}` };
const basic = { authorization: `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}` };
const MODEL = 'mindsdb/home_rentals_model';
const HOOK_SECRET = 'whsec-serve-5b8e2d';

let tmp: Awaited<ReturnType<typeof tempDir>>;
let input: string;
beforeAll(async () => {
  tmp = await tempDir();
  input = join(tmp.dir, 'rentals.csv');
  await writeRentals(input, 3_000);
});
afterAll(() => tmp.cleanup());

const f = useQueueFixture();
const serve = useServeProcesses();

/** A request, from 127.0.0.1 unless `from` names another loopback address (a client of its own to the throttle of refused credentials). */
async function call(url: string, init: { method?: string; headers?: Record<string, string>; body?: unknown; from?: string } = {}) {
  const request = {
    method: init.method ?? 'GET',
    redirect: 'manual' as const,
    headers: { ...(init.body === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers },
    body: init.body === undefined ? undefined : typeof init.body === 'string' ? init.body : JSON.stringify(init.body),
  };
  const { status, headers, text } = init.from
    ? await fetchFrom(init.from, url, request)
    : await fetch(url, request).then(async (res) => ({ status: res.status, headers: res.headers, text: await res.text() }));
  const json = headers.get('content-type')?.startsWith('application/json') ? (JSON.parse(text) as Record<string, unknown>) : undefined;
  return { status, headers, text, json };
}

describe('serve', () => {
  it('takes a run over HTTP that real workers complete, and reports it with its manifest', async () => {
    await f.setup();
    f.worker();
    const s = await serve({ ...f.env(), ...CREDENTIALS });
    const out = join(tmp.dir, 'out');
    const submission = { input, model: MODEL, out, options: { runId: 'over-http', segmentRows: 1_000 } };
    const posted = await call(`${s.url}/runs`, { method: 'POST', headers: { ...bearer, 'x-request-id': 'client-id-1' }, body: submission });
    expect(posted.status).toBe(201);
    expect(posted.json).toEqual({ runId: 'over-http', created: true });
    expect(posted.headers.get('x-request-id')).toBe('client-id-1');
    expect(posted.headers.get('content-type')).toMatch(/^application\/json/);
    const again = await call(`${s.url}/runs`, { method: 'POST', headers: bearer, body: submission });
    expect([again.status, again.json]).toEqual([200, { runId: 'over-http', created: false }]);

    const done = await waitFor(
      'the run to finish',
      async () => {
        const r = await call(`${s.url}/runs/over-http`, { headers: bearer });
        return r.json?.state === 'succeeded' || r.json?.state === 'failed' ? r.json : undefined;
      },
      30_000,
    );
    expect(done).toMatchObject({
      runId: 'over-http',
      state: 'succeeded',
      progress: { rowsDone: 3_000, rowsTotal: 3_000, segmentsDone: 3, segmentsTotal: 3 },
      folder: join(out, 'over-http'),
      manifest: { runId: 'over-http', state: 'succeeded', counts: { rowsIn: 3_000, rowsScored: 3_000, rowsQuarantined: 0, segments: 3 } },
    });
    expect(done.outputs).toContain(join(out, 'over-http', 'predictions.csv'));

    // serve's /metrics counts the run's rows exactly as its manifest does, once its outcome event is in.
    const manifestCounts = (done.manifest as { counts: { rowsScored: number; rowsQuarantined: number } }).counts;
    const scraped = await waitFor(
      'serve to count the finished run',
      async () => {
        const m = parseSamples((await call(`${s.url}/metrics`, { headers: bearer })).text);
        return m.get('batch_scorer_runs_total{outcome="succeeded"}') === 1 ? m : undefined;
      },
      10_000,
    );
    expect(byOutcome(scraped, 'batch_scorer_run_rows_total')).toEqual({ scored: manifestCounts.rowsScored, quarantined: manifestCounts.rowsQuarantined });
    expect(sample(scraped, 'batch_scorer_queue_jobs{queue="runs",state="completed"}')).toBe(1);

    const completed = await call(`${s.url}/runs?state=completed`, { headers: bearer });
    expect((completed.json?.runs as { runId: string }[]).map((r) => r.runId)).toEqual(['over-http']);
    const failed = await call(`${s.url}/runs?state=failed&limit=5`, { headers: bearer });
    expect(failed.json).toEqual({ runs: [] });
    const missing = await call(`${s.url}/runs/no-such-run`, { headers: bearer });
    expect([missing.status, missing.json?.error]).toEqual([404, 'E_RUN_NOT_FOUND']);
  });

  // Scores 30,000 rows twice over a slow simulator (about 40 s on two busy cores): room beyond the 60 s default.
  it('cancels a long run over HTTP within seconds (no _SUCCESS, manifest cancelled) and resumes it byte-identical to an uninterrupted run', async () => {
    const ROWS = 30_000;
    const long = join(tmp.dir, 'long.csv');
    await writeRentals(long, ROWS);
    await f.setup({ latencyMs: 50 });
    f.worker(['--max-in-flight', '2']);
    f.worker(['--max-in-flight', '2']);
    const s = await serve({ ...f.env(), ...CREDENTIALS });
    const out = join(tmp.dir, 'cancelled');
    const options = { runId: 'to-cancel', segmentRows: 2_000, batchSize: 50 };
    expect((await call(`${s.url}/runs`, { method: 'POST', headers: bearer, body: { input: long, model: MODEL, out, options } })).status).toBe(201);
    const status = async () =>
      (await call(`${s.url}/runs/to-cancel`, { headers: bearer })).json as { state: string; finishedAt?: string; progress?: { segmentsDone: number } };
    await waitFor('two segments done', async () => ((await status()).progress?.segmentsDone ?? 0) >= 2, 30_000);

    const cancelled = await call(`${s.url}/runs/to-cancel`, { method: 'DELETE', headers: bearer });
    // Its segments were being scored: until they have stopped, it is cancelling.
    expect([cancelled.status, cancelled.json?.state]).toEqual([200, 'cancelling']);
    // Within seconds its job has ended, and no predict request is sent any more.
    const ended = await waitFor('the cancelled run to end', async () => ((await status()).finishedAt ? status() : undefined), 5_000);
    expect(ended.state).toBe('cancelled');
    const requests = f.sim.stats.predictRequests;
    await new Promise((resolve) => setTimeout(resolve, 1_000)); // a window in which a running segment would send ~40 requests
    expect(f.sim.stats.predictRequests).toBe(requests);
    const folder = join(out, 'to-cancel');
    expect(existsSync(join(folder, '_SUCCESS'))).toBe(false);
    expect(JSON.parse(await readFile(join(folder, 'manifest.json'), 'utf8'))).toMatchObject({ state: 'cancelled', error: { code: 'E_CANCELLED' } });
    // A cancelled run cannot be cancelled into another state; an unknown one is 404.
    expect((await call(`${s.url}/runs/nope`, { method: 'DELETE', headers: bearer })).status).toBe(404);
    expect((await call(`${s.url}/runs?state=cancelled`, { headers: bearer })).json?.runs).toMatchObject([{ runId: 'to-cancel' }]);

    const resumed = await call(`${s.url}/runs/to-cancel/resume`, { method: 'POST', headers: bearer });
    expect([resumed.status, resumed.json]).toEqual([200, { runId: 'to-cancel', resumed: true }]);
    const done = await waitFor('the resumed run to finish', async () => ((await status()).state === 'succeeded' ? status() : undefined), 60_000);
    expect(done.state).toBe('succeeded');
    // Resuming a completed run, or cancelling it, conflicts.
    expect((await call(`${s.url}/runs/to-cancel/resume`, { method: 'POST', headers: bearer })).status).toBe(409);
    expect((await call(`${s.url}/runs/to-cancel`, { method: 'DELETE', headers: bearer })).status).toBe(409);
    const direct = join(tmp.dir, 'uninterrupted');
    await score(long, direct, { service: f.sim.url, ...options, runId: 'direct' });
    expect(await readFile(join(folder, 'predictions.csv'))).toEqual(await readFile(join(direct, 'direct', 'predictions.csv')));
  }, 120_000);

  it('a held run accepted over HTTP says succeeded (accepted) everywhere: status, the API, the list, its page, the metric and a webhook', async () => {
    await f.setup();
    const hook = await startWebhookReceiver(HOOK_SECRET);
    const hooks = { NOTIFY_URLS: hook.url, NOTIFY_SECRET: HOOK_SECRET };
    f.worker([], hooks);
    const s = await serve({ ...f.env(), ...CREDENTIALS, ...hooks });
    const out = join(tmp.dir, 'drifted');
    const shifted = join(tmp.dir, 'shifted.csv');
    await writeShiftedRentals(shifted, 3_000, 3);
    const detail = async (runId: string) => (await call(`${s.url}/runs/${runId}`, { headers: bearer })).json;
    const finished = (runId: string) => waitFor(`run ${runId} to finish`, async () => ((await detail(runId))?.finishedAt ? detail(runId) : undefined), 30_000);
    const submit = async (runId: string, from: string, options: Record<string, unknown> = {}) =>
      expect(
        (await call(`${s.url}/runs`, { method: 'POST', headers: bearer, body: { input: from, model: MODEL, out, options: { runId, ...options } } })).status,
      ).toBe(201);
    await submit('base', input);
    expect(await finished('base')).toMatchObject({ state: 'succeeded' });
    await submit('moved', shifted, { baselineRun: 'base', driftFail: 0.25 });
    expect(await finished('moved')).toMatchObject({
      state: 'held',
      result: { state: 'held', error: { code: 'E_DRIFT' }, drift: { level: 'fail', baseline: 'base' } },
      manifest: { state: 'held', error: { code: 'E_DRIFT' } },
    });
    expect(existsSync(join(out, 'moved', '_SUCCESS'))).toBe(false);
    const held = await waitFor('the held webhook', () => hook.accepted.find((d) => d.body.runId === 'moved'), 30_000);
    expect(held.body).toMatchObject({ state: 'held', events: ['held', 'drift'] });

    const accept = (runId: string, body?: unknown) => call(`${s.url}/runs/${runId}/accept`, { method: 'POST', headers: bearer, body });
    const accepted = await accept('moved', { why: 'new pricing from June' });
    expect(accepted.status).toBe(200);
    expect(accepted.json).toMatchObject({
      runId: 'moved',
      already: false,
      state: 'succeeded',
      accepted: { by: 'api', why: 'new pricing from June', error: { code: 'E_DRIFT' } },
    });
    expect(existsSync(join(out, 'moved', '_SUCCESS'))).toBe(true);
    const manifest = JSON.parse(await readFile(join(out, 'moved', 'manifest.json'), 'utf8')) as Record<string, unknown>;
    expect(manifest).toMatchObject({ state: 'succeeded', accepted: accepted.json?.accepted });
    expect(manifest).not.toHaveProperty('error');
    expect(existsSync(join(out, 'moved', '_work', 'caps.json'))).toBe(false);

    // Every view says the same: succeeded, accepted by api.
    const acceptedBy = { state: 'succeeded', result: { state: 'succeeded', accepted: { by: 'api', why: 'new pricing from June' } } };
    expect(await detail('moved')).toMatchObject({ ...acceptedBy, manifest: { state: 'succeeded' } });
    const listed = (await call(`${s.url}/runs`, { headers: bearer })).json?.runs as { runId: string }[];
    expect(listed.find((r) => r.runId === 'moved')).toMatchObject(acceptedBy);
    expect((await call(`${s.url}/runs?state=succeeded`, { headers: bearer })).json?.runs).toEqual(
      expect.arrayContaining([expect.objectContaining({ runId: 'moved' })]),
    );
    const status = await runCli(['status', 'moved'], f.env());
    expect(status.stdout).toMatch(
      /^moved {2}succeeded {2}3000\/3000 rows {2}.* {2}drift fail \(\w+ PSI \d+\.\d{3} from run base\) {2}accepted by api at \S+: new pricing from June\n$/,
    );
    const page = await call(`${s.url}/ui/runs/moved`, { headers: basic });
    expect(page.text).toContain('<span class="badge badge-succeeded">succeeded</span>');
    expect(page.text).toMatch(/<p class="notice" id="accepted">\s*Accepted by api at <time[^>]*>[^<]*<\/time>: new pricing from June\.\s*<\/p>/);
    expect(page.text).not.toContain('notice error');
    const list = await call(`${s.url}/ui/runs`, { headers: basic });
    expect(list.text).toMatch(/<a href="\/ui\/runs\/moved">moved<\/a><\/td>\s*<td class="state-cell"><span class="badge badge-succeeded">succeeded<\/span>/);
    const metrics = await waitFor('the metric to count the acceptance', async () => {
      const v = parseSamples((await call(`${s.url}/metrics`, { headers: bearer })).text);
      return byOutcome(v, 'batch_scorer_runs_total').succeeded === 2 ? v : undefined;
    });
    expect(byOutcome(metrics, 'batch_scorer_runs_total')).toMatchObject({ succeeded: 2, held: 1, failed: 0 });
    const told = await waitFor('the accepted webhook', () => hook.accepted.find((d) => d.body.runId === 'moved' && d.body.state === 'succeeded'), 30_000);
    expect(told.body).toMatchObject({ event: 'succeeded', result: { state: 'succeeded', accepted: { by: 'api', why: 'new pricing from June' } } });
    expect(told.body.text).toMatch(
      /^batch-scorer: run moved succeeded: 3000 rows scored, 0 quarantined; drift fail .*; accepted by api at \S+: new pricing from June/,
    );

    const again = await accept('moved');
    expect([again.status, again.json]).toEqual([200, { ...accepted.json, already: true }]);
    const conflict = await accept('base');
    expect([conflict.status, conflict.json?.error]).toEqual([409, 'E_RUN_CONFLICT']);
    const missing = await accept('no-such-run');
    expect([missing.status, missing.json?.error]).toEqual([404, 'E_RUN_NOT_FOUND']);
    await hook.close();
  });

  it('refuses bad requests naming each bad field, and bodies over 64 KiB', async () => {
    await f.setup();
    const s = await serve({ ...f.env(), ...CREDENTIALS });
    const post = (body: unknown) => call(`${s.url}/runs`, { method: 'POST', headers: bearer, body });
    const fields = (r: Awaited<ReturnType<typeof call>>) => (r.json?.issues as { field: string }[]).map((i) => i.field).sort();

    const bad = await post({ input, model: 'no-slash', out: tmp.dir, colour: 'red', options: { batchSize: 0, bogus: 1, concurrency: 'lots' } });
    expect(bad.status).toBe(400);
    expect(bad.json?.error).toBe('E_USAGE');
    expect(fields(bad)).toEqual(['colour', 'model', 'options.batchSize', 'options.bogus', 'options.concurrency']);
    const issues = bad.json?.issues as { field: string; message: string }[];
    expect(issues.find((i) => i.field === 'options.batchSize')?.message).toBe('must be at least 1');
    expect(issues.find((i) => i.field === 'model')?.message).toMatch(/expected project\/model/);
    expect(bad.json?.message).toMatch(/options\.batchSize: must be at least 1/);

    const missing = await post({ model: MODEL });
    expect(fields(missing)).toEqual(['input', 'out']);
    // A relative path would be serve's and the workers' working folder's, not the client's: refused, dry run or not.
    for (const dryRun of [false, true]) {
      const relative = await post({ input: 'rentals.csv', model: MODEL, out: 'runs/', dryRun });
      expect([relative.status, relative.json?.error, fields(relative)]).toEqual([400, 'E_USAGE', ['input', 'out']]);
      expect(relative.json?.message).toMatch(
        /^input: 'rentals\.csv' is a relative path, .*: an absolute path \(or file:\/\/\/absolute\/path\) or an s3:\/\/ URL is needed; out: 'runs\/' is a relative path/,
      );
    }
    expect(fields(await post({ input, model: MODEL, out: './runs' }))).toEqual(['out']);
    // A submitter names no webhook targets: where the deployment sends requests is not theirs to choose.
    const hooks = { urls: ['http://169.254.169.254/latest'] };
    expect(fields(await post({ input, model: MODEL, out: tmp.dir, notify: hooks, options: { notify: hooks } }))).toEqual(['notify', 'options.notify']);
    const notJson = await post('{"input": ');
    expect([notJson.status, notJson.json?.error]).toEqual([400, 'E_USAGE']);
    const huge = await post({ input, model: MODEL, out: tmp.dir, options: { params: { pad: 'x'.repeat(100 * 1024) } } });
    expect([huge.status, huge.json?.error]).toEqual([413, 'E_USAGE']);
    const badQuery = await call(`${s.url}/runs?state=sleeping&limit=0`, { headers: bearer });
    expect([badQuery.status, fields(badQuery)]).toEqual([400, ['limit', 'state']]);
    const badId = await call(`${s.url}/runs/..%2Fetc`, { headers: bearer });
    expect([badId.status, fields(badId)]).toEqual([400, ['id']]);
    // A resume's body holds its caps and nothing else.
    const badCaps = await call(`${s.url}/runs/some-run/resume`, { method: 'POST', headers: bearer, body: { maxRequests: 0, deadline: 'soon', batchSize: 5 } });
    expect([badCaps.status, fields(badCaps)]).toEqual([400, ['batchSize', 'deadline', 'maxRequests']]);
    expect((badCaps.json?.issues as { field: string; message: string }[]).find((i) => i.field === 'deadline')?.message).toMatch(
      /^must be a duration such as 90s/,
    );
  });

  it('asks for credentials everywhere but health, takes basic auth on /ui only, and never logs secrets', async () => {
    await f.setup();
    const s = await serve({ ...f.env(), ...CREDENTIALS, LOG_LEVEL: 'debug' });
    const routes: [string, string][] = [
      ['GET', '/runs'],
      ['POST', '/runs'],
      ['GET', '/runs/some-run'],
      ['DELETE', '/runs/some-run'],
      ['POST', '/runs/some-run/resume'],
      ['POST', '/runs/some-run/accept'],
      ['POST', '/events/s3'],
      ['GET', '/openapi.json'],
      ['GET', '/metrics'],
      ['GET', '/ui'],
      ['GET', '/ui/queues/'],
      ['GET', '/ui/queues/api/queues'],
      ['GET', '/ui/runs'],
      ['GET', '/ui/runs/some-run'],
      ['GET', '/ui/runs/some-run/files/predictions.csv'],
      ['GET', '/ui/assets/chart.js'],
      ['GET', '/no-such-route'],
      ['GET', '/ui/no-such-page'],
    ];
    for (const [i, [method, path]] of routes.entries()) {
      const body = method === 'POST' ? {} : undefined;
      const refused = await call(`${s.url}${path}`, { method, body });
      expect([method, path, refused.status, refused.json?.error]).toEqual([method, path, 401, 'E_UNAUTHORIZED']);
      // Each route's wrong token from an address of its own: more than ten from one would be throttled (429).
      const wrong = await call(`${s.url}${path}`, { method, body, headers: { authorization: `Bearer ${TOKEN}x` }, from: `127.0.1.${i + 1}` });
      expect([method, path, wrong.status]).toEqual([method, path, 401]);
    }
    const readable = ['/runs', '/openapi.json', '/metrics', '/ui/queues/', '/ui/queues/api/queues'];
    for (const path of readable) expect([path, (await call(`${s.url}${path}`, { headers: bearer })).status]).toEqual([path, 200]);
    // A token in a query string stays out of the log too.
    expect((await call(`${s.url}/openapi.json?token=${TOKEN}`, { headers: bearer })).status).toBe(200);
    for (const path of ['/ui/queues/', '/ui/queues/api/queues', '/ui/runs', '/ui/assets/chart.js'])
      expect([path, (await call(`${s.url}${path}`, { headers: basic })).status]).toEqual([path, 200]);
    const home = await call(`${s.url}/ui`, { headers: basic });
    expect([home.status, home.headers.get('location')]).toEqual([302, '/ui/runs']);
    expect((await call(`${s.url}/runs`, { headers: basic })).status).toBe(401);
    expect((await call(`${s.url}/metrics`, { headers: basic })).status).toBe(401);
    // With credentials, an unknown path is what it is.
    expect((await call(`${s.url}/no-such-route`, { headers: bearer })).status).toBe(404);
    expect((await call(`${s.url}/ui/no-such-page`, { headers: basic })).status).toBe(404);
    for (const path of ['/healthz', '/readyz']) expect([path, (await call(`${s.url}${path}`)).status]).toEqual([path, 200]);

    // The dashboard is read-only unless serve is told otherwise, and refuses changes itself.
    const board = await call(`${s.url}/ui/queues/api/queues`, { headers: bearer });
    expect((board.json?.queues as { name: string; readOnlyMode: boolean }[]).map((q) => [q.name, q.readOnlyMode]).sort()).toEqual([
      ['runs', true],
      ['schedules', true],
      ['segments', true],
    ]);
    expect((await call(`${s.url}/ui/queues/api/queues/runs/pause`, { method: 'PUT', headers: bearer })).status).toBeGreaterThanOrEqual(400);

    const openApi = await call(`${s.url}/openapi.json`, { headers: bearer });
    expect(openApi.json).toMatchObject({
      openapi: '3.1.0',
      paths: { '/runs': { post: {} }, '/runs/{id}': { delete: {} }, '/runs/{id}/accept': { post: {} }, '/events/s3': { post: {} } },
    });

    expect(await s.stop()).toBe(0);
    const log = s.stderr();
    expect(log).toMatch(/"msg":"server stopped"/);
    expect(log).toMatch(/"url":"\/openapi\.json\?…"/);
    for (const secret of [TOKEN, PASSWORD, basic.authorization.split(' ')[1]]) expect(log).not.toContain(secret);
  });

  it('answers /readyz 503 at once, and the API 503, while Redis does not answer', async () => {
    await f.setup();
    const closed = `redis://127.0.0.1:${await freePort()}`;
    const s = await serve({ ...f.env(), ...CREDENTIALS, REDIS_URL: closed });
    const started = Date.now();
    const ready = await call(`${s.url}/readyz`);
    expect([ready.status, ready.json]).toEqual([503, { status: 'unavailable' }]);
    expect(Date.now() - started).toBeLessThan(2_500);
    expect((await call(`${s.url}/healthz`)).status).toBe(200);
    const post = await call(`${s.url}/runs`, { method: 'POST', headers: bearer, body: { input, model: MODEL, out: tmp.dir } });
    expect([post.status, post.json?.error]).toEqual([503, 'E_REDIS_UNAVAILABLE']);
    expect(post.json?.message).toContain('check REDIS_URL');
    expect(await s.stop()).toBe(0);
  });

  it('refuses to listen beyond loopback without credentials unless --insecure', async () => {
    const none = { API_TOKEN: '', DASHBOARD_USER: '', DASHBOARD_PASSWORD: '' };
    const refused = await runCli(['serve', '--host', '0.0.0.0', '--port', String(await freePort())], none);
    expect(refused.code).toBe(2);
    for (const word of ['API_TOKEN', 'DASHBOARD_USER/DASHBOARD_PASSWORD', '--insecure']) expect(refused.stderr).toContain(word);
    const half = await runCli(['serve', '--port', String(await freePort())], { ...none, DASHBOARD_USER: 'someone' });
    expect(half.code).toBe(2);
    expect(half.stderr).toContain('DASHBOARD_PASSWORD is not set');
  });
});
