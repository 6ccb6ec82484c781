import { createHmac } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { loadSettings } from '../../src/config/settings.js';
import { BatchScorerError } from '../../src/errors.js';
import { notificationsSection } from '../../src/http/notifications-section.js';
import type { DeliveryRecord } from '../../src/notify/delivery-record.js';
import { notifyConfig, targetsOf } from '../../src/notify/notify-config.js';
import { runEvents } from '../../src/notify/notify-events.js';
import { checkedDelivery } from '../../src/notify/delivery-check.js';
import { runEndOf } from '../../src/notify/run-end.js';
import { targetName } from '../../src/notify/target-name.js';
import { deliveriesOf, deliveryId, deliveryJobSchema, sealedDelivery, type DeliveryJob } from '../../src/notify/webhook-delivery.js';
import { webhookBody } from '../../src/notify/webhook-body.js';
import { webhookRetryDelayMs } from '../../src/notify/webhook-retry.js';
import { readJobData } from '../../src/queue/queues.js';
import { verdictOf } from '../../src/notify/webhook-post.js';
import { webhookSignature } from '../../src/notify/webhook-signature.js';
import { buildManifest, type Manifest } from '../../src/scoring/manifest.js';
import type { Drift } from '../../src/scoring/drift.js';
import { parseLocation } from '../../src/storage/location.js';
import { loadPipelines } from '../../src/triggers/pipelines.js';

const SECRET = 'a-notify-secret-of-32-characters';
const NO_CONFIG = join(tmpdir(), 'batch-scorer-no-config-folder');
const TOKEN_URL = 'https://hooks.example/services/T000/B000/tokenInPath?key=tokenInQuery';

/** A scheduled run of pipeline `nightly` that failed: its input was missing. */
function failedRun(): Manifest {
  return {
    ...buildManifest({
      runId: 'nightly-20261126T0200Z',
      startedAt: '2026-11-26T02:00:00.000Z',
      request: {
        input: '/data/2026-11-25.csv',
        model: 'mindsdb/home_rentals_model',
        options: {},
        trigger: { kind: 'schedule', pipeline: 'nightly', fireTime: '2026-11-26T02:00:00.000Z', cron: '0 2 * * *', tz: 'UTC' },
      },
      folder: { kind: 'file', path: '/out/nightly-20261126T0200Z' },
      error: new BatchScorerError('E_INPUT_NOT_FOUND', `/data/2026-11-25.csv: no such file or object ${'x'.repeat(2000)}`),
    }),
    finishedAt: '2026-11-26T02:00:01.500Z',
    durationMs: 1500,
  };
}

/** A run of `score` that succeeded, with its counts. */
function completedRun(drift: Drift['level'] | undefined = undefined): Manifest {
  const m = buildManifest({
    runId: 'r1',
    startedAt: '2026-11-26T01:00:00.000Z',
    request: { input: 'in.csv', model: 'm/p', options: {}, trigger: { kind: 'cli', command: 'score' } },
    folder: { kind: 'file', path: '/out/r1' },
    counts: { rowsIn: 10, rowsScored: 9, rowsQuarantined: 1, requests: 1, retries: 0, intervalViolations: 0, segments: 1 } as never,
  });
  return {
    ...m,
    durationMs: 2000,
    finishedAt: '2026-11-26T01:00:02.000Z',
    ...(drift && {
      drift: { level: drift, columns: [], baseline: { runId: 'b0', finishedAt: '2026-11-25T01:00:02.000Z', chosen: 'previous' } } as unknown as Drift,
    }),
  };
}

/** The message of the E_CONFIG loading settings from `env` fails with. */
function settingsRefusal(env: Record<string, string>): string {
  try {
    loadSettings(env, NO_CONFIG);
  } catch (err) {
    expect((err as BatchScorerError).code).toBe('E_CONFIG');
    return (err as Error).message;
  }
  throw new Error('accepted');
}

describe('webhook signature', () => {
  it('is t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>"> with the secret', () => {
    const body = '{"event":"failed"}';
    const header = webhookSignature(SECRET, body, 1_764_122_400_999);
    const expected = createHmac('sha256', SECRET).update(`1764122400.${body}`).digest('hex');
    expect(header).toBe(`t=1764122400,v1=${expected}`);
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
  });
});

