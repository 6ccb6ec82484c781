import { text } from 'node:stream/consumers';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseRunOptions, type RunOptionsInput } from '../../src/config/run-options.js';
import { BatchScorerError, errorCode, type ErrorCode } from '../../src/errors.js';
import { endEvent, startEvent, type RunEvent } from '../../src/lineage/run-event.js';
import { silentLogger } from '../../src/log.js';
import { runEndOf } from '../../src/notify/run-end.js';
import { webhookBody, type WebhookBody } from '../../src/notify/webhook-body.js';
import { deliveryId } from '../../src/notify/webhook-delivery.js';
import { judgeRun, type Verdict } from '../../src/scoring/judge-run.js';
import { readManifest, type Manifest } from '../../src/scoring/manifest.js';
import type { OwnPredictor, PredictorFactory } from '../../src/scoring/predictor.js';
import { runFiles } from '../../src/scoring/prepared-run.js';
import type { EndingState } from '../../src/scoring/run-lifecycle.js';
import type { RunListener } from '../../src/scoring/run-listener.js';
import { runResult } from '../../src/scoring/run-result.js';
import { scoreRun } from '../../src/scoring/score-run.js';
import { formatLocation, parseLocation, type Location } from '../../src/storage/location.js';
import type { Storage } from '../../src/storage/storage-types.js';
import { fakeService } from '../helpers/fake-predictor.js';
import { BASELINE_RUN, endingOptions, ENDINGS, expectOneEndPerAttempt, modelRunInput, RunModel, type Ending, type Told } from '../helpers/lifecycle-model.js';
import { MemoryStorage } from '../helpers/memory-storage.js';
import { rentalsText } from '../helpers/scoring.js';

// The lifecycle of one run id in direct mode (`score`, `accept`, `reject`), driven by random
// sequences of requests and checked after each against a model (lifecycle-model.ts): the
// listener, the OpenLineage events and webhook bodies made from what it heard, the manifest in
// the run folder and its RunResult all tell the same states in the same order, each attempt
// starts and ends once, and a refused request tells nothing and leaves the folder as it was.
// `score` stopped by its signal (SIGINT) ends failed with E_ABORTED (docs/scoring.md), not
// cancelled; a crash is a process that stops answering at once (see CrashingProcess).

const OUT = '/memory/out';
const RUN = 'r';
const FOLDER = runFiles.folder(OUT, RUN);
/** The run's input: every sqft half again as large as the baseline's (it drifts), one row in 60 failing the engine. */
const INPUT = '/memory/in/shifted.csv';
/** The baseline run's input, clean; also the "other input" a refused request asks for. */
const BASE_INPUT = '/memory/in/rentals.csv';
const MISSING = '/memory/in/missing.csv';
const ROWS = 1_200;
/**
 * 20 segments of 3 batches, each with one failing row: an attempt that does not end the run keeps
 * a few batches at most (its cap, stop or crash comes by the 3rd predict call; past
 * --max-error-rate 0, the failing row stops its segment), so the 10 requests of a sequence never
 * finish every segment by chance: each attempt ends as it was asked to.
 */
const SHAPE: RunOptionsInput = { segmentRows: 60, batchSize: 20, maxErrorRate: 0.05 };
const NAMESPACE = 'model-test';
const HOOK = 'https://hooks.example/run-ended';
/** The state each lineage event type tells. */
const LINEAGE_TYPE: Record<EndingState, RunEvent['eventType']> = {
  succeeded: 'COMPLETE',
  failed: 'FAIL',
  cancelled: 'ABORT',
  expired: 'ABORT',
  held: 'OTHER',
};
/** The code the error of an attempt made to end so names. */
const ENDING_CODE: Record<Exclude<Ending, 'succeeded' | 'crash'>, ErrorCode> = {
  stopped: 'E_ABORTED',
  expired: 'E_EXPIRED',
  'error-rate': 'E_ERROR_RATE',
  held: 'E_DRIFT',
};

/** Inputs, and the baseline run `base` (scored once, copied into each sequence's storage). */
let template: MemoryStorage;
beforeAll(async () => {
  template = new MemoryStorage();
  await template.write(parseLocation(BASE_INPUT), rentalsText(ROWS));
  await template.write(parseLocation(INPUT), modelRunInput(ROWS, SHAPE.segmentRows!));
  await scoreRun(request(BASE_INPUT, { runId: BASELINE_RUN }), { storage: template, log: silentLogger, predictorFor: fakeService().predictorFor });
});

