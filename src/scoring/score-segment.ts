import { setMaxListeners } from 'node:events';
import { PassThrough } from 'node:stream';
import { setImmediate } from 'node:timers/promises';
import { BatchScorerError, InputError } from '../errors.js';
import {
  csvRecord,
  type InputRow,
  createRowWriter,
  type RowWriter,
  type WriterRow,
  DEFAULT_DIALECT,
  dialectForName,
  type CsvDialect,
} from '../formats/index.js';
import type { Logger } from '../log.js';
import type { Predictor } from './predictor.js';
import { predictEnvelope, type RequestSlots } from '../service/index.js';
import { type Storage, formatLocation } from '../storage/index.js';
import { drainedWrite } from './drained-write.js';
import { errorRateExceeded, type ErrorAllowance } from './error-allowance.js';
import { ExpiredError, type RunCaps } from './run-caps.js';
import { ComparisonAccumulator, comparedMembers } from './model-comparison.js';
import { ProfileAccumulator } from './prediction-profile.js';
import { runFiles, sentInputColumns, type PreparedRun } from './prepared-run.js';
import { RequestBatchBuilder } from './request-batch.js';
import { RequestEncoder } from './request-row.js';
import { type AnySegmentPlan, type InputPlan, segmentFile } from './plan.js';
import type { SegmentRead } from './database-segment.js';
import type { ReadAhead } from './read-ahead.js';
import { readSegment } from './read-segment.js';
import { batchIsFull, scoreBatch, type SegmentScoring, type RowOutcome } from './score-batch.js';
import type { ScoringObserver } from './scoring-observer.js';
import { addCounts, emptyCounts, type SegmentCounts, type SegmentFacts } from './segment-counts.js';
import { readSegmentDone, writeSegmentDone, type SegmentDone } from './segment-done.js';
import { joinPieces, readSegmentPrefix, writeSegmentPrefix, type SegmentMarker, type SegmentPrefix } from './segment-prefix.js';

/** The title of a row quarantined because it could not be read: it was never sent. */
export const MALFORMED_ROW = 'Malformed row';

/** What a segment needs besides the prepared run; the same in direct and queue mode. */
export interface SegmentWork {
  run: PreparedRun;
  storage: Storage;
  client: Predictor;
  /** The slots its predict requests take while in flight: the run's --concurrency in this process. */
  slots: RequestSlots;
  /** The batches kept ahead of the writers, shared by the segments this process scores at once. */
  readAhead: ReadAhead;
  /** The run's allowance of quarantined rows, shared with its other segments (in this process or not). */
  errorAllowance: ErrorAllowance;
  /**
   * The run's caps, shared with its other segments: each predict attempt is taken from them with
   * its rows by the client (see cappedPredictor); once they have refused one, the segment reads no
   * further. None when uncapped.
   */
  caps?: RunCaps;
  log: Logger;
  signal?: AbortSignal;
  /**
   * Aborted when the process stops (Ctrl-C, a worker's shutdown), not when a sibling segment
   * fails: the quarantined rows part is completed through a sibling's failure, not through a stop.
   */
  stopSignal?: AbortSignal;
  /** Rows finished since the last call (scored or quarantined). */
  onRows?: (rows: number) => void;
  /** Called once every batch of the segment has been sent: what is left is answers and writes. */
  onSent?: () => void;
  /** Who scored the segment (queue mode: worker and job), recorded beside its counts. */
  facts?: SegmentFacts;
  /** Hears segments, requests and rows as they go (a worker's metrics). */
  observer?: ScoringObserver;
  /**
   * Where segment `index`'s rows come from, a chunk at a time: by default its part of the input
   * (see readSegment); a rescore's are the rows it sends again, each with its own place (see
   * rescore-rows.ts). Rows given their record are encoded and written from it.
   */
  rows?: (index: number, signal: AbortSignal) => AsyncIterable<InputRow[]>;
}

