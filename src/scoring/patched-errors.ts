import { RunFolderError } from '../errors.js';
import { formatLocation, type Location, type Storage } from '../storage/index.js';
import { records } from './assemble.js';
import type { OutputFile } from './manifest.js';
import { OutputFileWriter } from './output-file.js';
import { errorsLines, type PatchedRun } from './patched-run.js';
import { runFiles } from './prepared-run.js';

/** The rows a rescore's segments quarantined again: their errors.jsonl lines, in input order, with their rows. */
export type RefusedRows = AsyncIterable<{ row: number; line: Buffer }>;

/**
 * The lines of segments' quarantined rows (`_work/segments/*.errors.jsonl`), in segment order, each
 * with the row it names: a line's row is its first member, as errors.jsonl's lines are written.
 */
export async function* refusedRows(storage: Storage, locations: readonly Location[], signal?: AbortSignal): RefusedRows {
  for (const location of locations) {
    for await (const lines of records(await storage.read(location, { signal }), 'jsonl')) {
      for (const line of lines) {
        const row = /^\{"row":(\d+),/.exec(line.toString('utf8', 0, 40))?.[1];
        if (row === undefined) throw new RunFolderError(`${formatLocation(location)}: a line names no row: was it changed?`);
        yield { row: Number(row), line };
      }
    }
  }
}

/**
 * Writes a rescored version's errors.jsonl into its folder: the rows still quarantined, in input
 * order. A row not sent keeps the patched run's line, its bytes copied; a row sent and refused
 * again has its new line (its new reason); a row sent and scored has none. The patched run's file
 * is checked against its manifest as it is read (see listedBytes).
 * @param sent the rows sent, ascending
 */
export async function writePatchedErrors(
  storage: Storage,
  patched: PatchedRun,
  folder: Location,
  sent: readonly number[],
  refused: RefusedRows,
  signal?: AbortSignal,
): Promise<OutputFile> {
  const file = new OutputFileWriter(storage, runFiles.errors(folder), 'errors.jsonl', { gzip: false, signal });
  const again = refused[Symbol.asyncIterator]();
  let next = await again.next();
  const { rows } = patched.quarantined;
  let k = 0;
  let s = 0;
  let kept = 0;
  try {
    for await (const lines of errorsLines(storage, patched.folder, patched.errors, signal)) {
      const out: Buffer[] = [];
      for (const line of lines) {
        const row = rows[k++];
        while (s < sent.length && sent[s] < row) s++;
        let keep: Buffer | undefined = line.bytes;
        if (sent[s] === row) {
          // Sent again: its new line where it was refused again, none where it came home.
          keep = !next.done && next.value.row === row ? next.value.line : undefined;
          if (keep) next = await again.next();
        }
        if (keep === undefined) continue;
        out.push(keep, NEWLINE);
        kept++;
      }
      if (out.length > 0) await file.write(Buffer.concat(out));
    }
    if (!next.done) throw new RunFolderError(`row ${next.value.row} was quarantined again, but is not among the rows sent: was _work changed?`);
  } catch (err) {
    await file.abandon(err as Error);
    throw err;
  }
  return file.finish(kept);
}

const NEWLINE = Buffer.from('\n');
