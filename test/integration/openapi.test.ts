import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { useQueueFixture, waitFor } from '../helpers/queue.js';
import { tempDir, writeRentals, writeShiftedRentals } from '../helpers/scoring.js';
import { useServeProcesses } from '../helpers/serve.js';

const TOKEN = 'tok-openapi-3b7d1e9f52c4';
const MODEL = 'mindsdb/home_rentals_model';
const root = join(import.meta.dirname, '..', '..');

interface Operation {
  operationId: string;
  responses: Record<string, { content?: Record<string, { schema: object }> }>;
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
  components: Record<string, unknown>;
}

let tmp: Awaited<ReturnType<typeof tempDir>>;
beforeAll(async () => (tmp = await tempDir()));
afterAll(() => tmp.cleanup());

const f = useQueueFixture();
const serve = useServeProcesses();

/** `serve` with the token, its run folders and inputs under tmp (OUTPUT_ROOTS, INPUT_ROOTS), and its document. */
async function serveWithDocument() {
  const s = await serve({ ...f.env(), API_TOKEN: TOKEN, INPUT_ROOTS: tmp.dir, OUTPUT_ROOTS: join(tmp.dir, 'out') });
  const doc = (await (await fetch(`${s.url}/openapi.json`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as Document;
  return { s, doc };
}

describe('the served OpenAPI document', () => {
  it('is the one in docs/reference, and lints clean with redocly’s recommended rules (0 errors, 0 warnings)', async () => {
    await f.setup();
    const { doc } = await serveWithDocument();
    expect(doc).toEqual(JSON.parse(await readFile(join(root, 'docs/reference/openapi.json'), 'utf8')));
    const file = join(tmp.dir, 'served-openapi.json');
    await writeFile(file, JSON.stringify(doc));
    // redocly.yaml at the root is its configuration: the recommended rules, every one of them.
    const { stdout } = await promisify(execFile)(join(root, 'node_modules/.bin/redocly'), ['lint', '--format=json', file], { cwd: root });
    const report = JSON.parse(stdout) as { totals: Record<string, number>; problems: { ruleId: string; message: string }[] };
    expect(report.problems.map((p) => `${p.ruleId}: ${p.message}`)).toEqual([]);
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
  });

  it('lists every status each route answers (fails on an undocumented one), and every answer fits its documented schema', async () => {
    await f.setup();
    const out = join(tmp.dir, 'out');
    const input = join(tmp.dir, 'in.csv');
    await writeRentals(input, 300);
    await writeShiftedRentals(join(tmp.dir, 'shifted.csv'), 300, 3);
    // Runs held by their drift gate, for accept and reject: `score` runs, which serve finds in their folders.
    const score = (file: string, runId: string, ...more: string[]) =>
      runCli(['score', join(tmp.dir, file), '--model', MODEL, '--out', out, '--run-id', runId, ...more], f.env());
    expect((await score('in.csv', 'baseline')).code).toBe(0);
    for (const held of ['held-a', 'held-b']) expect((await score('shifted.csv', held, '--baseline-run', 'baseline', '--drift-fail', '0.25')).code).toBe(1);

    const { s, doc } = await serveWithDocument();
    const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
    const asked = new Set<string>();
    const seen: string[] = [];
    /** Sends a request to an operation, and checks its answer against the document; answers the status and body. */
    const call = async (
      method: string,
      path: string,
      route: string,
      init: { body?: unknown; raw?: string; type?: string; token?: boolean; key?: string } = {},
    ) => {
      const operation = doc.paths[route]?.[method.toLowerCase()];
      expect(operation, `${method} ${route} is documented`).toBeDefined();
      asked.add(`${method} ${route}`);
      const headers: Record<string, string> = {};
      if (init.token !== false) headers.authorization = `Bearer ${TOKEN}`;
      if (init.key !== undefined) headers['idempotency-key'] = init.key;
      const body = init.raw ?? (init.body === undefined ? undefined : JSON.stringify(init.body));
      if (body !== undefined) headers['content-type'] = init.type ?? 'application/json';
      const res = await fetch(`${s.url}${path}`, { method, headers, body });
      const text = await res.text();
      const where = `${method} ${path} answered ${res.status}: ${text.slice(0, 300)}`;
      const documented = operation.responses[String(res.status)];
      expect(documented, `${where}, a status its operation ${operation.operationId} does not document`).toBeDefined();
      const mediaType = (res.headers.get('content-type') ?? '').split(';')[0];
      const schema = documented.content?.[mediaType]?.schema;
      expect(schema, `${where}, as ${mediaType}, which the document does not say`).toBeDefined();
      const json = mediaType === 'application/json' ? (JSON.parse(text) as Record<string, unknown>) : { text };
      const validate = ajv.compile({ ...schema, components: doc.components });
      expect(validate(mediaType === 'application/json' ? json : text) ? [] : validate.errors, `${where}: its body fits the documented schema`).toEqual([]);
      seen.push(`${method} ${route} ${res.status}`);
      return { status: res.status, json };
    };
    const expectStatus = async (status: number, ...args: Parameters<typeof call>) => expect((await call(...args)).status, `${args[0]} ${args[1]}`).toBe(status);

    // The probes answer without the token, and are not in the API's document (see server.ts).
    for (const probe of ['/healthz', '/readyz']) {
      expect(doc.paths[probe], `${probe} is left out of the document`).toBeUndefined();
      expect((await fetch(`${s.url}${probe}`)).status).toBe(200);
    }
    await expectStatus(200, 'GET', '/metrics', '/metrics');
    await expectStatus(401, 'GET', '/metrics', '/metrics', { token: false });

    // Submissions: enqueued, enqueued again under its run id, a dry run, and each refusal.
    const submission = { input, model: MODEL, out, options: { runId: 'queued-1' } };
    await expectStatus(201, 'POST', '/runs', '/runs', { body: submission, key: 'key-1' });
    await expectStatus(200, 'POST', '/runs', '/runs', { body: submission });
    await expectStatus(200, 'POST', '/runs', '/runs', { body: { input, model: MODEL, out, dryRun: true } });
    await expectStatus(400, 'POST', '/runs', '/runs', { body: { input, model: MODEL } });
    await expectStatus(400, 'POST', '/runs', '/runs', { body: submission, key: 'caf\u00e9' });
    await expectStatus(400, 'POST', '/runs', '/runs', { raw: '{"input":' });
    await expectStatus(403, 'POST', '/runs', '/runs', { body: { ...submission, input: '/etc/hosts' } });
    await expectStatus(422, 'POST', '/runs', '/runs', { body: { ...submission, options: { runId: 'queued-2' } }, key: 'key-1' });
    await expectStatus(422, 'POST', '/runs', '/runs', { body: { input: join(tmp.dir, 'missing.csv'), model: MODEL, out, dryRun: true } });
    await expectStatus(413, 'POST', '/runs', '/runs', { body: { ...submission, model: 'x'.repeat(70_000) } });
    await expectStatus(415, 'POST', '/runs', '/runs', { raw: 'input=x', type: 'application/xml' });
    await expectStatus(401, 'POST', '/runs', '/runs', { body: submission, token: false });

    // The run index finds the score runs' folders at its first scan.
    await waitFor('the held runs to be listed', async () => ((await call('GET', '/runs?state=held', '/runs')).json.runs as unknown[]).length === 2, 15_000);
    await expectStatus(200, 'GET', '/runs?limit=5', '/runs');
    await expectStatus(400, 'GET', '/runs?limit=0&state=nope', '/runs');
    await expectStatus(401, 'GET', '/runs', '/runs', { token: false });

    for (const [id, status] of [
      ['queued-1', 200],
      ['baseline', 200],
      ['..%2Fetc', 400],
      ['no-such-run', 404],
    ] as const)
      await expectStatus(status, 'GET', `/runs/${id}`, '/runs/{id}');
    await expectStatus(401, 'GET', '/runs/queued-1', '/runs/{id}', { token: false });

    await expectStatus(409, 'POST', '/runs/queued-1/resume', '/runs/{id}/resume');
    for (const [id, status] of [
      ['queued-1', 200],
      ['..%2Fetc', 400],
      ['no-such-run', 404],
    ] as const)
      await expectStatus(status, 'DELETE', `/runs/${id}`, '/runs/{id}');
    await waitFor('the cancelled run to settle', async () => ['cancelled'].includes((await call('GET', '/runs/queued-1', '/runs/{id}')).json.state as string));
    // Cancelling again is no error; a score run's folder is no queue's to cancel: whatever it answers, it is documented.
    await expectStatus(200, 'DELETE', '/runs/queued-1', '/runs/{id}');
    await call('DELETE', '/runs/baseline', '/runs/{id}');
    await expectStatus(401, 'DELETE', '/runs/queued-1', '/runs/{id}', { token: false });

    await expectStatus(400, 'POST', '/runs/queued-1/resume', '/runs/{id}/resume', { body: { maxRequests: 0 } });
    await expectStatus(200, 'POST', '/runs/queued-1/resume', '/runs/{id}/resume', { body: { maxRows: 100 } });
    for (const [id, status] of [
      ['..%2Fetc', 400],
      ['no-such-run', 404],
    ] as const)
      await expectStatus(status, 'POST', `/runs/${id}/resume`, '/runs/{id}/resume');
    await expectStatus(415, 'POST', '/runs/queued-1/resume', '/runs/{id}/resume', { raw: 'x', type: 'application/xml' });
    await expectStatus(401, 'POST', '/runs/queued-1/resume', '/runs/{id}/resume', { token: false });

    for (const [verdict, held] of [
      ['accept', 'held-a'],
      ['reject', 'held-b'],
    ] as const) {
      const route = `/runs/{id}/${verdict}`;
      await expectStatus(200, 'POST', `/runs/${held}/${verdict}`, route, { body: { why: 'checked by hand' } });
      await expectStatus(200, 'POST', `/runs/${held}/${verdict}`, route);
      await expectStatus(409, 'POST', `/runs/baseline/${verdict}`, route);
      await expectStatus(400, 'POST', `/runs/..%2Fetc/${verdict}`, route);
      await expectStatus(400, 'POST', `/runs/${held}/${verdict}`, route, { body: { why: '', by: 'me' } });
      await expectStatus(404, 'POST', `/runs/no-such-run/${verdict}`, route);
      await expectStatus(401, 'POST', `/runs/${held}/${verdict}`, route, { token: false });
    }

    const testEvent = { Service: 'Amazon S3', Event: 's3:TestEvent', Time: '2026-11-26T10:00:00.000Z', Bucket: 'drops', RequestId: 'r1', HostId: 'h1' };
    await expectStatus(200, 'POST', '/events/s3', '/events/s3', { body: testEvent });
    await expectStatus(400, 'POST', '/events/s3', '/events/s3', { body: { Records: 'none' } });
    await expectStatus(415, 'POST', '/events/s3', '/events/s3', { raw: 'x', type: 'application/xml' });
    await expectStatus(401, 'POST', '/events/s3', '/events/s3', { body: testEvent, token: false });

    // Every operation of the document was asked, and every one behind the token answered 401 without it.
    const operations = Object.entries(doc.paths).flatMap(([route, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${route}`));
    expect([...asked].sort()).toEqual(operations.sort());
    expect(operations.filter((o) => !seen.includes(`${o} 401`))).toEqual([]);
  });
});
