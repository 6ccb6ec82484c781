import { type Limits, processConcurrency, type RunOptions } from '../config/index.js';
import { z } from 'zod';
import { ROW_NUMBER_COLUMN } from '../formats/index.js';
import type { Logger } from '../log.js';
import { AUTO_SLOTS, fixedSlots, maxConcurrency, predictBody, type RequestSlots } from '../service/index.js';
import { formatLocation, type Storage } from '../storage/index.js';
import { outputGroups } from './assemble.js';
import { quarantineRisk } from './error-allowance.js';
import { preflight } from './preflight.js';
import type { PreparedRun } from './prepared-run.js';
import type { InputPlan } from './plan.js';
import { planRun } from './prepare-run.js';
import { readSegment } from './read-segment.js';
import type { PredictorFactory } from './predictor.js';
import { RequestBatchBuilder, type RequestBatch } from './request-batch.js';
import { RequestEncoder } from './request-row.js';
import { estimateRun, rowIdDigits } from './run-estimate.js';
import type { RunRequest } from './run-request.js';
import { batchIsFull, scoreBatch, type SegmentScoring } from './score-batch.js';
import { emptyCounts } from './segment-counts.js';
import { withinBounds, type WorkBounds } from './work-bounds.js';

const range = z.object({ low: z.number(), expected: z.number(), high: z.number() });

/** A dry run's estimate of the run: each figure low / expected / high, and what the range rests on. */
export const runEstimateSchema = z.object({
  /** Predict calls (retries and splits not counted): rows per request follow the canary's bytes per row. */
  requests: range,
  /** Rows to score: planning counted them all, so the three are equal. */
  rows: range,
  /** Request body bytes (envelope included). */
  bytesSent: range,
  /** The run's duration from its start to its end, as its manifest's durationMs counts it. */
  durationMs: range.describe("the run's duration in ms (its manifest's durationMs), low / expected / high"),
  basis: z.object({
    /** Canary batches sent and their rows. */
    canaryBatches: z.int(),
    canaryRows: z.int(),
    /** The latencies (ms, nearest-rank percentiles) of the canary's requests after its first wave, and the range one request is assumed to take. */
    latencyMs: z.object({ samples: z.int(), min: z.number(), p50: z.number(), p90: z.number(), max: z.number(), assumed: range }),
    /** The concurrency the canary was sent at: its first wave of as many requests is the warm-up. */
    canaryConcurrency: z.int(),
    /** Time the canary's first wave took, in ms: connections opened, code compiled at both ends; the run's first wave pays it too. */
    warmUpMs: z.int(),
    /** The concurrency the run is assumed to have: --concurrency, or the level `auto` climbs to. */
    concurrency: z.int(),
    /** Time before the first request (describe, planning, the probe), measured once, in ms. */
    fixedMs: z.int(),
    /** What the range takes for granted, in words. */
    assumptions: z.array(z.string()),
  }),
});

/** What a dry run found: the plan's sizes, the canary batches' outcome and an estimate of the whole run. */
export const dryRunReportSchema = z.object({
  /** The input as named. */
  input: z.string(),
  files: z.array(z.object({ location: z.string(), rows: z.int(), format: z.string(), gzip: z.boolean() })),
  rows: z.int(),
  segments: z.int(),
  /** The output files by name, before --max-rows-per-file cuts them; `table <name>` for a run writing into a table (--out-table). */
  outputs: z.array(z.string()),
  /** The output's columns, in order. */
  columns: z.array(z.string()),
  /**
   * The canary: batches of the first rows, scored at once (see CANARY_BATCHES): their rows, how
   * they fared (quarantined counts the malformed rows among them, which are never sent, and the
   * rows the model refused), and the time they took.
   */
  canary: z.object({ batches: z.int(), rows: z.int(), scored: z.int(), quarantined: z.int(), ms: z.number() }),
  estimate: runEstimateSchema,
  model: z.object({ requested: z.string(), resolvedVersion: z.int().nullable(), rowIdMember: z.string().nullable() }),
  /** What the run would meet, in words: planning's warnings, then the canary's quarantined share when it is past --max-error-rate (see quarantineRisk). */
  warnings: z.array(z.string()),
});
export type DryRunReport = z.output<typeof dryRunReportSchema>;

export interface DryRunContext {
  storage: Storage;
  log: Logger;
  /** Builds the run's predictor (see serviceClientFactory). */
  predictorFor: PredictorFactory;
  signal?: AbortSignal;
  /** The deployment's bounds on sizes peers control (see LIMITS); DEFAULT_LIMITS when absent. */
  limits?: Limits;
  /** The work the dry run may do (`serve`'s, see dryRunBounds); none bounds it (the CLI's, on the user's own machine). */
  bounds?: WorkBounds;
}

