import type { OutputSchema } from './output-schema.js';

/** The title of a row quarantined for what the model answered for it (see answerCheck). */
export const INVALID_PREDICTION = 'Invalid prediction';

/** What a written member is, by its suffix of the target (`value`: the target itself, its anomaly flag): what it may hold depends on it. */
type Kind = 'value' | 'confidence' | 'min' | 'max' | 'explain';

const KINDS: Record<string, Kind> = { _confidence: 'confidence', _min: 'min', _max: 'max', _explain: 'explain' };

/**
 * Whether an answer row holds what no prediction can be, and why: the row is then quarantined
 * (its reason in errors.jsonl) rather than written or profiled. Only what is wrong whatever the
 * model is refused, in the members the run writes:
 * - a number past a double's range (`1e999`), which a CSV would carry as the text `Infinity` and
 *   the profile would leave out;
 * - an object or array where a value is written as a column (the value, its confidence, interval
 *   ends, anomaly flag); explain may be one;
 * - a confidence outside [0, 1];
 * - an interval whose `_min` is above its `_max`.
 * A value outside its own interval is not refused: it is counted (`intervalViolations`).
 *
 * `places` are where the schema's columns, in order, are among an answer row's members read.
 * Answers undefined for a row that passes: the check is made on every row scored, so it builds
 * its reason only for a row that does not.
 */
export function answerCheck(schema: OutputSchema, places: readonly number[]): (answer: readonly unknown[]) => string | undefined {
  const members = schema.targets.flatMap((t) => t.columns.map((c) => c.member));
  const kinds = schema.targets.flatMap((t) => t.columns.map((c) => KINDS[c.member.slice(t.target.length)] ?? 'value'));
  // The interval ends written, as pairs of column numbers.
  const intervals: [number, number][] = [];
  kinds.forEach((kind, c) => {
    if (kind === 'min' && kinds[c + 1] === 'max') intervals.push([c, c + 1]);
  });
  return (answer) => {
    for (let c = 0; c < places.length; c++) {
      const value = answer[places[c]];
      if (typeof value === 'number') {
        if (value - value !== 0) return `the model's ${members[c]} is a number past the range of a double (such as 1e999)`;
        if (kinds[c] === 'confidence' && !(value >= 0 && value <= 1)) return `the model's ${members[c]} is ${value}, outside [0, 1]`;
      } else if (typeof value === 'object' && value !== null && kinds[c] !== 'explain') {
        return `the model's ${members[c]} is ${Array.isArray(value) ? 'an array' : 'an object'}, where a value is written`;
      }
    }
    for (let i = 0; i < intervals.length; i++) {
      const [min, max] = intervals[i];
      const low = answer[places[min]];
      const high = answer[places[max]];
      if (typeof low === 'number' && typeof high === 'number' && low > high) return `the model's ${members[min]} ${low} is above ${members[max]} ${high}`;
    }
    return undefined;
  };
}
