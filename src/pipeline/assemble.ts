import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { BatchScorerError } from '../errors.js';
import { createRowWriter } from '../formats/row-writer.js';
import { formatLocation, parseLocation, type Location } from '../storage/location.js';
import type { Storage } from '../storage/storage.js';
import type { OutputFile } from './manifest.js';
import { runFiles, type PreparedRun } from './prepared-run.js';
import { addCounts, emptyCounts, type SegmentCounts, type SegmentFacts } from './segment-counts.js';

/**
 * The summed counts of a run whose segments are all done, and who scored each (queue mode); an
 * error names the first segment that is not done.
 */
export async function readSegmentCounts(
  storage: Storage,
  run: PreparedRun,
): Promise<{ counts: SegmentCounts & { segments: number }; facts: Partial<SegmentFacts>[] }> {
  const folder = parseLocation(run.folder);
  const total = emptyCounts();
  const facts: Partial<SegmentFacts>[] = [];
  for (const segment of run.input.segments) {
    const done = runFiles.segmentDone(folder, segment.index);
    if (!(await storage.exists(done))) {
      throw new BatchScorerError('E_STORAGE', `run ${run.runId}: segment ${segment.index} is not done (${formatLocation(done)} is missing)`, { retriable: true });
    }
    const record = JSON.parse(await storage.readText(done)) as SegmentCounts & Partial<SegmentFacts>;
    addCounts(total, record);
    facts.push({ worker: record.worker, jobId: record.jobId, attempt: record.attempt });
  }
  return { counts: { ...total, segments: run.input.segments.length }, facts };
}

/**
 * Joins the segments' parts into `predictions.*` and `errors.jsonl`, streaming, and hashes what
 * it writes. The manifest and `_SUCCESS` are the caller's, written after this.
 */
export async function assembleOutputs(storage: Storage, run: PreparedRun, counts: SegmentCounts, signal?: AbortSignal): Promise<OutputFile[]> {
  const folder = parseLocation(run.folder);
  const segments = run.input.segments.map((s) => s.index);
  const header = createRowWriter(run.outputFormat, run.input.columns, run.schema.columns).header();
  return [
    await concatenate(storage, runFiles.predictions(folder, run.outputFormat), header, counts.rowsScored, segments.map((i) => runFiles.segmentRows(folder, i, run.outputFormat)), signal),
    await concatenate(storage, runFiles.errors(folder), '', counts.rowsQuarantined, segments.map((i) => runFiles.segmentErrors(folder, i)), signal),
  ];
}

async function concatenate(storage: Storage, target: Location, head: string, rows: number, parts: Location[], signal?: AbortSignal): Promise<OutputFile> {
  const hash = createHash('sha256');
  let bytes = 0;
  const body = Readable.from(
    (async function* () {
      if (head) yield pass(Buffer.from(head));
      for (const part of parts) {
        for await (const chunk of (await storage.read(part, { signal })) as AsyncIterable<Buffer>) yield pass(chunk);
      }
    })(),
  );
  function pass(chunk: Buffer): Buffer {
    hash.update(chunk);
    bytes += chunk.length;
    return chunk;
  }
  // The size is known from the parts: S3 can then use the smallest parts that fit, and buffer less.
  let sizeHint = Buffer.byteLength(head);
  for (const part of parts) sizeHint += (await storage.stat(part, signal)).size;
  await storage.write(target, body, { signal, sizeHint });
  const location = formatLocation(target);
  return { file: location.slice(location.lastIndexOf('/') + 1), location, rows, bytes, sha256: hash.digest('hex') };
}