/** Whose work the bounds bound, as E_LIMIT names it. */
const DRY_RUN_WORK = "this dry run's work on the server (`batch-scorer score --dry-run` runs one where the input is, unbounded)";

/**
 * Canary batches a dry run sends at most: enough latency samples to give a range, few enough that a
 * dry run costs at most this many predict requests of --batch-size rows (and --max-batch-bytes
 * bytes) each, beside planning's describe and one-row probe.
 */
export const CANARY_BATCHES = 8;

/**
 * Plans a run as `score` would (describe, the input's files and segments, the columns sent and
 * written) and scores up to CANARY_BATCHES canary batches of its first rows, up to half of them
 * at once (never more than the run's concurrency), writing nothing: no run folder, no staged
 * copies. Refuses what a run would refuse, with the same errors. Estimates the run from what
 * planning and the canary took (see estimateRun). With `ctx.bounds`, its time and the input
 * bytes planning reads are bounded: past either it stops, and fails E_LIMIT naming the setting.
 */
export async function dryRun(request: RunRequest, ctx: DryRunContext): Promise<DryRunReport> {
  if (!ctx.bounds) return plannedDryRun(request, ctx);
  return withinBounds(ctx.bounds, DRY_RUN_WORK, ctx.signal, (signal, onInputBytes) => plannedDryRun(request, { ...ctx, signal }, onInputBytes));
}

/** dryRun's work; `onInputBytes` hears the input bytes planning reads. */
async function plannedDryRun(request: RunRequest, ctx: DryRunContext, onInputBytes?: (bytes: number) => void): Promise<DryRunReport> {
  const { storage, signal } = ctx;
  const started = performance.now();
  await preflight(request, storage, signal);
  const log = ctx.log.child({ dryRun: true });
  const { options } = request;
  const concurrency = processConcurrency(options);
  // Sent at once, as the run sends its batches, so that the latency seen is the latency under load;
  // in two waves at least, so that half the canary goes over connections open and code compiled.
  const canaryConcurrency = Math.min(CANARY_BATCHES / 2, maxConcurrency(concurrency));
  const client = ctx.predictorFor(options, canaryConcurrency, log);
  try {
    const run = await planRun(request, 'dry-run', {
      storage,
      client,
      log,
      signal,
      ...(ctx.limits && { limits: ctx.limits }),
      ...(onInputBytes && { onInputBytes }),
    });
    const fixedMs = performance.now() - started;
    const rowIdMember = run.model.rowIdMember ?? undefined;
    const { batches, malformed } = await canaryBatches(storage, run, signal);
    const counts = emptyCounts();
    const slots = Math.max(1, Math.min(Math.floor(batches.length / 2), canaryConcurrency));
    // The first wave's times, then the rest's, by the order the requests took their slots.
    const times: number[] = [];
    const scoring: SegmentScoring = {
      client,
      model: { project: run.model.project, model: run.model.name, version: run.model.resolvedVersion ?? undefined },
      envelope: options.envelope,
      params: options.params,
      rowIdMember,
      rowIdEchoed: run.model.rowIdEchoed,
      schema: run.schema,
      slots: timedSlots(fixedSlots(slots), (i, ms) => (times[i] = ms)),
      counts,
      log,
      signal,
    };
    const canaryStarted = performance.now();
    const outcomes = (await Promise.all(batches.map((b) => scoreBatch(scoring, b.batch)))).flat();
    const ms = performance.now() - canaryStarted;
    const scored = outcomes.filter((o) => 'predictions' in o).length;
    // A canary too small for a second wave: its first requests' times stand for all (a pessimistic
    // estimate). An exchange that failed without an answer (a reset) left a hole: it has no time.
    const timed = (from: number, to?: number) => times.slice(from, to).filter(Number.isFinite);
    const [warmUp, latenciesMs] = times.length > slots ? [timed(0, slots), timed(slots)] : [[], timed(0)];
    const warmUpMs = Math.max(0, ...warmUp);
    const estimate = estimateRun({
      segments: run.input.segments.map(({ firstRow, rows }) => ({ firstRow, rows })),
      rowIds: rowIdMember !== undefined,
      limits: options,
      batches: batches.map(({ batch, bytes }) => ({
        rows: batch.rows.length,
        bytes: rowIdMember === undefined ? bytes : bytes - batch.rows.reduce((n, row) => n + rowIdDigits(row.index, 1), 0),
      })),
      envelopeBytes: predictBody('', options).length,
      latenciesMs,
      fixedMs,
      warmUpMs,
      concurrency,
    });
    const quarantined = outcomes.length - scored + malformed;
    const risk = quarantineRisk({ rows: scored + quarantined, quarantined }, run.input.rows, options.maxErrorRate);
    const extension = `${run.outputFormat}${run.output.compress === 'gzip' ? '.gz' : ''}`;
    return {
      input: run.input.location,
      files: plannedFiles(run.input),
      rows: run.input.rows,
      segments: run.input.segments.length,
      outputs: run.output.tableColumns ? [`table ${run.request.options.outTable}`] : outputGroups(run).map((g) => `${g.stem}.${extension}`),
      columns: [...(run.output.rowNumber ? [ROW_NUMBER_COLUMN] : []), ...run.output.inputColumns, ...run.schema.columns],
      canary: { batches: batches.length, rows: scored + quarantined, scored, quarantined, ms: Math.round(ms) },
      estimate: {
        requests: estimate.requests,
        rows: estimate.rows,
        bytesSent: estimate.bytesSent,
        durationMs: estimate.durationMs,
        basis: {
          canaryBatches: batches.length,
          canaryRows: outcomes.length,
          latencyMs: estimate.latencyMs,
          canaryConcurrency: scoring.slots.concurrency,
          concurrency: estimate.concurrency,
          warmUpMs: Math.round(warmUpMs),
          fixedMs: Math.round(fixedMs),
          assumptions: assumptions(options, latenciesMs.length),
        },
      },
      model: { requested: run.model.requested, resolvedVersion: run.model.resolvedVersion, rowIdMember: run.model.rowIdMember ?? null },
      warnings: [...run.warnings, ...(risk === undefined ? [] : [risk])],
    };
  } finally {
    await client.close();
  }
}

