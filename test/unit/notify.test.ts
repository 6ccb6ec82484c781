import { createHmac } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadSettings } from '../../src/config/settings.js';
import { BatchScorerError } from '../../src/errors.js';
import { notificationsSection } from '../../src/http/notifications-section.js';
import type { DeliveryRecord } from '../../src/notify/delivery-record.js';
import { notifyConfig, targetsOf } from '../../src/notify/notify-config.js';
import { runEvents } from '../../src/notify/notify-events.js';
import { deliveriesOf, deliveryId, webhookDeliverySchema } from '../../src/notify/webhook-delivery.js';
import { webhookBody } from '../../src/notify/webhook-body.js';
import { verdictOf } from '../../src/notify/webhook-post.js';
import { webhookSignature } from '../../src/notify/webhook-signature.js';
import { buildManifest, type Manifest } from '../../src/pipeline/manifest.js';
import { formatLocation } from '../../src/storage/location.js';
import type { Drift } from '../../src/pipeline/drift.js';
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
  return { ...m, durationMs: 2000, finishedAt: '2026-11-26T01:00:02.000Z', ...(drift && { drift: { level: drift } as Drift }) };
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
    const body = webhookBody(m, 'the-id', 'https://scorer.example');
    const { text, error, ...rest } = body;
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
    expect(line).toMatch(/^batch-scorer: run nightly-20261126T0200Z \(pipeline nightly\) failed \[E_INPUT_NOT_FOUND\]: \/data\/2026-11-25\.csv: no such file/);
    expect(Buffer.byteLength(line)).toBeLessThan(300);
    expect(link).toBe('https://scorer.example/ui/runs/nightly-20261126T0200Z');
  });

  it('says the counts of a completed run, its drift, and links the folder when no PUBLIC_URL is set', () => {
    const body = webhookBody(completedRun('warn'), 'id', undefined);
    expect(body).toMatchObject({ event: 'completed', events: ['completed', 'drift'], pipeline: null, error: null, drift: { level: 'warn' } });
    expect(body.counts).toEqual({ rowsIn: 10, rowsScored: 9, rowsQuarantined: 1 });
    expect(body.links).toEqual({ run: null, folder: '/out/r1' });
    expect(body.text).toBe('batch-scorer: run r1 completed: 9 rows scored, 1 quarantined; drift warn\n/out/r1');
  });
});

describe('run events and targets', () => {
  it('a run end is its state, and drift beside it at warn or fail (one delivery with both)', () => {
    expect(runEvents(completedRun())).toEqual(['completed']);
    expect(runEvents(completedRun('ok'))).toEqual(['completed']);
    expect(runEvents(completedRun('fail'))).toEqual(['completed', 'drift']);
    expect(runEvents({ ...failedRun(), drift: { level: 'fail' } as Drift })).toEqual(['failed', 'drift']);
    expect(runEvents({ ...failedRun(), state: 'cancelled' })).toEqual(['cancelled']);
    expect(runEvents({ ...failedRun(), state: 'expired' })).toEqual(['expired']);
  });

  it("NOTIFY_URLS hear every end; a pipeline's targets only the events of its `on`; a target named twice is told once", () => {
    const config = notifyConfig({ urls: ['https://all.example/'], secret: SECRET }, [
      { name: 'nightly', notify: { urls: ['https://failures.example/', 'https://all.example/'], on: ['failed'] } },
      { name: 'other', notify: { urls: ['https://drift.example/'], on: ['drift'] } },
    ])!;
    expect(targetsOf(failedRun(), config)).toEqual(['https://all.example/', 'https://failures.example/']);
    const completedNightly = { ...completedRun(), trigger: failedRun().trigger };
    expect(targetsOf(completedNightly, config)).toEqual(['https://all.example/']);
    const otherTrigger = { ...failedRun().trigger!, pipeline: 'other' } as Manifest['trigger'];
    expect(targetsOf({ ...completedRun('warn'), trigger: otherTrigger }, config)).toEqual(['https://all.example/', 'https://drift.example/']);
    expect(targetsOf({ ...completedRun('ok'), trigger: otherTrigger }, config)).toEqual(['https://all.example/']);
  });

  it('nothing to tell is no config; pipeline targets without NOTIFY_SECRET are refused naming the pipeline', () => {
    expect(notifyConfig({ urls: [] }, [{ name: 'quiet' }])).toBeUndefined();
    expect(() => notifyConfig({ urls: [] }, [{ name: 'nightly', notify: { urls: ['https://x.example/'], on: ['failed'] } }])).toThrow(
      /pipeline nightly declares notify targets but NOTIFY_SECRET is not set/,
    );
  });

  it('a delivery id is the same for the same run end and target, another for another end or target', () => {
    const m = failedRun();
    const id = deliveryId(m, TOKEN_URL);
    expect(id).toMatch(/^nightly-20261126T0200Z\.failed\.[0-9a-f]{12}$/);
    expect(deliveryId({ ...m }, TOKEN_URL)).toBe(id);
    expect(deliveryId(m, 'https://other.example/')).not.toBe(id);
    expect(deliveryId({ ...m, startedAt: '2026-11-26T03:00:00.000Z' }, TOKEN_URL)).not.toBe(id);
    const [d] = deliveriesOf(m, notifyConfig({ urls: [TOKEN_URL], secret: SECRET })!);
    expect(d.id).toBe(id);
    expect(JSON.parse(d.body)).toMatchObject({ deliveryId: id, runId: m.runId });
    expect(d.body).not.toContain('token');
  });

  it('a delivery keeps its run folder as the manifest’s text in job data, and is read with it parsed', () => {
    const m = failedRun();
    const [stored] = deliveriesOf(m, notifyConfig({ urls: [TOKEN_URL], secret: SECRET })!);
    expect(stored.folder).toBe('/out/nightly-20261126T0200Z');
    const read = webhookDeliverySchema.parse(JSON.parse(JSON.stringify(stored)));
    expect(read.folder).toEqual({ kind: 'file', path: '/out/nightly-20261126T0200Z' });
    expect({ ...read, folder: read.folder && formatLocation(read.folder) }).toEqual(stored);
    expect(webhookDeliverySchema.parse({ ...stored, folder: null }).folder).toBe(null);
    const bad = webhookDeliverySchema.safeParse({ ...stored, folder: 'ftp://host/out' });
    expect(bad.error?.issues.map((i) => i.path)).toEqual([['folder']]);
  });

  it('2xx is delivered; 408, 429 and 5xx are tried again; other statuses (4xx, redirects) are given up', () => {
    expect([200, 202, 204].map(verdictOf)).toEqual(['delivered', 'delivered', 'delivered']);
    expect([408, 429, 500, 502, 503].map(verdictOf)).toEqual(['retry', 'retry', 'retry', 'retry', 'retry']);
    expect([301, 400, 401, 404, 410].map(verdictOf)).toEqual(['give-up', 'give-up', 'give-up', 'give-up', 'give-up']);
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
    expect(b.notify?.on).toEqual(['completed', 'failed', 'expired', 'cancelled', 'drift']);
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