/**
 * Segment `index`'s rows, a chunk at a time: where `work.rows` says, or its part of the input
 * (whose reading, once whole, `onRead` hears: a database's checksum of the rows).
 */
function segmentRows(
  work: SegmentWork,
  index: number,
  signal: AbortSignal,
  fromText: boolean,
  onRead?: (read: SegmentRead) => void,
): AsyncIterable<InputRow[]> {
  return work.rows ? work.rows(index, signal) : readSegment(work.storage, work.run.input, index, work.run.request.options, signal, fromText, onRead);
}

/**
 * Scores one segment into `_work/segments/`: its predictions in input order, its quarantined rows,
 * and last its counts and prediction profile, whose presence marks the segment done (answered, so
 * that the run need not read it back). A batch is sent only with a read-ahead turn, so memory stays
 * flat however large the file. Stopped on a cap, it keeps the rows it scored as a prefix of the
 * segment (see segment-prefix.ts), and goes on after them when the run is resumed.
 */
export async function scoreSegment(work: SegmentWork, index: number): Promise<SegmentDone> {
  const { observer, slots } = work;
  if (!observer) return scoreSegmentParts(work, index);
  observer.segmentStarted(slots);
  try {
    const counts = await scoreSegmentParts(work, index);
    observer.segmentEnded(slots, 'scored');
    return counts;
  } catch (err) {
    observer.segmentEnded(slots, work.stopSignal?.aborted ? 'stopped' : 'failed');
    throw err;
  }
}

async function scoreSegmentParts(work: SegmentWork, index: number): Promise<SegmentDone> {
  const { run, storage } = work;
  const segment = run.input.segments[index];
  if (!segment) throw new BatchScorerError('E_USAGE', `run ${run.runId} has no segment ${index}`);
  // What the segment's earlier pieces keep (it was stopped on a cap): this piece goes on after them.
  const before = await readSegmentPrefix(storage, run.folder, index, work.signal);
  // Its rows are done: the run's progress counts them as it counts a finished segment's.
  if (before) work.onRows?.(before.rowsIn);
  return new SegmentPiece(work, index, segment, before).score();
}

/** A batch sent and not yet written (see SegmentPiece.pending). */
interface PendingBatch {
  outcomes: Promise<RowOutcome[]>;
  turn: boolean;
  answered: boolean;
  counts?: SegmentCounts;
}

/**
 * The piece of a segment one call of scoreSegment scores: its rows after the earlier pieces' (all
 * of them, for a segment never stopped), read, sent in batches and written in input order. Its
 * steps (send a batch, write the oldest answered one, keep what a cap stopped, settle a failure)
 * share the piece's streams, counts and batches in flight, hence one object holding them rather
 * than closures inside one long function. Made once per segment: the rows' loop is `score`'s.
 */
