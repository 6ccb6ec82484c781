// POST /runs with an Idempotency-Key, through a real `serve` on real Redis: no worker runs, so the
// runs it enqueued stay on the queue to be counted.
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { useQueueFixture } from '../helpers/queue.js';
import { useRentalsInput } from '../helpers/scoring.js';
import { useServeProcesses } from '../helpers/serve.js';

const TOKEN = 'tok-7d2b9e4a1c6f3058';
const MODEL = 'mindsdb/home_rentals_model';
const DAY_MS = 24 * 3600 * 1000;

const files = useRentalsInput(200);
const f = useQueueFixture();
const serve = useServeProcesses();

/** `POST /runs` with this body (as an object, or as text sent as it is) and Idempotency-Key. */
async function post(url: string, body: unknown, key?: string) {
  const res = await fetch(`${url}/runs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', ...(key === undefined ? {} : { 'idempotency-key': key }) },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, replayed: res.headers.get('idempotent-replayed'), json: (await res.json()) as Record<string, unknown> };
}

/** The Redis keys of the Idempotency-Keys under the test's prefix. */
async function storedKeys(): Promise<string[]> {
  const redis = new Redis(f.redisUrl);
  try {
    return await redis.keys(`${f.prefix}:idempotency:*`);
  } finally {
    redis.disconnect();
  }
}

async function runIds(): Promise<string[]> {
  return (await f.queue.list({ limit: 100 })).map((r) => r.runId).sort();
}

describe('POST /runs with an Idempotency-Key', () => {
  it('starts one run for one key and one submission, answering the first answer again; another key starts another', async () => {
    await f.setup();
    const s = await serve({ ...f.env(), API_TOKEN: TOKEN });
    // No run id: each submission would otherwise be a run of its own.
    const submission = { input: files.input, model: MODEL, out: join(files.dir, 'out'), options: { segmentRows: 100, priority: 'high' } };
    const first = await post(s.url, submission, 'order-17');
    expect([first.status, first.replayed, first.json.created]).toEqual([201, null, true]);
    const runId = first.json.runId as string;
    // The same submission, its members in another order and spaced otherwise.
    const reordered = `{ "options": {"priority": "high", "segmentRows": 100}, "out": ${JSON.stringify(submission.out)}, "model": "${MODEL}", "input": ${JSON.stringify(files.input)} }`;
    const again = await post(s.url, reordered, 'order-17');
    expect([again.status, again.replayed, again.json]).toEqual([201, 'true', first.json]);
    expect(await runIds()).toEqual([runId]);

    // Kept for a day under the queue prefix.
    const [stored, ...more] = await storedKeys();
    expect(more).toEqual([]);
    const redis = new Redis(f.redisUrl);
    try {
      const ttl = await redis.pttl(stored);
      expect(ttl).toBeGreaterThan(DAY_MS - 60_000);
      expect(ttl).toBeLessThanOrEqual(DAY_MS);
    } finally {
      redis.disconnect();
    }

    const other = await post(s.url, submission, 'order-18');
    expect([other.status, other.replayed]).toEqual([201, null]);
    expect(other.json.runId).not.toBe(runId);
    expect(await runIds()).toEqual([runId, other.json.runId as string].sort());
    // Without a key, the same submission is another run too.
    expect((await post(s.url, submission)).status).toBe(201);
    expect(await runIds()).toHaveLength(3);

    const openApi = (await (await fetch(`${s.url}/openapi.json`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as {
      paths: { '/runs': { post: { parameters: { name: string; in: string }[]; responses: Record<string, { description: string }> } } };
    };
    const documented = openApi.paths['/runs'].post;
    expect(documented.parameters).toMatchObject([{ name: 'Idempotency-Key', in: 'header' }]);
    expect(documented.responses['422'].description).toContain('E_IDEMPOTENCY_KEY_REUSED');
  });

  it('starts one run for requests sent at once with one key, each answered with its runId', async () => {
    await f.setup();
    const s = await serve({ ...f.env(), API_TOKEN: TOKEN });
    const submission = { input: files.input, model: MODEL, out: join(files.dir, 'at-once') };
    const answers = await Promise.all(Array.from({ length: 6 }, () => post(s.url, submission, 'batch-2026-11-26')));
    const runId = answers[0].json.runId as string;
    expect(answers.map((a) => [a.status, a.json])).toEqual(Array(6).fill([201, { runId, created: true }]));
    // One request enqueued; the five others were answered with its answer.
    expect(answers.filter((a) => a.replayed === 'true')).toHaveLength(5);
    expect(await runIds()).toEqual([runId]);
  });

  it('refuses the key with another submission (422), a bad key (400), and keeps nothing for a dry run', async () => {
    await f.setup();
    const s = await serve({ ...f.env(), API_TOKEN: TOKEN });
    const key = 'k-3f1c0b6e-91d2-4a7e-b0c5-2d8e6f4a9b17';
    const submission = { input: files.input, model: MODEL, out: join(files.dir, 'refused') };
    expect((await post(s.url, submission, key)).status).toBe(201);
    const reused = await post(s.url, { ...submission, options: { batchSize: 50 } }, key);
    expect([reused.status, reused.json.error]).toEqual([422, 'E_IDEMPOTENCY_KEY_REUSED']);
    expect(reused.json.message).not.toContain(key);
    expect(reused.json.message).not.toContain(files.input);
    expect(await runIds()).toHaveLength(1);

    for (const bad of ['x'.repeat(256), 'caf\u00e9', 'a\tb']) {
      const refused = await post(s.url, submission, bad);
      expect([refused.status, refused.json.error, refused.json.issues]).toEqual([
        400,
        'E_USAGE',
        [{ field: 'Idempotency-Key', message: 'must be 1 to 255 printable ASCII characters' }],
      ]);
    }
    expect((await post(s.url, submission, 'x'.repeat(255))).status).toBe(201);

    const dry = await post(s.url, { ...submission, dryRun: true }, 'dry-1');
    expect([dry.status, dry.json.dryRun]).toEqual([200, true]);
    expect(await storedKeys()).toHaveLength(2);
    // The key a dry run was sent with is free for the real run.
    expect((await post(s.url, { ...submission, options: { batchSize: 50 } }, 'dry-1')).status).toBe(201);
    expect(await runIds()).toHaveLength(3);
  });
});