/**
 * The first CANARY_BATCHES batches of the input, cut as the run cuts them (by --batch-size and
 * --max-batch-bytes, never across a segment's end), each with its rows' JSON bytes. Malformed rows
 * are left out, as they are never sent: `malformed` counts those met among the batches' rows,
 * which the run quarantines.
 */
async function canaryBatches(
  storage: Storage,
  run: PreparedRun,
  signal: AbortSignal | undefined,
): Promise<{ batches: { batch: RequestBatch; bytes: number }[]; malformed: number }> {
  const { options } = run.request;
  const encoder = new RequestEncoder(run.sent, run.input.syntax === 'csv', run.model.rowIdMember ?? undefined);
  const batches: { batch: RequestBatch; bytes: number }[] = [];
  const builder = new RequestBatchBuilder();
  let malformed = 0;
  const take = () => {
    if (builder.length > 0) batches.push({ bytes: builder.bytes, batch: builder.take() });
  };
  for (let index = 0; index < run.input.segments.length && batches.length < CANARY_BATCHES; index++) {
    read: for await (const rows of readSegment(storage, run.input, index, options, signal)) {
      for (const row of rows) {
        if (!row.record) {
          malformed++;
          continue;
        }
        if (batchIsFull(builder.length, builder.bytes, encoder.encode(row.record, row.index), options)) {
          take();
          if (batches.length === CANARY_BATCHES) break read;
        }
        builder.add(row, encoder);
      }
    }
    take();
  }
  return { batches, malformed };
}

/** What the estimate takes for granted, for people. */
function assumptions(options: RunOptions, samples: number): string[] {
  return [
    'rows exact: planning counted every row',
    'no retries: the service answers every request, at the latency the canary met',
    'the rest of the input has rows like its first ones (bytes per row)',
    processConcurrency(options) === 'auto'
      ? `concurrency auto climbs from ${AUTO_SLOTS.initial} by one slot per round trip to ${AUTO_SLOTS.max}, meeting no overload`
      : `concurrency ${processConcurrency(options)} kept busy throughout`,
    'writing the output is quick next to scoring (it is not measured)',
    ...(samples < 4 ? [`only ${samples} latency samples: the range is a rough one`] : []),
    ...(options.compareModel === undefined ? [] : ['--compare-model doubles the requests; not counted']),
  ];
}

/**
 * Slots that time each exchange while it holds its slot: the time a request keeps a slot from
 * the next one, which is what the run's duration adds up (not the wait for a slot, nor the reading
 * of the answer after it). `onTime` hears the exchange's number, by the order slots were taken.
 */
function timedSlots(slots: RequestSlots, onTime: (index: number, ms: number) => void): RequestSlots {
  let taken = 0;
  return {
    run: (fn, signal) =>
      slots.run(async () => {
        const index = taken++;
        const started = performance.now();
        const result = await fn();
        onTime(index, performance.now() - started);
        return result;
      }, signal),
    observe: (outcome, ms) => slots.observe(outcome, ms),
    get concurrency() {
      return slots.concurrency;
    },
  };
}

/** The input's files as the report lists them; none for a database input. */
function plannedFiles(input: InputPlan): DryRunReport['files'] {
  if (input.syntax === 'postgresql') return [];
  return input.files.map((f) => ({ location: formatLocation(f.location), rows: f.rows, format: f.syntax, gzip: f.gzip }));
}