describe('webhook body', () => {
  it("carries the run end's fields, its error message bounded, links, and a one-line chat text with the link after it", () => {
    const m = failedRun();
    const body = webhookBody(runEndOf(m), 'the-id', 'https://scorer.example');
    const { text, error, result, ...rest } = body;
    expect(result).toMatchObject({ state: 'failed', attempt: 0, counts: null, error: { code: 'E_INPUT_NOT_FOUND', message: error?.message } });
    expect(rest).toEqual({
      event: 'failed',
      events: ['failed'],
      deliveryId: 'the-id',
      runId: 'nightly-20261126T0200Z',
      state: 'failed',
      pipeline: 'nightly',
      trigger: 'schedule nightly (2026-11-26T02:00:00.000Z)',
      startedAt: '2026-11-26T02:00:00.000Z',
      finishedAt: '2026-11-26T02:00:01.500Z',
      durationMs: 1500,
      counts: null,
      drift: null,
      links: { run: 'https://scorer.example/ui/runs/nightly-20261126T0200Z', folder: '/out/nightly-20261126T0200Z' },
    });
    expect(error?.code).toBe('E_INPUT_NOT_FOUND');
    expect(error?.message).toMatch(/^\/data\/2026-11-25\.csv: no such file or object x+\.\.\. \d+ more bytes$/);
    expect(Buffer.byteLength(error!.message)).toBeLessThanOrEqual(500);
    const [line, link] = text.split('\n');
    expect(line).toMatch(/^batch-scorer: run nightly-20261126T0200Z \(pipeline nightly\) failed: \[E_INPUT_NOT_FOUND\] \/data\/2026-11-25\.csv: no such file/);
    expect(Buffer.byteLength(line)).toBeLessThan(300);
    expect(link).toBe('https://scorer.example/ui/runs/nightly-20261126T0200Z');
  });

  it('says the counts of a completed run, its drift, and links the folder when no PUBLIC_URL is set', () => {
    const body = webhookBody(runEndOf(completedRun('warn')), 'id', undefined);
    expect(body).toMatchObject({ event: 'succeeded', events: ['succeeded', 'drift'], pipeline: null, error: null, drift: { level: 'warn' } });
    expect(body.counts).toEqual({ rowsIn: 10, rowsScored: 9, rowsQuarantined: 1 });
    expect(body.links).toEqual({ run: null, folder: '/out/r1' });
    expect(body.text).toBe('batch-scorer: run r1 succeeded: 9 rows scored, 1 quarantined; drift warn\n/out/r1');
  });
});