function request(input: string, options: RunOptionsInput) {
  return { input, out: OUT, model: 'mindsdb/home_rentals_model', options: parseRunOptions({ runId: RUN, ...SHAPE, ...options }) };
}

/** What one sequence observes: its storage, and each observer's record, in order. */
interface World {
  storage: MemoryStorage;
  listener: RunListener;
  /** What the listener heard. */
  heard: Told[];
  /** The manifests it heard end the run. */
  ended: Manifest[];
  /** The OpenLineage events made from what it heard (`null`: an end no event could be made of). */
  lineage: (RunEvent | null)[];
  /** The webhook bodies made from the ends it heard. */
  webhooks: WebhookBody[];
}

async function newWorld(): Promise<World> {
  const storage = new MemoryStorage();
  for (const key of template.keys()) await storage.write(parseLocation(key), await text(await template.read(parseLocation(key))));
  const [heard, ended, lineage, webhooks]: [Told[], Manifest[], (RunEvent | null)[], WebhookBody[]] = [[], [], [], []];
  const listener: RunListener = {
    runStarted: (start) => {
      heard.push({ kind: 'start', attempt: start.attempt });
      lineage.push(startEvent(start, { namespace: NAMESPACE }));
    },
    runEnded: (manifest) => {
      heard.push({ kind: 'end', attempt: manifest.attempt ?? 1, state: manifest.state });
      ended.push(manifest);
      lineage.push(endEvent(manifest, { namespace: NAMESPACE }) ?? null);
      const end = runEndOf(manifest);
      webhooks.push(webhookBody(end, deliveryId(end, HOOK), undefined));
    },
  };
  return { storage, listener, heard, ended, lineage, webhooks };
}

/** Every file of the run folder, `_work` too, with its bytes and modification time: what a refused request must leave as it was. */
async function folderSnapshot(storage: MemoryStorage): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  const below = `${formatLocation(FOLDER)}/`;
  for (const key of storage.keys().filter((k) => k.startsWith(below))) {
    const loc = parseLocation(key);
    files[key] = `${(await storage.stat(loc)).mtimeMs} ${await storage.readText(loc)}`;
  }
  return files;
}

/** What every observer says after a request, checked against the model. */
async function expectObserversAgree(model: RunModel, world: World, toldBefore: number): Promise<void> {
  expect(world.heard, 'the listener').toEqual(model.told);
  expectOneEndPerAttempt(world.heard);
  expect(
    world.lineage.map((e) => e && [e.eventType, e.run.facets.batchScorer.state]),
    'lineage events',
  ).toEqual(model.told.map((t) => (t.kind === 'start' ? ['START', undefined] : [LINEAGE_TYPE[t.state], t.state])));
  // Each attempt is its own OpenLineage run: one START and one terminal event per run id (a held attempt's OTHER aside).
  const byRun = new Map<string, RunEvent[]>();
  for (const e of world.lineage) if (e) byRun.set(e.run.runId, [...(byRun.get(e.run.runId) ?? []), e]);
  expect(byRun.size, 'one OpenLineage run per attempt').toBe(model.told.filter((t) => t.kind === 'start').length);
  for (const [id, events] of byRun) {
    const types = events.map((e) => e.eventType);
    expect(
      types.filter((t) => t === 'START'),
      `START of ${id}`,
    ).toHaveLength(1);
    expect(types.filter((t) => t === 'COMPLETE' || t === 'FAIL' || t === 'ABORT').length, `terminal events of ${id}`).toBeLessThanOrEqual(1);
  }
  const ends = model.told.filter((t) => t.kind === 'end');
  expect(
    world.webhooks.map((b) => [b.event, b.state, b.result.state, b.result.attempt]),
    'webhook bodies',
  ).toEqual(ends.map((t) => [t.state, t.state, t.state, t.attempt]));
  // Each end is its own delivery: one told with another's id would be dropped by the receiver as a duplicate.
  expect(new Set(world.webhooks.map((b) => b.deliveryId)).size, 'webhook delivery ids').toBe(world.webhooks.length);

  const manifest = await readManifest(world.storage, FOLDER);
  const last = model.lastRecorded;
  expect(manifest && [manifest.state, manifest.attempt], 'the manifest in the run folder').toEqual(last && [last.state, last.attempt]);
  if (manifest) expect(runResult(manifest), 'runResult of the manifest').toMatchObject({ state: manifest.state, attempt: manifest.attempt });
  // An end told by this request is the manifest the run folder keeps, as written.
  if (model.told.slice(toldBefore).some((t) => t.kind === 'end')) {
    const { schemaVersion: _, ...written } = JSON.parse(await world.storage.readText(runFiles.manifest(FOLDER))) as Record<string, unknown>;
    expect(JSON.parse(JSON.stringify(world.ended.at(-1))), 'the manifest heard').toEqual(written);
  }
}