class SegmentPiece {
  private readonly run: PreparedRun;
  /** The segment's earlier pieces: this one is their rows' continuation. */
  private readonly piece: number;
  // This piece's counts, profile and comparison; joined with the earlier pieces' in the markers.
  private readonly counts = emptyCounts();
  private readonly profile: ProfileAccumulator;
  private readonly comparison: ComparisonAccumulator | undefined;
  private readonly abort = new AbortController();
  private readonly signal: AbortSignal;
  // The first failure is the one to report: cancelling the other batches makes them fail too,
  // with "cancelled", which would hide a retriable cause behind a permanent-looking one.
  private failure: unknown;
  private readonly log: Logger;
  private readonly rowsOut = new PassThrough();
  private readonly errorsOut = new PassThrough();
  private readonly errorsWrite: Promise<{ bytes: number }>;
  private readonly writes: Promise<[{ bytes: number }, { bytes: number }]>;
  private readonly writer: RowWriter;
  /** The columns of the segment's rows: its file's, or the database input's. */
  private readonly columns: readonly string[];
  /** Where the segment's rows are, as messages name it: its file, or the database. */
  private readonly source: string;
  private readonly dialect: CsvDialect;
  /** What reading the segment's rows to their end found (a database input's checksum of them). */
  private read: SegmentRead = {};
  private readonly quarantine: ReturnType<typeof errorLines>;
  private readonly kept: (row: InputRow) => InputRow;
  // Each batch is given counts of its own (see `pending`).
  private readonly scoring: Omit<SegmentScoring, 'counts'>;
  // Where rows are written as read, a CSV row in plain RFC 4180 is sent from its text: no record is made.
  private readonly fromText: boolean;
  private readonly encoder: RequestEncoder;
  // Batches sent and not yet written, in order: whether each holds a read-ahead turn (an entry of
  // malformed rows alone holds none) and has its answer, and what its answer counted (requests,
  // retries, splits, rows without their id...), added to the segment's counts once it is written,
  // so that a piece a cap stopped counts only the batches it keeps.
  private readonly pending: PendingBatch[] = [];
  // Built in the request's envelope: a whole batch is sent as it was built.
  private readonly batch: RequestBatchBuilder;
  // The malformed rows met while the batch is built, each at its place among the batch's rows.
  // They go with the batch rather than end it: ended, one in 40 cut batches of 1000 to 39 rows,
  // 25 times the requests of a clean file.
  private malformed: MalformedRow[] = [];

  constructor(
    private readonly work: SegmentWork,
    private readonly index: number,
    private readonly segment: AnySegmentPlan,
    private readonly before: SegmentPrefix | undefined,
  ) {
    const { run, storage } = work;
    const { folder } = run;
    this.run = run;
    this.piece = before?.pieces ?? 0;
    this.profile = new ProfileAccumulator(run.schema, sentInputColumns(run));
    this.comparison = run.compare ? new ComparisonAccumulator(run.schema) : undefined;
    this.signal = work.signal ? AbortSignal.any([work.signal, this.abort.signal]) : this.abort.signal;
    // Every request in flight and every retry waiting listens to it: up to the concurrency, past Node's warning at 10.
    setMaxListeners(0, this.signal);
    this.log = work.log.child({ segment: index });
    // The quarantined rows outlive a failure, this segment's or a sibling's: the part is completed,
    // never cancelled with the rows, so a run that fails on its error threshold keeps what it found.
    this.errorsWrite = storage.write(runFiles.segmentErrors(folder, index, this.piece), this.errorsOut, { signal: work.stopSignal });
    this.writes = Promise.all([
      storage.write(runFiles.segmentPart(folder, index, run.outputFormat, this.piece), this.rowsOut, { signal: this.signal }),
      this.errorsWrite,
    ]);
    this.writes.catch(this.fail);

    const file = segmentFile(run.input, index);
    const passThroughText = writesRowsAsRead(run, index);
    this.writer = createRowWriter(run.outputFormat === 'parquet' ? 'values' : run.outputFormat, {
      inputColumns: run.output.inputColumns,
      predictionColumns: run.schema.columns,
      rowNumber: run.output.rowNumber,
      passThroughText,
    });
    const dialect = file ? dialectForName(formatLocation(file.location), run.request.options) : DEFAULT_DIALECT;
    const columns = file?.columns ?? run.input.columns;
    this.columns = columns;
    this.source = file ? formatLocation(file.location) : run.input.location;
    this.dialect = dialect;
    // Several files: a quarantined row names its file, since its row number counts through them all.
    const several = run.input.syntax !== 'postgresql' && run.input.files.length > 1;
    this.quarantine = errorLines(run.input.syntax, several ? this.source : undefined, (text) => csvRecord(text, columns, dialect));
    // A batch keeps of a row what writing its answer needs. Where the output is the rows' text as
    // read, that is the text and its place: the record (a CSV row's field strings, a JSON row's
    // values) then dies young. Kept until the answer, every young collection copied it and then
    // promoted it, most of the collector's work on a CPU-bound run.
    this.kept = passThroughText
      ? (row: InputRow): InputRow => (row.record === undefined || row.text === undefined ? row : { index: row.index, line: row.line, text: row.text })
      : (row: InputRow) => row;
    this.scoring = segmentScoring(work, this.log, this.signal);
    this.batch = new RequestBatchBuilder(predictEnvelope(this.scoring));
    this.fromText = passThroughText && file?.syntax === 'csv';
    this.encoder = this.newEncoder();
  }

