import { InputError } from '../errors.js';
import { RowSplitter, type RawRow } from '../formats/row-splitter.js';
import { formatLocation, parseLocation } from '../storage/location.js';
import type { Storage } from '../storage/storage-types.js';
import { inputBytes } from './input-bytes.js';
import type { InputPlan } from './plan.js';

/** A segment's raw rows, a chunk at a time, read by byte range from the planned input. */
export async function* segmentRows(storage: Storage, input: InputPlan, index: number, signal?: AbortSignal): AsyncGenerator<RawRow[]> {
  const segment = input.segments[index];
  const source = { location: parseLocation(input.location), info: input.info, gzip: input.gzip };
  const splitter = new RowSplitter(input.syntax, segment.start, segment.firstLine);
  let rows: RawRow[] = [];
  const collect = (r: RawRow) => rows.push(r);
  for await (const chunk of inputBytes(storage, source, segment, signal)) {
    splitter.push(chunk, collect);
    if (rows.length > 0) {
      yield rows;
      rows = [];
    }
  }
  if (splitter.end(collect).unterminatedQuoteLine !== undefined) {
    throw new InputError(
      `${formatLocation(source.location)}: segment ${index} ends inside a quoted field; the input changed during the run`,
      'E_INPUT_CHANGED',
    );
  }
  if (rows.length > 0) yield rows;
}