/** Expects a request to have been refused with one of `codes`, leaving the run folder as `before` and telling nothing. */
async function expectRefused(outcome: unknown, codes: readonly ErrorCode[], world: World, before: Record<string, string>): Promise<void> {
  expect(outcome, 'a refused request').toBeInstanceOf(BatchScorerError);
  expect(codes).toContain(errorCode(outcome));
  expect(await folderSnapshot(world.storage), 'the run folder after a refused request').toEqual(before);
}

/** Never settles: what a process that died answers. */
const never = <T>() => new Promise<T>(() => undefined);

/**
 * A `score` process that dies at its `at`-th predict call: from then on neither its storage nor
 * its model service answers a call (each never settles), so its run stops where it is, telling and
 * recording nothing, as a killed process's would; the storage lives on for the next process.
 * Writes are buffered before they reach the storage, so that one the crash cut short never lands
 * (a write is atomic: all or nothing).
 */
class CrashingProcess {
  private dead = false;
  private calls = 0;
  private readonly inflight = new Set<Promise<unknown>>();
  private died!: () => void;
  /** Resolves once the process died. */
  readonly crashed = new Promise<void>((resolve) => (this.died = resolve));

  constructor(
    private readonly shared: Storage,
    private readonly at: number,
  ) {}

  /** Resolves once the storage calls taken before the crash have settled: nothing of the dead process lands after. */
  async gone(): Promise<void> {
    await Promise.allSettled([...this.inflight]);
  }

  readonly storage: Storage = {
    stat: (loc, signal) => this.call(() => this.shared.stat(loc, signal)),
    exists: (loc, signal) => this.call(() => this.shared.exists(loc, signal)),
    read: (loc, options) => this.call(() => this.shared.read(loc, options)),
    readText: (loc, signal) => this.call(() => this.shared.readText(loc, signal)),
    write: async (loc, body, options) => {
      const bytes = typeof body === 'string' || body instanceof Uint8Array ? body : Buffer.concat(await body.toArray());
      return this.call(() => this.shared.write(loc, bytes, options));
    },
    list: (prefix, signal) => this.listing(prefix, signal),
    isEmpty: (prefix, signal) => this.call(() => this.shared.isEmpty(prefix, signal)),
    create: (loc, body, signal) => this.call(() => this.shared.create(loc, body, signal)),
    remove: (loc) => this.call(() => this.shared.remove(loc)),
    removeFiles: (prefix, which) => this.call(() => this.shared.removeFiles(prefix, which)),
    whyUnwritable: (prefix, signal) => this.call(() => this.shared.whyUnwritable(prefix, signal)),
    freeBytes: (prefix, signal) => this.call(() => this.shared.freeBytes(prefix, signal)),
    close: () => undefined,
  };

  /** The factory's predictors, dead with the process: its `at`-th predict call kills it. */
  predictorFor(factory: PredictorFactory): PredictorFactory {
    return (options, connections, log) => {
      const own = factory(options, connections, log);
      const predicting = <T>(call: () => Promise<T>): Promise<T> => {
        if (++this.calls === this.at) this.die();
        return this.dead ? never() : call();
      };
      const predictor: OwnPredictor = {
        displayUrl: own.displayUrl,
        describe: (ref, body, o) => (this.dead ? never() : own.describe(ref, body, o)),
        predict: (ref, rows, o) => predicting(() => own.predict(ref, rows, o)),
        predictMembers: (ref, rows, members, o) => predicting(() => own.predictMembers(ref, rows, members, o)),
        takeConnectionsOpened: () => own.takeConnectionsOpened(),
        close: () => (this.dead ? never() : own.close()),
      };
      return predictor;
    };
  }

  private die(): void {
    this.dead = true;
    this.died();
  }

  private call<T>(make: () => Promise<T>): Promise<T> {
    if (this.dead) return never();
    const call = make();
    this.inflight.add(call);
    void call.finally(() => this.inflight.delete(call)).catch(() => undefined);
    return call;
  }