  /** Scores the piece's rows, then marks the segment done; a failure settles everything first (see `stopped`). */
  async score(): Promise<SegmentDone> {
    const { work, run, index, counts, pending, batch, encoder, profile, kept } = this;
    const rowsBefore = this.before?.rowsIn ?? 0;
    // The rows the earlier pieces hold are read past, not sent.
    let skip = rowsBefore;
    try {
      const onRead = (read: SegmentRead) => (this.read = read);
      for await (const chunk of segmentRows(work, index, this.signal, this.fromText, onRead)) {
        const rows = skip === 0 ? chunk : chunk.slice(Math.min(skip, chunk.length));
        skip -= chunk.length - rows.length;
        // Indexed: in this async function, for-of allocated an iterator result per row (about 4% of a CPU-bound run's garbage).
        for (let r = 0; r < rows.length; r++) {
          counts.rowsIn++;
          const row = rows[r].problem === undefined ? encoder.encodeRow(rows[r]) : rows[r];
          if (row.problem !== undefined) {
            // Written in its place among the batch's answers, so errors.jsonl stays in input order.
            this.malformed.push({ at: batch.length, outcome: { row, error: { title: MALFORMED_ROW, detail: `line ${row.line}: ${row.problem}` } } });
            // A file of mostly malformed rows (the wrong file, a wrong delimiter) holds a batch's
            // worth of them at a time, not the segment's, and tells the error allowance as it goes.
            if (this.malformed.length >= run.request.options.batchSize) await this.submit();
            continue;
          }
          profile.addInputs(encoder.values!);
          if (batchIsFull(batch.length, batch.bytes, encoder.length, run.request.options)) await this.submit();
          batch.add(kept(row), encoder);
        }
        // Answered batches are written as soon as those before them are, giving their turns back.
        while (pending.length > 0 && pending[0].answered) await this.flushOne();
      }
      await this.submit();
      work.onSent?.();
      while (pending.length > 0) await this.flushOne();
      if (rowsBefore + counts.rowsIn !== this.segment.rows) {
        throw new InputError(
          `${this.source}: segment ${index} held ${rowsBefore + counts.rowsIn} rows where planning counted ${this.segment.rows}; the input changed during the run`,
          'E_INPUT_CHANGED',
        );
      }
      this.rowsOut.end();
      this.errorsOut.end();
      await this.writes;
    } catch (err) {
      this.fail(err);
      throw await this.stopped();
    }
    const done = await writeSegmentDone(work.storage, run, index, this.marker(await this.writes, profile.toJSON()));
    this.log.debug({ counts }, 'segment scored');
    return done;
  }

  /** Records the piece's failure, if it is the first, and cancels the batches in flight unless a cap stopped it. */
  private readonly fail = (err: unknown): void => {
    this.failure ??= err;
    // Stopped on a cap, the batches in flight are answered (they were sent, and counted) before
    // the segment stops; none more is sent (see `stopped`).
    if (!(this.failure instanceof ExpiredError)) this.abort.abort();
  };

