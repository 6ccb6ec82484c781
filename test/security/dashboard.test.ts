import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { RUNS_QUEUE, SCHEDULES_QUEUE } from '../../src/queue/queues.js';
import { runCli } from '../helpers/cli.js';
import { fetchFrom } from '../helpers/fetch-from.js';
import { freePort, useQueueFixture, waitFor } from '../helpers/queue.js';
import { useServeProcesses } from '../helpers/serve.js';

const TOKEN = 'tok-sec-7c2e9a1f4b6d8035';
const USER = 'operator';
const PASSWORD = 'pw-sec-4e8b1d7a9c2f6053';
const CREDENTIALS = { API_TOKEN: TOKEN, DASHBOARD_USER: USER, DASHBOARD_PASSWORD: PASSWORD };
const basicOf = (user: string, password: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` });
const login = basicOf(USER, PASSWORD);
const bearer = { authorization: `Bearer ${TOKEN}` };
const WRONG_PASSWORD = 'not-the-password-8d1f';

const f = useQueueFixture();
const serve = useServeProcesses();

/** The `src` and `href` values of a page's markup. */
const namedUrls = (html: string) => [...html.matchAll(/\s(?:src|href)="([^"]*)"/g)].map((m) => m[1]);

/** Whether a URL names a host (`https://...`, `//...`) rather than a path on the page's own. */
const namesHost = (url: string) => /^(?:[a-z][a-z0-9+.-]*:)?\/\//i.test(url);

describe('the dashboard, safe to share', () => {
  it("puts the same security headers on every /ui page, bull-board's pages and assets included, which name no other host", async () => {
    await f.setup();
    const s = await serve({ ...f.env(), ...CREDENTIALS });
    const get = (path: string, headers: Record<string, string> = login) => fetchFrom('127.0.0.1', `${s.url}${path}`, { headers });

    // The files both UIs' pages load, found in their markup rather than listed here.
    const assets = new Set<string>();
    for (const page of ['/ui/queues/', '/ui/runs']) {
      const { status, text } = await get(page);
      expect([page, status]).toEqual([page, 200]);
      const urls = namedUrls(text);
      expect([page, urls.filter(namesHost)]).toEqual([page, []]);
      expect(text).not.toContain('fonts.googleapis.com');
      const base = new URL(/<base href="([^"]+)"/.exec(text)?.[1] ?? page, s.url);
      for (const url of urls) assets.add(new URL(url, base).pathname + new URL(url, base).search);
    }
    // bull-board's stylesheet and four scripts, its two icons; the run pages' stylesheet and icon.
    expect([...assets].filter((a) => a.startsWith('/ui/queues/static/')).length).toBeGreaterThanOrEqual(7);
    expect([...assets].filter((a) => a.startsWith('/ui/assets/')).length).toBeGreaterThanOrEqual(2);

    const answers: [string, number, Headers][] = [];
    for (const path of [
      '/ui/queues/',
      '/ui/queues/queue/runs',
      '/ui/queues/api/queues',
      '/ui/runs',
      '/ui/runs/no-such-run',
      '/ui/assets/chart.js',
      ...assets,
    ]) {
      const { status, headers } = await get(path);
      answers.push([path, status, headers]);
    }
    // Refusals and the not-found page of /ui carry them too.
    const refused = await get('/ui/queues/', {});
    answers.push(['/ui/queues/ without credentials', refused.status, refused.headers]);
    const missing = await get('/ui/no-such-page');
    answers.push(['/ui/no-such-page', missing.status, missing.headers]);
    expect(answers.map(([path, status]) => [path, status])).toEqual(
      answers.map(([path]) => [path, path.includes('without') ? 401 : /no-such/.test(path) ? 404 : 200]),
    );

    const policy = answers[0][2].get('content-security-policy') ?? '';
    for (const [path, , headers] of answers) {
      expect([
        path,
        headers.get('content-security-policy'),
        headers.get('x-frame-options'),
        headers.get('x-content-type-options'),
        headers.get('referrer-policy'),
      ]).toEqual([path, policy, 'DENY', 'nosniff', 'no-referrer']);
    }
    // The policy itself: this origin only, no inline script, no eval, no framing.
    const directives = new Map(policy.split(/;\s*/).map((d) => [d.split(' ')[0], d.split(' ').slice(1)] as const));
    expect(directives.get('default-src')).toEqual(["'self'"]);
    expect(directives.get('frame-ancestors')).toEqual(["'none'"]);
    expect(directives.get('object-src')).toEqual(["'none'"]);
    expect(directives.has('script-src')).toBe(false);
    for (const [name, sources] of directives) {
      for (const source of sources) expect([name, source]).toEqual([name, expect.stringMatching(/^'(?:self|none|unsafe-hashes|sha256-[A-Za-z0-9+/]+=*)'$/)]);
    }
    expect(await s.stop()).toBe(0);
  });

  it('answers 429 with Retry-After to a client after ten refused logins a minute, while another client is served, for basic auth and the token alike', async () => {
    await f.setup();
    const s = await serve({ ...f.env(), ...CREDENTIALS });
    const from = (address: string, path: string, headers: Record<string, string>) => fetchFrom(address, `${s.url}${path}`, { headers });
    const wrongLogin = basicOf(USER, WRONG_PASSWORD);

    // Nine refused, then the right login: served, and the failures still count (a success is no excuse for them).
    for (let i = 0; i < 9; i++) expect((await from('127.0.0.2', '/ui/runs', wrongLogin)).status).toBe(401);
    for (let i = 0; i < 5; i++) expect((await from('127.0.0.2', '/ui/runs', login)).status).toBe(200);
    expect((await from('127.0.0.2', '/ui/queues/', wrongLogin)).status).toBe(401);
    const locked = await from('127.0.0.2', '/ui/runs', wrongLogin);
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(50);
    expect(Number(locked.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    const body = JSON.parse(locked.text) as { error: string; message: string };
    expect(body.error).toBe('E_RATE_LIMITED');
    expect(body.message).toMatch(/try again in \d+ s/);
    // Locked out everywhere, right credentials included: any other answer would tell a guesser it had guessed right.
    expect((await from('127.0.0.2', '/ui/runs', login)).status).toBe(429);
    expect((await from('127.0.0.2', '/runs', bearer)).status).toBe(429);

    // Another client is served as before, and its own refusals are still 401.
    expect((await from('127.0.0.3', '/ui/runs', login)).status).toBe(200);
    expect((await from('127.0.0.3', '/runs', bearer)).status).toBe(200);
    expect((await from('127.0.0.3', '/runs', { authorization: `Bearer ${TOKEN}x` })).status).toBe(401);

    // The API's bearer token: the same limit, on any route (the run API, then /metrics).
    for (let i = 0; i < 10; i++) expect((await from('127.0.0.4', '/runs', { authorization: `Bearer guess-${i}-0123456789` })).status).toBe(401);
    const metrics = await from('127.0.0.4', '/metrics', { authorization: 'Bearer guess-10-0123456789' });
    expect([metrics.status, metrics.headers.get('retry-after') !== null]).toEqual([429, true]);

    // A request without credentials guesses nothing (a browser's first, before it asks for the login): never throttled.
    for (let i = 0; i < 15; i++) expect((await from('127.0.0.5', '/ui/queues/', {})).status).toBe(401);
    expect((await from('127.0.0.5', '/ui/queues/', login)).status).toBe(200);

    expect(await s.stop()).toBe(0);
    const log = s.stderr();
    expect(log.match(/too many refused credentials: client locked out/g)).toHaveLength(2);
    expect(log).toMatch(/"client":"127\.0\.0\.2"/);
    for (const secret of [PASSWORD, WRONG_PASSWORD, TOKEN]) expect(log).not.toContain(secret);
  });

  it('refuses an API_TOKEN or DASHBOARD_PASSWORD shorter than 16 characters at start, naming it and not its value (exit 2)', async () => {
    const port = String(await freePort());
    const shortToken = await runCli(['serve', '--port', port], { API_TOKEN: 'fifteen-chars-x', DASHBOARD_USER: '', DASHBOARD_PASSWORD: '' });
    expect(shortToken.code).toBe(2);
    expect(shortToken.stderr).toMatch(/API_TOKEN is 15 characters long: set one of 16 characters at least.*\[E_CONFIG\]/);
    expect(shortToken.stderr).not.toContain('fifteen-chars-x');
    const shortPassword = await runCli(['serve', '--port', port], { API_TOKEN: TOKEN, DASHBOARD_USER: USER, DASHBOARD_PASSWORD: 'pw' });
    expect(shortPassword.code).toBe(2);
    expect(shortPassword.stderr).toMatch(/DASHBOARD_PASSWORD is 2 characters long.*\[E_CONFIG\]/);

    // Sixteen are enough.
    await f.setup();
    const s = await serve({ ...f.env(), API_TOKEN: 'sixteen-chars-xx', DASHBOARD_USER: '', DASHBOARD_PASSWORD: '' });
    expect((await fetchFrom('127.0.0.1', `${s.url}/runs`, { headers: { authorization: 'Bearer sixteen-chars-xx' } })).status).toBe(200);
    expect(await s.stop()).toBe(0);
  });

  it('with --queue-actions, allows retrying failed jobs, removing, cleaning, pausing and resuming, and refuses every other change: no job added or changed', async () => {
    await f.setup();
    const { schedules, failedIds, completedId } = await jobsToActOn();
    await f.queue.enqueue({ input: '/in/rentals.csv', model: 'mindsdb/home_rentals_model', out: '/out', options: { runId: 'waiting-run' } });
    const s = await serve({ ...f.env(), ...CREDENTIALS }, ['--queue-actions']);
    const act = (method: string, path: string, body?: unknown) =>
      fetchFrom('127.0.0.1', `${s.url}/ui/queues/api/queues/${path}`, {
        method,
        headers: { ...login, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });

    const before = await redisState();
    const forbidden: [string, string, unknown?][] = [
      ['POST', 'runs/add', { name: 'run', data: { runId: 'dashboard-run', request: { input: '/in/x.csv', model: 'm/m', out: '/out', options: {} } } }],
      ['POST', 'segments/add', { name: 'segment', data: {} }],
      ['PUT', 'runs/promote'],
      ['PUT', 'runs/waiting-run/promote'],
      ['PATCH', 'runs/waiting-run/update-data', { data: { runId: 'waiting-run', request: { input: '/etc/passwd' } } }],
      ['PATCH', 'runs/waiting-run/delay', { delay: 1000 }],
      ['PATCH', 'runs/waiting-run/priority', { priority: 1 }],
      ['PUT', 'runs/waiting-run/remove-unprocessed-children'],
      ['PUT', 'runs/empty'],
      ['PUT', 'runs/obliterate', {}],
      ['PUT', 'runs/concurrency', { concurrency: 1 }],
      ['PUT', 'runs/rate-limit', { max: 1, duration: 1000 }],
      ['PUT', 'runs/rate-limit/release'],
      ['PUT', 'schedules/job-schedulers/any/run'],
      ['PATCH', 'schedules/job-schedulers/any', { pattern: '* * * * *' }],
      ['PUT', 'schedules/job-schedulers/any/remove'],
      ['PUT', 'schedules/retry/completed'],
      ['PUT', `schedules/${completedId}/retry`],
    ];
    for (const [method, path, body] of forbidden) {
      const { status, text } = await act(method, path, body);
      expect([method, path, status]).toEqual([method, path, 403]);
      const refusal = JSON.parse(text) as { error: string; message: string };
      expect([path, refusal.error]).toEqual([path, 'E_NOT_ALLOWED']);
      expect(refusal.message).toMatch(/its actions are retry a failed job, remove a job, clean, pause and resume/);
    }
    // Not a key of Redis changed: no job added, promoted, edited or removed.
    expect(await redisState()).toEqual(before);

    // What is allowed still works.
    expect((await act('PUT', `schedules/${failedIds[0]}/retry`)).status).toBe(204);
    expect(await schedules.getJobState(failedIds[0])).toBe('waiting');
    expect((await act('PUT', 'schedules/retry/failed')).status).toBe(200);
    expect(await schedules.getJobState(failedIds[1])).toBe('waiting');
    expect((await act('PUT', `schedules/${failedIds[0]}/clean`)).status).toBe(204);
    expect(await schedules.getJob(failedIds[0])).toBeUndefined();
    // bull-board cleans jobs that ended 5 s ago or more.
    await waitFor(
      'the completed job to be cleaned',
      async () => (await act('PUT', 'schedules/clean/completed')).status === 200 && !(await schedules.getJob(completedId)),
      15_000,
      500,
    );
    const runs = new Queue(RUNS_QUEUE, { connection: { url: f.redisUrl }, prefix: f.prefix });
    expect((await act('PUT', 'runs/pause')).status).toBe(200);
    expect(await runs.isPaused()).toBe(true);
    expect((await act('PUT', 'runs/resume')).status).toBe(200);
    expect(await runs.isPaused()).toBe(false);
    expect((await act('PUT', 'pause')).status).toBe(200);
    expect(await runs.isPaused()).toBe(true);
    expect((await act('PUT', 'resume')).status).toBe(200);
    expect(await runs.isPaused()).toBe(false);
    expect(Object.values(await runs.getJobCounts()).reduce((a, b) => a + b, 0)).toBe(1);
    expect(await runs.getJobState('waiting-run')).toBe('prioritized');
    await Promise.all([runs.close(), schedules.close()]);
    expect(await s.stop()).toBe(0);

    // Without --queue-actions, nothing but reads: bull-board refuses its actions (405), and the rest is refused as above.
    const readOnly = await serve({ ...f.env(), ...CREDENTIALS });
    const ask = (method: string, path: string) => fetchFrom('127.0.0.1', `${readOnly.url}/ui/queues/api/queues/${path}`, { method, headers: login });
    expect((await ask('PUT', 'runs/pause')).status).toBe(405);
    expect((await ask('POST', 'runs/add')).status).toBe(403);
    expect(await readOnly.stop()).toBe(0);
  });
});

/** Two failed jobs and a completed one on the schedules queue, made by a real BullMQ worker. */
async function jobsToActOn(): Promise<{ schedules: Queue; failedIds: string[]; completedId: string }> {
  const connection = { url: f.redisUrl };
  const schedules = new Queue(SCHEDULES_QUEUE, { connection, prefix: f.prefix });
  const added = await Promise.all(['bad-1', 'bad-2', 'ok'].map((name) => schedules.add(name, {}, { jobId: name })));
  const worker = new Worker(SCHEDULES_QUEUE, (job) => (job.name.startsWith('bad') ? Promise.reject(new Error('failing on purpose')) : Promise.resolve()), {
    connection,
    prefix: f.prefix,
  });
  await waitFor('the jobs to end', async () => {
    const counts = await schedules.getJobCounts('failed', 'completed');
    return counts.failed === 2 && counts.completed === 1;
  });
  await worker.close();
  return { schedules, failedIds: added.slice(0, 2).map((j) => j.id!), completedId: added[2].id! };
}

/** Every key under the test's prefix with what it holds (event streams left out: reads may not add to them, but they are not jobs). */
async function redisState(): Promise<Record<string, unknown>> {
  const redis = new Redis(f.redisUrl);
  try {
    const state: Record<string, unknown> = {};
    for (const key of (await redis.keys(`${f.prefix}:*`)).sort()) {
      const type = await redis.type(key);
      if (type === 'hash') state[key] = await redis.hgetall(key);
      else if (type === 'list') state[key] = await redis.lrange(key, 0, -1);
      else if (type === 'zset') state[key] = await redis.zrange(key, 0, -1, 'WITHSCORES');
      else if (type === 'set') state[key] = (await redis.smembers(key)).sort();
      else if (type === 'string') state[key] = await redis.get(key);
      else state[key] = type;
    }
    return state;
  } finally {
    redis.disconnect();
  }
}
