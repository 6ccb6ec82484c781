import { z } from 'zod';
import { ROW_NUMBER_COLUMN } from '../formats/row-writer.js';
import { processConcurrency } from '../config/run-options.js';
import type { Logger } from '../log.js';
import { fixedLimit, maxConcurrency } from '../service/request-limit.js';
import type { Storage } from '../storage/storage-types.js';
import { outputGroups } from './assemble.js';
import { preflight } from './preflight.js';
import { planRun } from './prepare-run.js';
import { readSegment } from './read-segment.js';
import type { PredictorFactory } from './predictor.js';
import { RequestBatchBuilder } from './request-batch.js';
import { RequestEncoder } from './request-row.js';
import type { RunRequest } from './run-request.js';
import { batchIsFull, scoreBatch } from './score-batch.js';
import { emptyCounts } from './segment-counts.js';

/** What a dry run found: the plan's sizes, one canary batch's outcome and an estimate of the whole run. */
export const dryRunReportSchema = z.object({
  /** The input as named. */
  input: z.string(),
  files: z.array(z.object({ location: z.string(), rows: z.int(), format: z.string(), gzip: z.boolean() })),
  rows: z.int(),
  segments: z.int(),
  /** Predict requests the run would send, at the canary's rows per request (retries and splits not counted). */
  requests: z.int(),
  /** The output files by name, before --max-rows-per-file cuts them. */
  outputs: z.array(z.string()),
  /** The output's columns, in order. */
  columns: z.array(z.string()),
  /** The first batch of the first segment, scored: its rows, how they fared, and its time. */
  canary: z.object({ rows: z.int(), scored: z.int(), quarantined: z.int(), ms: z.number() }),
  /** The concurrency the estimate assumes: the one asked, or `auto`'s ceiling. */
  concurrency: z.int(),
  /** requests / concurrency x the canary's time: a floor, as the service may slow under load. */
  estimatedSeconds: z.number(),
  model: z.object({ requested: z.string(), resolvedVersion: z.int().nullable(), rowIdMember: z.string().nullable() }),
  warnings: z.array(z.string()),
});
export type DryRunReport = z.output<typeof dryRunReportSchema>;

export interface DryRunContext {
  storage: Storage;
  log: Logger;
  /** Builds the run's predictor (see serviceClientFactory). */
  predictorFor: PredictorFactory;
  signal?: AbortSignal;
}

/**
 * Plans a run as `score` would (describe, the input's files and segments, the columns sent and
 * written) and scores one canary batch of its first rows, writing nothing: no run folder, no staged
 * copies. Refuses what a run would refuse, with the same errors.
 */
export async function dryRun(request: RunRequest, ctx: DryRunContext): Promise<DryRunReport> {
  const { storage, signal } = ctx;
  await preflight(request, storage, signal);
  const log = ctx.log.child({ dryRun: true });
  const { options } = request;
  const client = ctx.predictorFor(options, 1, log);
  try {
    const run = await planRun(request, 'dry-run', { storage, client, log, signal });
    const batch = new RequestBatchBuilder();
    const rowIdMember = run.model.rowIdMember ?? undefined;
    if (run.input.segments.length > 0) {
      const encoder = new RequestEncoder(run.sent, run.input.syntax === 'csv', rowIdMember);
      read: for await (const rows of readSegment(storage, run.input, 0, options, signal)) {
        for (const row of rows) {
          if (!row.record) continue;
          if (batchIsFull(batch.length, batch.bytes, encoder.encode(row.record, row.index), options)) break read;
          batch.add(row, encoder);
        }
      }
    }
    const { bytes } = batch;
    const canary = batch.take();
    const counts = emptyCounts();
    const started = performance.now();
    const outcomes =
      canary.rows.length === 0
        ? []
        : await scoreBatch(
            {
              client,
              model: { project: run.model.project, model: run.model.name, version: run.model.resolvedVersion ?? undefined },
              envelope: options.envelope,
              params: options.params,
              rowIdMember,
              rowIdEchoed: run.model.rowIdEchoed,
              schema: run.schema,
              limit: fixedLimit(1),
              counts,
              log,
              signal,
            },
            canary,
          );
    const ms = performance.now() - started;
    const scored = outcomes.filter((o) => 'predictions' in o).length;
    // Rows per request as the canary found them: --max-batch-bytes may cut batches below --batch-size.
    const perRequest = Math.max(
      1,
      canary.rows.length > 0 ? Math.min(options.batchSize, Math.floor(options.maxBatchBytes / (bytes / canary.rows.length))) : options.batchSize,
    );
    const requests = run.input.segments.reduce((n, s) => n + Math.ceil(s.rows / perRequest), 0);
    const concurrency = maxConcurrency(processConcurrency(options));
    const extension = `${run.outputFormat}${run.output.compress === 'gzip' ? '.gz' : ''}`;
    return {
      input: run.input.location,
      files: run.input.files.map((f) => ({ location: f.location, rows: f.rows, format: f.syntax, gzip: f.gzip })),
      rows: run.input.rows,
      segments: run.input.segments.length,
      requests,
      outputs: outputGroups(run).map((g) => `${g.stem}.${extension}`),
      columns: [...(run.output.rowNumber ? [ROW_NUMBER_COLUMN] : []), ...run.output.inputColumns, ...run.schema.columns],
      canary: { rows: canary.rows.length, scored, quarantined: outcomes.length - scored, ms: Math.round(ms) },
      concurrency,
      estimatedSeconds: Math.round(((requests / concurrency) * ms) / 100) / 10,
      model: { requested: run.model.requested, resolvedVersion: run.model.resolvedVersion, rowIdMember: run.model.rowIdMember ?? null },
      warnings: run.warnings,
    };
  } finally {
    await client.close();
  }
}
