import type { RunOptions } from '../config/run-options.js';
import { joinLocation, parseLocation, type Location } from '../storage/location.js';
import type { InputPlan } from './plan.js';
import type { OutputSchema } from './output-schema.js';

/**
 * Everything fixed at a run's start and shared by all of its segments, wherever they run: stored
 * as `_work/run.json` in the run folder, so a resumed run scores exactly as it began.
 */
export interface PreparedRun {
  runId: string;
  /** The run folder, `<out>/<runId>`. */
  folder: string;
  createdAt: string;
  /** Fingerprint of what the user asked (input, model, options); a re-used run id must match it. */
  request: { input: string; model: string; out: string; options: RunOptions };
  input: InputPlan;
  /**
   * The model as asked (`project/model[.version]`), and as resolved at the run's start, with the
   * row id member learnt then (null: none, rows aligned by position) and whether the server echoed it.
   */
  model: {
    requested: string;
    project: string;
    name: string;
    requestedVersion: number | null;
    resolvedVersion: number | null;
    status: string | null;
    rowIdMember: string | null;
    rowIdEchoed: boolean;
  };
  service: string;
  /** Input columns sent to the model, in model order. */
  sent: string[];
  schema: OutputSchema;
  outputFormat: 'csv' | 'jsonl';
  warnings: string[];
}

/** Where a run keeps its files: the run folder and its `_work` area (removed once assembled). */
export const runFiles = {
  folder: (out: string, runId: string): Location => joinLocation(parseLocation(out), runId),
  prepared: (folder: Location) => joinLocation(folder, '_work', 'run.json'),
  work: (folder: Location) => joinLocation(folder, '_work'),
  segmentsFolder: (folder: Location) => joinLocation(folder, '_work', 'segments'),
  segmentRows: (folder: Location, index: number, format: string) => joinLocation(folder, '_work', 'segments', `${pad(index)}.${format}`),
  segmentErrors: (folder: Location, index: number) => joinLocation(folder, '_work', 'segments', `${pad(index)}.errors.jsonl`),
  /** Written last by a segment: its counts, and the proof it finished. */
  segmentDone: (folder: Location, index: number) => joinLocation(folder, '_work', 'segments', `${pad(index)}.done.json`),
  predictions: (folder: Location, format: string) => joinLocation(folder, `predictions.${format}`),
  errors: (folder: Location) => joinLocation(folder, 'errors.jsonl'),
  describe: (folder: Location) => joinLocation(folder, 'describe.json'),
  manifest: (folder: Location) => joinLocation(folder, 'manifest.json'),
  success: (folder: Location) => joinLocation(folder, '_SUCCESS'),
};

function pad(index: number): string {
  return String(index).padStart(5, '0');
}