  /**
   * Once the piece failed: what a cap stopped is kept (see keepScored), everything else cancelled,
   * and every write and batch settled before the first failure, answered, is thrown; the turns of
   * batches never written go back.
   */
  private async stopped(): Promise<unknown> {
    const { pending } = this;
    let kept = false;
    if (this.failure instanceof ExpiredError) {
      await Promise.allSettled(pending.map((p) => p.outcomes));
      if (!this.work.signal?.aborted) kept = await this.keepScored();
    }
    this.abort.abort();
    if (!kept) this.rowsOut.destroy();
    this.errorsOut.end();
    await Promise.allSettled([this.writes, this.errorsWrite, ...pending.map((p) => p.outcomes)]);
    // The turns of batches never written go back, for the segments still scoring.
    for (const p of pending.splice(0)) if (p.turn) this.work.readAhead.release();
    return this.failure;
  }

  /** An encoder of the segment's rows; it keeps each row's values as it encodes them, for the input profile. */
  private newEncoder(): RequestEncoder {
    const { run } = this;
    return new RequestEncoder(run.sent, run.input.syntax === 'csv', this.scoring.rowIdMember, { columns: this.columns, ...this.dialect }, true);
  }

  /** Writes the oldest batch sent, once answered, and gives its turn back. */
  private async flushOne(): Promise<void> {
    const entry = this.pending[0];
    // A batch that failed stays first in line: what a cap keeps ends before it (see keepScored).
    const answered = await entry.outcomes;
    this.pending.shift();
    try {
      await this.write(answered);
      if (entry.counts) addCounts(this.counts, entry.counts);
    } finally {
      if (entry.turn) this.work.readAhead.release();
    }
  }

  /** Sends the batch built so far (with the malformed rows met meanwhile), once a read-ahead turn is free. */
  private async submit(): Promise<void> {
    const { work, pending } = this;
    const held = this.malformed;
    this.malformed = [];
    if (this.batch.length === 0) {
      if (held.length > 0) pending.push({ outcomes: Promise.resolve(held.map((m) => m.outcome)), turn: false, answered: true });
      return;
    }
    // Past a cap, no attempt is sent (each takes its rows and request, see cappedPredictor): the
    // segment stops (E_EXPIRED) rather than read rows it would not send.
    if (work.caps?.expired) throw new ExpiredError(work.caps.expired);
    // Waiting for a turn, this segment writes what it has: its own batches give turns back. It
    // waits for its oldest batch's answer or any segment's release, whichever comes first: waiting
    // for its own answer alone left request slots idle while a sibling segment freed turns.
    while (!work.readAhead.tryTake()) {
      if (pending.length > 0 && pending[0].answered) await this.flushOne();
      else await Promise.race([work.readAhead.released(), ...(pending.length > 0 ? [pending[0].outcomes] : [])]);
    }
    const answerCounts = emptyCounts();
    const sent = scoreBatch({ ...this.scoring, counts: answerCounts }, this.batch.take());
    const entry = {
      outcomes: held.length === 0 ? sent : sent.then((outcomes) => inPlace(outcomes, held)),
      turn: true,
      answered: false,
      counts: answerCounts,
    };
    entry.outcomes.then(() => (entry.answered = true), this.fail);
    pending.push(entry);
    // Answers that came in meanwhile free their slots now, not after the rest of the chunk is encoded.
    await setImmediate();
  }

  /** Writes a batch's answers (scored rows and quarantined ones) and tells the error allowance. */
  private async write(outcomes: RowOutcome[]): Promise<void> {
    const { work, counts, profile, comparison, quarantine } = this;
    const scored: WriterRow[] = [];
    let errors = '';
    for (let i = 0; i < outcomes.length; i++) {
      const o = outcomes[i];
      if ('predictions' in o) {
        scored.push(o);
        profile.add(o.predictions);
        comparison?.add(o.row, o.predictions, o.other ?? null);
      } else errors += quarantine(o.row, o.error);
    }
    counts.rowsScored += scored.length;
    counts.rowsQuarantined += outcomes.length - scored.length;
    work.observer?.rows(scored.length, outcomes.length - scored.length);
    await Promise.all([drainedWrite(this.rowsOut, this.writer.lines(scored), this.writes), drainedWrite(this.errorsOut, errors, this.errorsWrite)]);
    // Told after every batch, not only one with quarantined rows: a segment without any must
    // also stop once its siblings have taken the run past its allowance.
    const over = work.errorAllowance.report(this.index, (this.before?.rowsQuarantined ?? 0) + counts.rowsQuarantined);
    work.onRows?.(outcomes.length);
    if (over) throw errorRateExceeded(this.run);
  }