describe('run events and targets', () => {
  it('a run end is its state, and drift beside it at warn or fail (one delivery with both)', () => {
    expect(runEvents(completedRun())).toEqual(['succeeded']);
    expect(runEvents(completedRun('ok'))).toEqual(['succeeded']);
    expect(runEvents(completedRun('fail'))).toEqual(['succeeded', 'drift']);
    expect(runEvents({ ...failedRun(), drift: { level: 'fail' as const } })).toEqual(['failed', 'drift']);
    expect(runEvents({ ...failedRun(), state: 'cancelled' })).toEqual(['cancelled']);
    expect(runEvents({ ...failedRun(), state: 'expired' })).toEqual(['expired']);
  });

  it("NOTIFY_URLS hear every end; a pipeline's targets only the events of its `on`; a target named twice is told once", () => {
    const config = notifyConfig({ urls: ['https://all.example/'], secret: SECRET }, [
      { name: 'nightly', notify: { urls: ['https://failures.example/', 'https://all.example/'], on: ['failed'] } },
      { name: 'other', notify: { urls: ['https://drift.example/'], on: ['drift'] } },
    ])!;
    const targets = (m: Manifest) => targetsOf(runEndOf(m), config);
    expect(targets(failedRun())).toEqual(['https://all.example/', 'https://failures.example/']);
    const completedNightly = { ...completedRun(), trigger: failedRun().trigger };
    expect(targets(completedNightly)).toEqual(['https://all.example/']);
    const otherTrigger = { ...failedRun().trigger!, pipeline: 'other' } as Manifest['trigger'];
    expect(targets({ ...completedRun('warn'), trigger: otherTrigger })).toEqual(['https://all.example/', 'https://drift.example/']);
    expect(targets({ ...completedRun('ok'), trigger: otherTrigger })).toEqual(['https://all.example/']);
    // What a delivery job may name: each target once, by name.
    expect([...config.targets.entries()]).toEqual(
      ['https://all.example/', 'https://failures.example/', 'https://drift.example/'].map((url) => [targetName(url), url]),
    );
  });

  it('nothing to tell is no config; pipeline targets without NOTIFY_SECRET are refused naming the pipeline', () => {
    expect(notifyConfig({ urls: [] }, [{ name: 'quiet' }])).toBeUndefined();
    expect(() => notifyConfig({ urls: [] }, [{ name: 'nightly', notify: { urls: ['https://x.example/'], on: ['failed'] } }])).toThrow(
      /pipeline nightly declares notify targets but NOTIFY_SECRET is not set/,
    );
  });

  it('a delivery id is the same for the same run end and target, another for another end or target', () => {
    const end = runEndOf(failedRun());
    const id = deliveryId(end, TOKEN_URL);
    expect(id).toMatch(/^nightly-20261126T0200Z\.failed\.[0-9a-f]{12}$/);
    expect(deliveryId({ ...end }, TOKEN_URL)).toBe(id);
    expect(deliveryId(end, 'https://other.example/')).not.toBe(id);
    expect(deliveryId({ ...end, startedAt: '2026-11-26T03:00:00.000Z' }, TOKEN_URL)).not.toBe(id);
  });

  it('a delivery job carries the run end, its target by name and a seal: no URL, no body', () => {
    const [job] = deliveriesOf(failedRun(), notifyConfig({ urls: [TOKEN_URL], secret: SECRET })!);
    expect(Object.keys(job)).toEqual(['deliveryId', 'target', 'end', 'seal']);
    expect(job.deliveryId).toBe(deliveryId(job.end, TOKEN_URL));
    expect(job.target).toBe(targetName(TOKEN_URL));
    expect(job.target).toMatch(/^[0-9a-f]{16}$/);
    expect(job.seal).toMatch(/^[0-9a-f]{64}$/);
    expect(job.end).toMatchObject({ runId: 'nightly-20261126T0200Z', state: 'failed', pipeline: 'nightly', folder: '/out/nightly-20261126T0200Z' });
    expect(Buffer.byteLength(job.end.error!.message)).toBeLessThanOrEqual(500);
    expect(JSON.stringify(job)).not.toMatch(/token|hooks\.example/);
  });

  it('2xx is delivered; 408, 429 and 5xx are tried again; other statuses (4xx, redirects) are given up', () => {
    expect([200, 202, 204].map(verdictOf)).toEqual(['delivered', 'delivered', 'delivered']);
    expect([408, 429, 500, 502, 503].map(verdictOf)).toEqual(['retry', 'retry', 'retry', 'retry', 'retry']);
    expect([301, 400, 401, 404, 410].map(verdictOf)).toEqual(['give-up', 'give-up', 'give-up', 'give-up', 'give-up']);
  });
});

