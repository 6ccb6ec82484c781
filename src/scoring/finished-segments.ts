import { BatchScorerError, RunFolderError } from '../errors.js';
import { formatLocation, type Storage } from '../storage/index.js';
import { ComparisonAccumulator } from './model-comparison.js';
import { ProfileMerger } from './prediction-profile.js';
import { runFiles, sentInputColumns, type PreparedRun } from './prepared-run.js';
import { sumCounts, type SegmentCounts } from './segment-counts.js';
import { READS_AT_ONCE, readSegmentDone, type SegmentDone } from './segment-done.js';

/** Every segment's done marker (without its profile and comparison), their summed counts, and the run's merged prediction profile and comparison. */
export interface Finished {
  counts: SegmentCounts & { segments: number };
  done: SegmentDone[];
  profile: ReturnType<ProfileMerger['result']>;
  /** Shadow scoring's comparison, merged in segment order; undefined without --compare-model. */
  comparison?: ComparisonAccumulator;
}

/**
 * The done markers of a run's segments, folded as they come in: their prediction profiles merged
 * in segment order (see ProfileMerger) and dropped, the rest kept, so that a run never holds every
 * sketch at once. A run scored in this process hands each segment in as it finishes (`add`), so
 * that its end does not wait for every marker to be read and its sketches decoded and merged:
 * that was about a quarter of a latency-bound run's assembly. `all` reads the markers not handed in.
 */
export class FinishedSegments {
  private readonly profiles: ProfileMerger;
  private readonly comparison: ComparisonAccumulator | undefined;
  private readonly done: (SegmentDone | undefined)[] = [];
  /** Markers in (undefined: not there) whose segment waits for an earlier one's to be folded first. */
  private readonly ahead = new Map<number, SegmentDone | undefined>();
  private folded = 0;
  private readonly handed = new Set<number>();
  private reads: Promise<void>[] = [];

  constructor(
    private readonly storage: Storage,
    private readonly run: PreparedRun,
  ) {
    this.profiles = new ProfileMerger(run.schema, sentInputColumns(run));
    this.comparison = run.compare ? new ComparisonAccumulator(run.schema) : undefined;
  }

  /** Segment `index` is done: its marker (read now, unless given) is folded once every segment's before it is. */
  add(index: number, marker?: SegmentDone): void {
    if (this.handed.has(index)) return;
    this.handed.add(index);
    const read = (marker ? Promise.resolve(marker) : readSegmentDone(this.storage, this.run.folder, index)).then((m) => this.take(index, m));
    read.catch(() => undefined); // Thrown by `all`.
    this.reads.push(read);
  }

  /**
   * Every segment's marker, those not handed in read now, a window at a time; an error names the
   * first segment that is not done.
   */
  async all(): Promise<Finished> {
    const rest = this.run.input.segments.map((s) => s.index).filter((i) => !this.handed.has(i));
    await this.settled();
    for (let first = 0; first < rest.length; first += READS_AT_ONCE) {
      for (const index of rest.slice(first, first + READS_AT_ONCE)) this.add(index);
      await this.settled();
    }
    const segments = this.run.input.segments.length;
    const missing = this.run.input.segments.findIndex((_, i) => this.done[i] === undefined);
    if (missing >= 0) {
      const marker = runFiles.segmentDone(this.run.folder, this.run.input.segments[missing].index);
      throw new BatchScorerError('E_STORAGE', `run ${this.run.runId}: segment ${missing} is not done (${formatLocation(marker)} is missing)`);
    }
    const done = this.done.slice(0, segments) as SegmentDone[];
    return { counts: { ...sumCounts(done), segments }, done, profile: this.profiles.result(), ...(this.comparison && { comparison: this.comparison }) };
  }

  /** Waits for the markers asked so far (a failed read is thrown). */
  private async settled(): Promise<void> {
    const reads = this.reads;
    this.reads = [];
    await Promise.all(reads);
  }

  private take(index: number, marker: SegmentDone | undefined): void {
    this.ahead.set(index, marker);
    for (; this.ahead.has(this.folded); this.folded++) {
      const next = this.ahead.get(this.folded);
      this.ahead.delete(this.folded);
      if (!next) continue;
      this.profiles.add(next.profile, this.folded);
      if (this.comparison) {
        if (!next.comparison) {
          throw new RunFolderError(
            `segment ${this.folded}'s done marker has no comparison with ${this.run.compare!.requested}: delete it to score the segment again, then resume the run`,
          );
        }
        this.comparison.merge(next.comparison, this.folded);
      }
      this.done[this.folded] = { ...next, profile: null, comparison: undefined };
    }
  }
}