  /** The marker of what this piece wrote, joined with the earlier pieces'. */
  private marker(written: [{ bytes: number }, { bytes: number }], profileJson: SegmentMarker['profile']): SegmentMarker {
    const { work, counts, comparison } = this;
    counts.connectionsOpened = work.client.takeConnectionsOpened();
    return joinPieces(this.run, this.index, this.before, {
      ...counts,
      ...work.facts,
      slots: work.slots.concurrency,
      bytes: { rows: written[0].bytes, errors: written[1].bytes },
      ...(this.read.sha256 !== undefined && { sha256: this.read.sha256 }),
      profile: profileJson,
      ...(comparison && { comparison: comparison.toJSON() }),
    });
  }

  /**
   * Stopped on a cap once every batch sent is answered: the batches answered before the first
   * that was not (its retry refused by the cap) are the rows after the earlier pieces, written as
   * this piece and kept. False where they could not be: the segment is then scored again from there.
   */
  private async keepScored(): Promise<boolean> {
    const { work, index, counts, before, log } = this;
    const { folder } = this.run;
    try {
      while (this.pending.length > 0 && this.pending[0].answered) await this.flushOne();
      // A queue attempt that lost its job may find a newer one has finished the segment: its
      // piece 0, whole, must not be replaced by this one's (storage makes a file whole at its end).
      if (await readSegmentDone(work.storage, folder, index, this.signal)) return false;
      this.rowsOut.end();
      this.errorsOut.end();
      const written = await this.writes;
      // Nothing scored since the earlier pieces: they stay as they are.
      if (counts.rowsScored + counts.rowsQuarantined === 0) return true;
      counts.rowsIn = counts.rowsScored + counts.rowsQuarantined;
      // The running profile counted each row's inputs as it was encoded, rows read past the kept ones too.
      const range = { skip: before?.rowsIn ?? 0, rows: counts.rowsIn };
      const inputs = await inputsProfile(work, index, range, () => this.newEncoder(), this.fromText, this.signal);
      await writeSegmentPrefix(work.storage, folder, index, this.marker(written, { ...this.profile.toJSON(), inputs }));
      log.info({ rows: (before?.rowsIn ?? 0) + counts.rowsIn, piece: this.piece }, 'segment stopped on a cap; its scored rows are kept');
      return true;
    } catch (err) {
      log.warn({ err }, 'could not keep the rows a segment stopped on a cap scored');
      return false;
    }
  }
}

/** The options every batch of a segment is sent with, but its counts (each batch gets its own). */
function segmentScoring(work: SegmentWork, log: Logger, signal: AbortSignal): Omit<SegmentScoring, 'counts'> {
  const { run } = work;
  return {
    client: work.client,
    model: { project: run.model.project, model: run.model.name, version: run.model.resolvedVersion ?? undefined },
    envelope: run.request.options.envelope,
    params: run.request.options.params,
    rowIdMember: run.model.rowIdMember ?? undefined,
    rowIdEchoed: run.model.rowIdEchoed,
    schema: run.schema,
    slots: work.slots,
    log,
    signal,
    observer: work.observer,
    ...(run.compare && {
      compare: {
        model: { project: run.compare.project, model: run.compare.name, version: run.compare.resolvedVersion ?? undefined },
        members: comparedMembers(run.schema, run.model.rowIdMember ?? undefined),
      },
    }),
  };
}

