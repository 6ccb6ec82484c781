import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Job, Queue } from 'bullmq';
import { CronExpressionParser } from 'cron-parser';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Manifest } from '../../src/scoring/manifest.js';
import { SCHEDULES_QUEUE } from '../../src/queue/queues.js';
import type { ScheduledRunResult } from '../../src/triggers/scheduled-run.js';
import { runCli, startCli } from '../helpers/cli.js';
import { useQueueFixture, waitFor, reasonOf } from '../helpers/queue.js';
import { tempDir, writeRentals } from '../helpers/scoring.js';

const MODEL = 'mindsdb/home_rentals_model';
let tmp: Awaited<ReturnType<typeof tempDir>>;

beforeAll(async () => {
  tmp = await tempDir();
});
afterAll(() => tmp.cleanup());

const f = useQueueFixture();
/** The schedules queue of the test's prefix, to look at what the CLI and the workers did. */
let schedules: Queue | undefined;
let redis: Redis | undefined;
afterEach(async () => {
  await schedules?.close();
  redis?.disconnect();
  schedules = undefined;
});

async function setup(): Promise<Queue> {
  await f.setup();
  redis = new Redis(f.redisUrl, { maxRetriesPerRequest: null });
  schedules = new Queue(SCHEDULES_QUEUE, { connection: redis, prefix: f.prefix });
  return schedules;
}

/** A jobs folder of its own holding one file of the given pipelines (YAML documents). */
async function jobsDir(...documents: string[]): Promise<string> {
  const dir = await mkdtemp(join(tmp.dir, 'jobs-'));
  await writeFile(join(dir, 'pipelines.yaml'), documents.join('---\n'));
  return dir;
}

function scheduled(name: string, cron: string, tz: string, input = `s3://data/${name}/{date}.csv`, output = `s3://results/${name}/`): string {
  return `name: ${name}\nmodel: ${MODEL}\ninput: ${input}\noutput: ${output}\nschedule: { cron: "${cron}", tz: ${tz} }\n`;
}
const DROP = `name: inbox\nmodel: ${MODEL}\ntrigger: { prefix: s3://inbox/, suffix: .csv }\noutput: s3://results/inbox/\n`;

interface SyncLine {
  id: string;
  change: string;
  next?: string;
}