  private async *listing(prefix: Location, signal?: AbortSignal) {
    for await (const file of this.shared.list(prefix, signal)) {
      if (this.dead) await never();
      yield file;
    }
  }
}

/** A request to score the run, made to end as `ending` (see Ending): `at` is the predict call a stop or crash comes at, or the --max-requests of a cap. */
class Score implements fc.AsyncCommand<RunModel, World> {
  constructor(
    readonly ending: Ending,
    readonly at: number,
    readonly cap: 'deadline' | 'requests',
  ) {}

  check = () => true;

  async run(model: RunModel, world: World): Promise<void> {
    const before = await folderSnapshot(world.storage);
    const told = model.told.length;
    const outcome = await this.score(world);
    if (model.refusesScore) {
      await expectRefused(outcome, [model.state === 'succeeded' ? 'E_RUN_EXISTS' : 'E_RUN_CONFLICT'], world, before);
    } else if (this.ending === 'crash') {
      expect(outcome, 'the crashed run').toBe('crashed');
    } else if (this.ending === 'succeeded') {
      expect(outcome, 'the run').toMatchObject({ state: 'succeeded' });
    } else {
      expect(errorCode(outcome), `the run's error: ${String(outcome)}`).toBe(ENDING_CODE[this.ending]);
    }
    model.score(this.ending);
    await expectObserversAgree(model, world, told);
  }

  /** Scores the run as asked: its manifest, the error it failed with, or `crashed`. */
  private async score(world: World): Promise<unknown> {
    const stop = new AbortController();
    const service = fakeService({ onPredict: ({ number }) => this.ending === 'stopped' && number === this.at && stop.abort() });
    const options = endingOptions(this.ending, this.cap === 'deadline' ? 'deadline' : this.at);
    const dying = this.ending === 'crash' ? new CrashingProcess(world.storage, this.at) : undefined;
    const scoring = scoreRun(request(INPUT, options), {
      storage: dying?.storage ?? world.storage,
      log: silentLogger,
      predictorFor: dying?.predictorFor(service.predictorFor) ?? service.predictorFor,
      signal: stop.signal,
      listener: world.listener,
    }).catch((err: unknown) => err);
    if (!dying) return scoring;
    const first = await Promise.race([scoring, dying.crashed.then(() => 'crashed' as const)]);
    await dying.gone();
    return first;
  }

  toString(): string {
    const detail = this.ending === 'expired' ? ` ${this.cap === 'deadline' ? 'deadline past' : `max-requests ${this.at}`}` : '';
    return `score(${this.ending}${detail}${this.ending === 'stopped' || this.ending === 'crash' ? ` at predict ${this.at}` : ''})`;
  }
}

/** A request under the run's id that cannot be the run: another input (refused once the folder is the run's), or one that is missing. */
class OtherRequest implements fc.AsyncCommand<RunModel, World> {
  constructor(readonly input: 'other' | 'missing') {}

  check = (model: Readonly<RunModel>) => this.input === 'missing' || model.claimed;

  async run(model: RunModel, world: World): Promise<void> {
    const before = await folderSnapshot(world.storage);
    const told = model.told.length;
    const service = fakeService();
    const outcome = await scoreRun(request(this.input === 'other' ? BASE_INPUT : MISSING, {}), {
      storage: world.storage,
      log: silentLogger,
      predictorFor: service.predictorFor,
      listener: world.listener,
    }).catch((err: unknown) => err);
    // A held or rejected run is refused as such before its request is compared; the others for asking another output.
    const judgement = model.state === 'held' || model.judged === 'reject';
    const codes: ErrorCode[] = this.input === 'missing' ? ['E_INPUT_NOT_FOUND'] : judgement ? ['E_RUN_CONFLICT'] : ['E_RUN_EXISTS'];
    await expectRefused(outcome, codes, world, before);
    expect(service.stats.predictRequests + service.stats.describeRequests, 'calls of a refused request').toBe(0);
    await expectObserversAgree(model, world, told);
  }

  toString(): string {
    return `score(${this.input} input)`;
  }
}

/** `accept` or `reject`: judgeRun, then the run's end told as the CLI and the API tell it. */
class Judge implements fc.AsyncCommand<RunModel, World> {
  constructor(readonly verdict: Verdict) {}

  check = () => true;

