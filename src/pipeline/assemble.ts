import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { BatchScorerError, NotFoundError, RunStateError } from '../errors.js';
import { createRowWriter } from '../formats/row-writer.js';
import { basename, formatLocation, type Location } from '../storage/location.js';
import type { Storage } from '../storage/storage-types.js';
import type { OutputFile } from './manifest.js';
import { runFiles, type PreparedRun } from './prepared-run.js';
import { sumCounts, type SegmentCounts } from './segment-counts.js';
import { readSegmentsDone, type SegmentDone } from './segment-done.js';

/**
 * The done markers of a run whose segments are all done, and their summed counts; an error names
 * the first segment that is not done.
 */
export async function readFinishedSegments(storage: Storage, run: PreparedRun): Promise<{ counts: SegmentCounts & { segments: number }; done: SegmentDone[] }> {
  const done = await readSegmentsDone(storage, run);
  const missing = done.findIndex((d) => d === undefined);
  if (missing >= 0) {
    const marker = runFiles.segmentDone(run.folder, run.input.segments[missing].index);
    throw new BatchScorerError('E_STORAGE', `run ${run.runId}: segment ${missing} is not done (${formatLocation(marker)} is missing)`, { retriable: true });
  }
  const finished = done as SegmentDone[];
  return { counts: { ...sumCounts(finished), segments: finished.length }, done: finished };
}

/**
 * Joins the segments' parts into `predictions.*` and `errors.jsonl`, streaming, and hashes what
 * it writes. The manifest and `_SUCCESS` are the caller's, written after this.
 */
export async function assembleOutputs(
  storage: Storage,
  run: PreparedRun,
  finished: { counts: SegmentCounts; done: SegmentDone[] },
  signal?: AbortSignal,
): Promise<OutputFile[]> {
  const { folder } = run;
  const segments = run.input.segments.map((s) => s.index);
  const header = createRowWriter(run.outputFormat, run.input.columns, run.schema.columns).header();
  const { counts, done } = finished;
  // The output's size is known from the parts: S3 then uses the smallest parts that fit, and buffers less.
  const rowsBytes = Buffer.byteLength(header) + done.reduce((n, d) => n + d.bytes.rows, 0);
  const errorsBytes = done.reduce((n, d) => n + d.bytes.errors, 0);
  return [
    await concatenateParts(
      storage,
      runFiles.predictions(folder, run.outputFormat),
      segments.map((i) => runFiles.segmentRows(folder, i, run.outputFormat)),
      { head: header, rows: counts.rowsScored, sizeHint: rowsBytes, signal },
    ),
    await concatenateParts(
      storage,
      runFiles.errors(folder),
      segments.map((i) => runFiles.segmentErrors(folder, i)),
      { rows: counts.rowsQuarantined, sizeHint: errorsBytes, signal },
    ),
  ];
}

/** Writes `head` and then the parts, in order, into one file, hashing what it writes. */
export async function concatenateParts(
  storage: Storage,
  target: Location,
  parts: Location[],
  options: { head?: string; rows?: number; sizeHint?: number; signal?: AbortSignal } = {},
): Promise<OutputFile> {
  const { head, rows = 0, sizeHint, signal } = options;
  const hash = createHash('sha256');
  let bytes = 0;
  const body = Readable.from(
    (async function* () {
      if (head) yield pass(Buffer.from(head));
      for (const part of parts) {
        const stream = await storage.read(part, { signal }).catch((err: unknown) => {
          throw err instanceof NotFoundError
            ? new RunStateError(
                `${formatLocation(part)} is missing, though its segment's done marker is there: was it deleted? Delete that done marker to score the segment again, then resume the run`,
                err,
              )
            : err;
        });
        for await (const chunk of stream as AsyncIterable<Buffer>) yield pass(chunk);
      }
    })(),
  );
  function pass(chunk: Buffer): Buffer {
    hash.update(chunk);
    bytes += chunk.length;
    return chunk;
  }
  await storage.write(target, body, { signal, sizeHint });
  return { file: basename(target), location: formatLocation(target), rows, bytes, sha256: hash.digest('hex') };
}