describe('a delivery job, as a worker checks it before it sends or writes anything', () => {
  const root = mkdtempSync(join(tmpdir(), 'notify-out-'));
  const policy = { outputRoots: [parseLocation(root)] };
  const config = notifyConfig({ urls: [TOKEN_URL], secret: SECRET })!;
  const folder = join(root, 'nightly-20261126T0200Z');
  /** The run end's job as Redis keeps it: JSON. */
  const stored = (): DeliveryJob => JSON.parse(JSON.stringify(deliveriesOf({ ...failedRun(), folder }, config)[0])) as DeliveryJob;
  const sealed = (fields: Omit<DeliveryJob, 'seal'>, secret = SECRET) => sealedDelivery(secret, fields);
  const check = async (data: unknown, id = (data as DeliveryJob).deliveryId) =>
    checkedDelivery(id, readJobData(deliveryJobSchema, { id, queueName: 'notifications', data }), { config, policy });

  it('is attempted with the configured URL, a body built from its run end, and its run folder parsed', async () => {
    const job = stored();
    const delivery = await check(job);
    expect(delivery).toMatchObject({ id: job.deliveryId, url: TOKEN_URL, folder: { kind: 'file', path: folder }, events: ['failed'] });
    expect(JSON.parse(delivery.body)).toEqual(webhookBody(job.end, job.deliveryId, undefined));
    expect(JSON.parse(delivery.body)).toMatchObject({ runId: 'nightly-20261126T0200Z', links: { folder } });
  });

  it('is refused (E_NOT_ALLOWED) when not sealed with NOTIFY_SECRET, or naming another job, target, delivery or folder', async () => {
    const { seal, ...fields } = stored();
    const forged = (end: Partial<DeliveryJob['end']>) => sealed({ ...fields, end: { ...fields.end, ...end } });
    const refusals: [unknown, string | undefined, RegExp][] = [
      [{ ...fields, seal, end: { ...fields.end, state: 'succeeded' } }, undefined, /it is not sealed with this deployment's NOTIFY_SECRET/],
      [sealed(fields, 'another-secret-of-32-characters!'), undefined, /it is not sealed with this deployment's NOTIFY_SECRET/],
      [{ ...fields, seal }, 'another-job', /its job id is not its delivery id/],
      [sealed({ ...fields, target: targetName('https://attacker.example/') }), undefined, /names target [0-9a-f]{16}, which neither NOTIFY_URLS nor/],
      [sealed({ ...fields, deliveryId: 'nightly-20261126T0200Z.failed.000000000000' }), undefined, /its delivery id is not the one of its run end/],
      [forged({ folder: `/elsewhere/${fields.end.runId}` }), undefined, /is outside OUTPUT_ROOTS/],
      [forged({ folder: join(root, 'r1') }), undefined, /its run folder is not named after its run/],
      [forged({ folder: 'ftp://host/x' }), undefined, /its run folder is no location/],
    ];
    for (const [data, id, why] of refusals) {
      const refused = await check(data, id).then(
        () => undefined,
        (err: unknown) => err as BatchScorerError,
      );
      expect(refused?.code, String(why)).toBe('E_NOT_ALLOWED');
      expect(refused?.message).toMatch(why);
      expect(refused?.message).toMatch(/; nothing was sent/);
    }
  });

  it('is refused as unreadable (E_USAGE) with a URL or body of its own, an id that climbs out of its folder, or a text past its bound', () => {
    const job = stored();
    const unreadable: [unknown, RegExp][] = [
      [{ ...job, url: 'https://attacker.example/' }, /unknown option\(s\) "url"/],
      [{ id: job.deliveryId, url: TOKEN_URL, body: '{}', folder: folder, events: ['failed'] }, /deliveryId: must be text/],
      [{ ...job, deliveryId: '../manifest' }, /deliveryId: must be a delivery id/],
      [{ ...job, end: { ...job.end, runId: '../manifest' } }, /end\.runId: use letters, digits/],
      [{ ...job, end: { ...job.end, error: { code: 'E_INPUT_NOT_FOUND', message: 'x'.repeat(501) } } }, /end\.error\.message: must be at most 500 bytes/],
      [{ ...job, end: { ...job.end, trigger: 'x'.repeat(513) } }, /end\.trigger: must be at most 512 bytes/],
      [{ ...job, end: { ...job.end, startedAt: 'yesterday' } }, /end\.startedAt/],
    ];
    for (const [data, why] of unreadable) {
      let refused: unknown;
      try {
        readJobData(deliveryJobSchema, { id: 'j1', queueName: 'notifications', data });
      } catch (err) {
        refused = err;
      }
      expect((refused as BatchScorerError | undefined)?.code, String(why)).toBe('E_USAGE');
      expect((refused as Error).message).toMatch(why);
    }
  });

  it("is tried again after the project's backoff: about 1, 2, 4 and 8 s, half of each random, never past 8 s", () => {
    // Math.random stands for the jitter: webhookRetryDelayMs is BullMQ's backoff strategy, whose arguments are BullMQ's.
    const random = vi.spyOn(Math, 'random');
    try {
      fc.assert(
        fc.property(fc.integer({ min: 1, max: 100 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (attempt, r) => {
          random.mockReturnValue(r);
          const ceiling = Math.min(8_000, 1_000 * 2 ** (attempt - 1));
          const wait = webhookRetryDelayMs(attempt);
          expect(Number.isInteger(wait)).toBe(true);
          expect(wait).toBeGreaterThanOrEqual(ceiling / 2);
          expect(wait).toBeLessThanOrEqual(ceiling);
          // The random half is there: the lowest draw waits half the ceiling, the highest all of it.
          expect(wait).toBe(Math.round(ceiling / 2 + (r * ceiling) / 2));
        }),
      );
    } finally {
      random.mockRestore();
    }
  });
});

describe('notification settings', () => {
  it('reads NOTIFY_URLS, NOTIFY_SECRET and PUBLIC_URL (its trailing slash dropped)', () => {
    const { notify } = loadSettings(
      { NOTIFY_URLS: `${TOKEN_URL}, http://127.0.0.1:9000/hook`, NOTIFY_SECRET: SECRET, PUBLIC_URL: 'https://scorer.example/' },
      NO_CONFIG,
    );
    expect(notify).toEqual({ urls: [TOKEN_URL, 'http://127.0.0.1:9000/hook'], secret: SECRET, publicUrl: 'https://scorer.example' });
    expect(loadSettings({}, NO_CONFIG).notify).toEqual({ urls: [] });
  });

  it('refuses bad targets, a missing or short secret and a bad PUBLIC_URL, naming the setting and quoting neither URL nor secret', () => {
    const refusals = [
      [{ NOTIFY_URLS: `${TOKEN_URL},ftp://files.example/tokenInPath`, NOTIFY_SECRET: SECRET }, 'NOTIFY_URLS entry 2 is not an http(s) URL'],
      [
        { NOTIFY_URLS: 'https://user:tokenInPassword@hooks.example/x', NOTIFY_SECRET: SECRET },
        'NOTIFY_URLS entry 1 carries credentials (user:password@): leave them out',
      ],
      [{ NOTIFY_URLS: 'not a url tokenInPath', NOTIFY_SECRET: SECRET }, 'NOTIFY_URLS entry 1 is not a URL'],
      [{ NOTIFY_URLS: TOKEN_URL }, 'NOTIFY_URLS is set but NOTIFY_SECRET is not'],
      [{ NOTIFY_SECRET: 'short-tokenInPa' }, 'NOTIFY_SECRET is 15 characters long: set one of 16 characters at least'],
      [{ PUBLIC_URL: 'https://scorer.example/?tokenInQuery=1' }, 'PUBLIC_URL has a query or fragment'],
    ] as const;
    for (const [env, message] of refusals) {
      const said = settingsRefusal(env);
      expect(said).toContain(message);
      expect(said).not.toMatch(/token|notify-secret/);
    }
  });
});

describe("a pipeline's notify in jobs/*.yaml", () => {
  const pipeline = (notify: string) =>
    `name: nightly\nmodel: mindsdb/home_rentals_model\ninput: s3://data/{date}.csv\noutput: s3://results/nightly/\nschedule: { cron: "0 2 * * *" }\n${notify}`;
  const jobs = (text: string) => {
    const dir = mkdtempSync(join(tmpdir(), 'jobs-'));
    writeFileSync(join(dir, 'p.yaml'), text);
    return dir;
  };

  it('takes urls and on, all five events by default', async () => {
    const [a] = await loadPipelines(jobs(pipeline(`notify: { urls: ["${TOKEN_URL}"], on: [failed, drift] }\n`)));
    expect(a.notify).toEqual({ urls: [TOKEN_URL], on: ['failed', 'drift'] });
    const [b] = await loadPipelines(jobs(pipeline('notify: { urls: ["https://hooks.example/x"] }\n')));
    expect(b.notify?.on).toEqual(['succeeded', 'failed', 'cancelled', 'expired', 'held', 'drift']);
  });

  it('refuses an unknown event, a bad URL (not quoting it) and unknown fields, naming the field', async () => {
    await expect(loadPipelines(jobs(pipeline('notify: { urls: ["https://hooks.example/x"], on: [finished] }\n')))).rejects.toThrow(/notify\.on\.0/);
    const bad = loadPipelines(jobs(pipeline('notify: { urls: ["ftp://hooks.example/tokenInPath"] }\n')));
    await expect(bad).rejects.toThrow(/notify\.urls\.0.*is not an http\(s\) URL/);
    await expect(bad).rejects.not.toThrow(/tokenInPath/);
    await expect(loadPipelines(jobs(pipeline('notify: { url: "https://hooks.example/x" }\n')))).rejects.toThrow(/notify/);
  });
});

describe("the run page's notifications", () => {
  it('list each delivery with its events, origin, attempts, last answer and outcome; nothing without deliveries', () => {
    const record: DeliveryRecord = {
      deliveryId: 'r1.failed.0123456789ab',
      events: ['failed', 'drift'],
      target: 'https://hooks.example',
      attempts: 3,
      lastStatus: null,
      lastError: '<ECONNREFUSED>',
      outcome: 'gave-up',
      at: '2026-11-26T02:00:05.000Z',
    };
    const text = notificationsSection([
      record,
      { ...record, deliveryId: 'r1.failed.ba9876543210', attempts: 1, lastStatus: 200, lastError: null, outcome: 'delivered' },
    ]).toString();
    const rows = [...text.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].slice(1).map((m) =>
      [...m[1].matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map((c) =>
        c[1]
          .replace(/<[^>]+>/g, '')
          .replace(/\s+/g, ' ')
          .trim(),
      ),
    );
    expect(rows).toEqual([
      ['r1.failed.0123456789ab', 'failed, drift', 'https://hooks.example', '3', '&lt;ECONNREFUSED&gt;', 'gave-up 2026-11-26T02:00:05.000Z'],
      ['r1.failed.ba9876543210', 'failed, drift', 'https://hooks.example', '1', '200', 'delivered 2026-11-26T02:00:05.000Z'],
    ]);
    expect(notificationsSection([])).toBe('');
    expect(notificationsSection(undefined)).toBe('');
  });
});