  async run(model: RunModel, world: World): Promise<void> {
    const before = await folderSnapshot(world.storage);
    const told = model.told.length;
    const outcome = await judgeRun(world.storage, FOLDER, { verdict: this.verdict, by: 'model-test' }).catch((err: unknown) => err);
    const expected = model.judge(this.verdict);
    if (expected === 'refused') {
      await expectRefused(outcome, ['E_RUN_CONFLICT'], world, before);
    } else {
      expect(outcome, `${this.verdict} of a ${expected === 'already' ? 'run judged so already' : 'held run'}`).toMatchObject({
        already: expected === 'already',
      });
      const { manifest, already } = outcome as Awaited<ReturnType<typeof judgeRun>>;
      if (already) expect(await folderSnapshot(world.storage), 'the run folder judged again').toEqual(before);
      else world.listener.runEnded(manifest);
    }
    await expectObserversAgree(model, world, told);
  }

  toString(): string {
    return this.verdict;
  }
}

const score = fc
  .record({ ending: fc.constantFrom(...ENDINGS), at: fc.integer({ min: 1, max: 3 }), cap: fc.constantFrom('deadline' as const, 'requests' as const) })
  .map(({ ending, at, cap }) => new Score(ending, at, cap));
// Scores three times as often as the rest: they are what moves the run on.
const commands = fc
  .commands(
    [
      score,
      score,
      score,
      fc.constantFrom('other' as const, 'missing' as const).map((input) => new OtherRequest(input)),
      fc.constantFrom('accept' as const, 'reject' as const).map((verdict) => new Judge(verdict)),
    ],
    { maxCommands: 10 },
  )
  .filter((cmds) => [...cmds].length > 0);

/** Runs the requests on a storage of their own, against a model of the run: `score` interrupted ends failed (E_ABORTED). */
function runSequence(cmds: Iterable<fc.AsyncCommand<RunModel, World>>): Promise<void> {
  return fc.asyncModelRun(async () => ({ model: new RunModel('failed'), real: await newWorld() }), cmds);
}

describe('the run lifecycle in direct mode, against a model', () => {
  it('tells every observer the same states in order, one end per attempt, nothing for refused requests', async () => {
    await fc.assert(
      fc.asyncProperty(commands, (cmds) => runSequence(cmds)),
      { numRuns: 50 },
    );
  }, 60_000);

  // Sequences worth keeping whatever the draw: the ones that found a bug, and the rarer paths.
  it.each([
    [
      'a rejected run is refused for good, for its input or another',
      [new Score('held', 1, 'deadline'), new Judge('reject'), new Score('succeeded', 1, 'deadline'), new OtherRequest('other')],
    ],
    [
      'a crashed attempt goes on where it was, and ends once',
      [
        new Score('crash', 1, 'deadline'),
        new Score('crash', 3, 'deadline'),
        new Score('stopped', 2, 'deadline'),
        new Score('crash', 2, 'deadline'),
        new Score('succeeded', 1, 'deadline'),
      ],
    ],
    [
      'a held run accepted ends again as the same attempt, once',
      [
        new Score('error-rate', 1, 'deadline'),
        new Score('expired', 2, 'requests'),
        new Score('held', 1, 'deadline'),
        new Judge('accept'),
        new Judge('accept'),
        new Judge('reject'),
      ],
    ],
  ])('%s', (_, cmds) => runSequence(cmds));

  it('an attempt whose failure could not be recorded is not told to end: its resume goes on with it and ends it once', async () => {
    const world = await newWorld();
    const ctx = () => ({ storage: world.storage, log: silentLogger, predictorFor: fakeService().predictorFor, listener: world.listener });
    // A disk that refuses the segments' parts, and then the manifest of the failure.
    world.storage.failWrites((loc) => /\/_work\/segments\/|\/manifest\.json$/.test(formatLocation(loc)));
    expect(errorCode(await scoreRun(request(INPUT, {}), ctx()).catch((err: unknown) => err))).toBe('E_STORAGE');
    expect(await readManifest(world.storage, FOLDER), 'no manifest records attempt 1').toBeUndefined();
    world.storage.failWrites(undefined);
    await scoreRun(request(INPUT, {}), ctx());
    // Heard: start 1, then (the failure never recorded, so the resume goes on with attempt 1) end 1 succeeded.
    expect(world.heard).toEqual([
      { kind: 'start', attempt: 1 },
      { kind: 'end', attempt: 1, state: 'succeeded' },
    ]);
    expectOneEndPerAttempt(world.heard);
  });
});