/** A malformed row held with the batch being built: its outcome, and the batch's rows before it. */
interface MalformedRow {
  at: number;
  outcome: RowOutcome;
}

/** A batch's outcomes with the malformed rows met while it was built put back in their places. */
function inPlace(sent: readonly RowOutcome[], malformed: readonly MalformedRow[]): RowOutcome[] {
  const all: RowOutcome[] = [];
  let i = 0;
  for (const { at, outcome } of malformed) {
    while (i < at) all.push(sent[i++]);
    all.push(outcome);
  }
  while (i < sent.length) all.push(sent[i++]);
  return all;
}

/**
 * Whether the segment's rows go out as their text as read, predictions added: every column kept, in
 * the file's order, in the output's syntax. JSON Lines keeps long numbers' digits that way; CSV
 * skips re-quoting every input field, most of the cost of writing a row. A CSV file in another
 * dialect, or one whose columns come in another order than the run's first file, is re-written.
 */
function writesRowsAsRead(run: PreparedRun, index: number): boolean {
  const kept = run.output.inputColumns;
  const file = segmentFile(run.input, index);
  if (!file || run.outputFormat !== run.input.syntax) return false;
  if (run.input.syntax === 'jsonl') return kept.length === run.input.columns.length;
  const { columns, location } = file;
  if (run.input.syntax !== 'csv' || kept.length !== columns.length || kept.some((c, i) => c !== columns[i])) return false;
  const dialect = dialectForName(formatLocation(location), run.request.options);
  return dialect.delimiter === DEFAULT_DIALECT.delimiter && dialect.quote === DEFAULT_DIALECT.quote;
}

/**
 * Writes a segment's quarantined rows' lines in errors.jsonl. A line's input is the row's record
 * (CSV: re-read from its text where the segment kept only the text), the row's own JSON text (JSON
 * Lines, spliced in as read so long numbers keep their digits), or the text of a row that could
 * not be read. `file` names the row's file in a run of several.
 */
function errorLines(syntax: InputPlan['syntax'], file: string | undefined, reread: (text: string) => Record<string, unknown> | undefined) {
  const where = file === undefined ? '' : `"file":${JSON.stringify(file)},`;
  const input = (row: InputRow): string => {
    if (row.problem !== undefined || row.text === undefined) return JSON.stringify(row.record ?? row.text);
    if (syntax === 'jsonl') return row.text;
    return JSON.stringify(row.record ?? reread(row.text) ?? row.text);
  };
  return (row: InputRow, error: { status?: number; title?: string; detail: string }): string => {
    const rest = JSON.stringify({ status: error.status ?? null, title: error.title ?? null, detail: error.detail });
    return `{"row":${row.index + 1},${where}"line":${row.line},"input":${input(row)},${rest.slice(1)}\n`;
  };
}

/**
 * The input profile of segment `index`'s rows after its first `skip`, `rows` of them, read again:
 * what the piece a cap stopped keeps. The running profile counts each row's inputs as it is
 * encoded, before it is sent, so it also holds the rows read past the last batch kept.
 */
async function inputsProfile(
  work: SegmentWork,
  index: number,
  range: { skip: number; rows: number },
  newEncoder: () => RequestEncoder,
  fromText: boolean,
  signal: AbortSignal,
): Promise<ReturnType<ProfileAccumulator['toJSON']>['inputs']> {
  const { run } = work;
  const profile = new ProfileAccumulator(run.schema, sentInputColumns(run));
  const encoder = newEncoder();
  const end = range.skip + range.rows;
  let at = 0;
  read: for await (const chunk of segmentRows(work, index, signal, fromText)) {
    for (const row of chunk) {
      if (at >= end) break read;
      if (at++ < range.skip || row.problem !== undefined) continue;
      if (encoder.encodeRow(row).problem === undefined) profile.addInputs(encoder.values!);
    }
  }
  return profile.toJSON().inputs;
}