/** `schedule sync --json` as a child process; fails the test unless it exits 0. */
async function sync(dir: string): Promise<{ lines: SyncLine[]; stderr: string }> {
  const r = await runCli(['schedule', 'sync', '--jobs', dir, '--json'], f.env());
  expect(r.stderr, r.stderr).not.toMatch(/\[E_/);
  expect(r.code).toBe(0);
  return { lines: JSON.parse(r.stdout) as SyncLine[], stderr: r.stderr };
}

const changes = (lines: SyncLine[]) => Object.fromEntries(lines.map((l) => [l.id, l.change]));

/** The schedulers' ids and crons, and the delayed jobs (id and creation time), sorted. */
async function state(queue: Queue) {
  const schedulers = (await queue.getJobSchedulers())
    .map((s) => ({ id: s.key, cron: s.pattern, tz: s.tz, next: s.next }))
    .sort((a, b) => a.id.localeCompare(b.id));
  const delayed = (await queue.getDelayed()).map((j) => ({ id: j.id, timestamp: j.timestamp })).sort((a, b) => String(a.id).localeCompare(String(b.id)));
  return { schedulers, delayed };
}

/** The day a moment falls on in a time zone, YYYY-MM-DD (Sweden writes dates the ISO way), `minusDays` before. */
function dayIn(at: Date, tz: string, minusDays = 0): string {
  const day = new Intl.DateTimeFormat('sv-SE', { timeZone: tz }).format(at);
  return new Date(Date.parse(`${day}T00:00:00Z`) - minusDays * 86_400_000).toISOString().slice(0, 10);
}

describe('schedule sync and schedule list', () => {
  it('sync twice leaves exactly the declared schedulers, the second changing nothing; a changed cron is updated, a pipeline gone is removed', async () => {
    const queue = await setup();
    const dir = await jobsDir(scheduled('early', '30 4 * * *', 'Europe/Paris'), scheduled('nightly', '0 2 * * *', 'UTC'), DROP);
    const first = await sync(dir);
    expect(changes(first.lines)).toEqual({ early: 'added', nightly: 'added' });
    const after1 = await state(queue);
    expect(after1.schedulers.map((s) => [s.id, s.cron, s.tz])).toEqual([
      ['early', '30 4 * * *', 'Europe/Paris'],
      ['nightly', '0 2 * * *', 'UTC'],
    ]);
    // One next job per scheduler, named for its next fire time.
    expect(after1.delayed.map((j) => j.id)).toEqual(after1.schedulers.map((s) => `repeat:${s.id}:${s.next}`));

    const second = await sync(dir);
    expect(changes(second.lines)).toEqual({ early: 'unchanged', nightly: 'unchanged' });
    expect(second.stderr).toContain('2 unchanged');
    // Not even replaced by the same: the next jobs are the ones the first sync made.
    expect(await state(queue)).toEqual(after1);

    const changed = await jobsDir(scheduled('early', '45 5 * * 1', 'Europe/Paris'), DROP);
    const third = await sync(changed);
    expect(changes(third.lines)).toEqual({ early: 'updated', nightly: 'removed' });
    const after3 = await state(queue);
    expect(after3.schedulers.map((s) => [s.id, s.cron])).toEqual([['early', '45 5 * * 1']]);
    expect(after3.delayed.map((j) => j.id)).toEqual([`repeat:early:${after3.schedulers[0].next}`]);
    expect(third.lines.find((l) => l.id === 'early')?.next).toBe(new Date(after3.schedulers[0].next!).toISOString());

    const none = await sync(await jobsDir(DROP));
    expect(changes(none.lines)).toEqual({ early: 'removed' });
    expect(none.stderr).toMatch(/no scheduled pipelines in \S+: removed all 1 scheduler\(s\)/);
    expect(await state(queue)).toEqual({ schedulers: [], delayed: [] });
  });

  it('three syncs at once leave the declared schedulers and one next job each, and remove the one no pipeline declares', async () => {
    const queue = await setup();
    await queue.upsertJobScheduler('stale', { pattern: '0 * * * *' }, { name: 'scheduled-run', data: {} });
    const dir = await jobsDir(
      scheduled('a', '0 2 * * *', 'UTC'),
      scheduled('b', '15 3 * * *', 'America/New_York'),
      scheduled('c', '0 */6 * * *', 'Asia/Tokyo'),
    );
    const cli = [1, 2, 3].map(() => startCli(['schedule', 'sync', '--jobs', dir, '--json'], f.env()));
    expect(await Promise.all(cli.map((c) => c.exited))).toEqual([0, 0, 0]);
    // Each says what it found: every declared scheduler added (or found added by another), the stale one removed once at least.
    for (const c of cli) expect(Object.keys(changes(JSON.parse(c.stdout()) as SyncLine[])).sort()).toEqual(expect.arrayContaining(['a', 'b', 'c']));
    const { schedulers, delayed } = await state(queue);
    expect(schedulers.map((s) => s.id)).toEqual(['a', 'b', 'c']);
    expect(delayed.map((j) => j.id)).toEqual(schedulers.map((s) => `repeat:${s.id}:${s.next}`));
    expect(await queue.getJobCounts('waiting', 'active', 'prioritized')).toEqual({ waiting: 0, active: 0, prioritized: 0 });
    expect(changes((await sync(dir)).lines)).toEqual({ a: 'unchanged', b: 'unchanged', c: 'unchanged' });
  });

  it("schedule list shows each scheduler's next fire time as cron-parser computes it, in UTC and on the schedule's clock, with its input and output", async () => {
    await setup();
    const pipelines = [
      { name: 'paris', cron: '30 4 * * *', tz: 'Europe/Paris', local: /T04:30:00\+0[12]:00$/ },
      { name: 'weekdays', cron: '0 9 * * 1-5', tz: 'America/New_York', local: /T09:00:00-0[45]:00$/ },
    ];
    await sync(await jobsDir(...pipelines.map((p) => scheduled(p.name, p.cron, p.tz))));
    const now = new Date();
    const list = await runCli(['schedule', 'list', '--json'], f.env());
    expect(list.code).toBe(0);
    const views = JSON.parse(list.stdout) as {
      id: string;
      cron: string;
      tz: string;
      next: string;
      nextLocal: string;
      template: { input: string; output: string };
    }[];
    expect(views.map((v) => v.id).sort()).toEqual(['paris', 'weekdays']);
    for (const p of pipelines) {
      const v = views.find((x) => x.id === p.name)!;
      const expected = CronExpressionParser.parse(p.cron, { tz: p.tz, currentDate: now }).next().toISOString();
      expect(v).toMatchObject({
        cron: p.cron,
        tz: p.tz,
        next: expected,
        template: { input: `s3://data/${p.name}/{date}.csv`, output: `s3://results/${p.name}/` },
      });
      expect(v.nextLocal).toMatch(p.local);
      expect(Date.parse(v.nextLocal)).toBe(Date.parse(expected!));
    }
    const text = await runCli(['schedule', 'list'], f.env());
    expect(text.code).toBe(0);
    const paris = views.find((v) => v.id === 'paris')!;
    expect(text.stdout).toContain(`paris  "30 4 * * *" Europe/Paris  next ${paris.next} (${paris.nextLocal} Europe/Paris)`);
    expect(text.stdout).toContain('input s3://data/paris/{date}.csv  output s3://results/paris/');
    expect(text.stderr).toContain('2 scheduler(s)');
  });
});

describe('scheduled runs', () => {
  it("a scheduler firing every 2 s: a worker turns each firing into a run of its own, {date} filled on the schedule's clock; the same firing taken again makes no second run", async () => {
    const queue = await setup();
    const tz = 'Asia/Tokyo';
    const inputs = join(tmp.dir, 'every-2s');
    await mkdir(inputs);
    // Yesterday, today and tomorrow in Tokyo: whichever day the firings fall on has its file.
    for (const [i, minus] of [-1, 0, 1].entries()) await writeRentals(join(inputs, `${dayIn(new Date(), tz, minus)}.csv`), 10 + i);
    const out = join(tmp.dir, 'every-2s-out');
    const dir = await jobsDir(scheduled('fast', '*/2 * * * * *', tz, join(inputs, '{date}.csv'), `${out}/`));
    expect(changes((await sync(dir)).lines)).toEqual({ fast: 'added' });
    // The worker makes each run as its jobs folder declares the pipeline.
    f.worker([], { JOBS_DIR: dir });

    const runs = await waitFor(
      'two scheduled runs to complete',
      async () => {
        const done = await f.queue.list({ pipeline: 'fast', state: 'succeeded' });
        return done.length >= 2 && done;
      },
      40_000,
    );
    // Stop the firings: a jobs folder without the pipeline removes its scheduler.
    expect(changes((await sync(await jobsDir(DROP))).lines)).toEqual({ fast: 'removed' });

    const [one, two] = runs.slice(-2);
    expect(one.runId).not.toBe(two.runId);
    for (const run of [one, two]) {
      const manifest = JSON.parse(await readFile(join(out, run.runId, 'manifest.json'), 'utf8')) as Manifest;
      expect(existsSync(join(out, run.runId, '_SUCCESS'))).toBe(true);
      expect(manifest.trigger).toMatchObject({ kind: 'schedule', pipeline: 'fast', cron: '*/2 * * * * *', tz });
      const fireTime = new Date((manifest.trigger as { fireTime: string }).fireTime);
      // The fired job is BullMQ's: named for the fire time, which is its prevMillis.
      const fired = await Job.fromId<unknown, ScheduledRunResult>(queue, `repeat:fast:${fireTime.getTime()}`);
      expect(fired?.opts.prevMillis).toBe(fireTime.getTime());
      expect(fired?.returnvalue).toMatchObject({ runId: run.runId, created: true });
      const stamp = fireTime.toISOString().replace(/[-:]/g, '').slice(0, 15);
      expect(run.runId).toBe(`fast-${fireTime.getUTCSeconds() === 0 ? stamp.slice(0, 13) : stamp}Z`);
      expect(manifest.input.location).toBe(join(inputs, `${dayIn(fireTime, tz)}.csv`));
      expect(manifest.counts?.rowsScored).toBe(manifest.input.rows);
    }

    // The same firing taken again (a retry of its job): it finds its run and makes no other.
    const fireMillis = Date.parse((one.trigger as { fireTime: string }).fireTime);
    const firedAgain = (await Job.fromId<unknown, ScheduledRunResult>(queue, `repeat:fast:${fireMillis}`))!;
    const firstFinish = firedAgain.finishedOn!;
    await firedAgain.retry('completed');
    const retried = await waitFor(
      'the retried fired job to complete again',
      async () => {
        const j = await Job.fromId<unknown, ScheduledRunResult>(queue, firedAgain.id!);
        return j && (await j.isCompleted()) && j.finishedOn! > firstFinish && j;
      },
      20_000,
    );
    expect(retried.returnvalue).toEqual({ runId: one.runId, created: false, input: join(inputs, `${dayIn(new Date(fireMillis), tz)}.csv`) });
    const still = await f.queue.get(one.runId);
    expect(still).toMatchObject({ state: 'succeeded', enqueuedAt: one.enqueuedAt, finishedAt: one.finishedAt });
  });

  it('a scheduled run whose input is missing fails at once with E_INPUT_NOT_FOUND, naming the filled location', async () => {
    const queue = await setup();
    const tz = 'America/New_York';
    const missing = join(tmp.dir, 'nowhere');
    const dir = await jobsDir(scheduled('gone', '0 3 * * *', tz, join(missing, '{date-1d}.csv'), `${join(tmp.dir, 'gone-out')}/`));
    await sync(dir);
    // Fired now instead of at 03:00: its next job promoted, through BullMQ's own clock.
    const [{ next }] = await queue.getJobSchedulers();
    const job = (await Job.fromId(queue, `repeat:gone:${next}`))!;
    await job.promote();
    const promotedAt = Date.now();
    f.worker([], { JOBS_DIR: dir });
    const fired = await waitFor('the fired job to complete', async () => {
      const j = await Job.fromId<unknown, ScheduledRunResult>(queue, job.id!);
      return j?.returnvalue && j.returnvalue;
    });
    const status = await f.finished(fired.runId, 30_000);
    expect(Date.now() - promotedAt).toBeLessThan(15_000);
    const filled = join(missing, `${dayIn(new Date(next!), tz, 1)}.csv`);
    expect(fired.input).toBe(filled);
    expect(status).toMatchObject({ state: 'failed', attempts: 1, pipeline: 'gone', trigger: { kind: 'schedule', fireTime: new Date(next!).toISOString() } });
    expect(reasonOf(status)).toContain(`${filled}: no such file or object [E_INPUT_NOT_FOUND]`);
    // The same firing taken again (a retry) leaves the failed run failed: it is not resumed.
    const firstFinish = (await Job.fromId(queue, job.id!))!.finishedOn!;
    await (await Job.fromId(queue, job.id!))!.retry('completed');
    const again = await waitFor('the fired job to complete again', async () => {
      const j = await Job.fromId<unknown, ScheduledRunResult>(queue, job.id!);
      return j && (await j.isCompleted()) && j.finishedOn! > firstFinish && j.returnvalue;
    });
    expect(again).toEqual({ runId: fired.runId, created: false, input: filled });
    expect(await f.queue.get(fired.runId)).toMatchObject({ state: 'failed', attempts: 1 });
  });
});
