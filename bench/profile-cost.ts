/**
 * What the prediction and input profile costs a run: the CPU of ProfileAccumulator's `add` and
 * `addInputs` over the rows of a CPU-bound run (the simulator's answers and the values the
 * request encoder keeps, computed beforehand, outside the timing), and of storing it per segment.
 * Measured in this process, in chunks, so the rows never all exist at once.
 */
import { buildOutputSchema, predictionMembers } from '../src/scoring/output-schema.js';
import { ProfileAccumulator } from '../src/scoring/prediction-profile.js';
import { requestValue } from '../src/scoring/request-row.js';
import { HOME_RENTALS_INPUTS, predictTargets } from '../src/simulator/models.js';
import { RENTAL_COLUMNS, rentalRow } from '../src/simulator/sample-data.js';

const CHUNK = 10_000;

/** CPU-seconds the profile of `rows` rows takes, cut into segments of `segmentRows`. */
export function profileCpuSeconds(rows: number, segmentRows: number): number {
  const inputAt = HOME_RENTALS_INPUTS.map((c) => RENTAL_COLUMNS.indexOf(c));
  const row = (fields: string[]) => Object.fromEntries(HOME_RENTALS_INPUTS.map((c, k) => [c, requestValue(fields[inputAt[k]], true)]));
  const schema = buildOutputSchema(['rental_price'], predictTargets('home_rentals_model', 2, row(rentalRow(0))), [], predictionMembers(undefined, false));
  let profile = new ProfileAccumulator(schema, HOME_RENTALS_INPUTS);
  let micros = 0;
  for (let first = 0; first < rows; first += CHUNK) {
    const n = Math.min(CHUNK, rows - first);
    const inputs: unknown[][] = [];
    const predictions: unknown[][] = [];
    for (let i = first; i < first + n; i++) {
      const values = row(rentalRow(i));
      const answer = predictTargets('home_rentals_model', 2, values);
      inputs.push(HOME_RENTALS_INPUTS.map((c) => values[c]));
      predictions.push(schema.targets.flatMap((t) => t.columns.map((c) => answer[c.member] ?? null)));
    }
    const start = process.cpuUsage();
    for (let i = 0; i < n; i++) {
      profile.add(predictions[i]);
      profile.addInputs(inputs[i]);
      // A segment's end: its profile is stored in its done marker, and the next starts afresh.
      if ((first + i + 1) % segmentRows === 0) {
        JSON.stringify(profile.toJSON());
        profile = new ProfileAccumulator(schema, HOME_RENTALS_INPUTS);
      }
    }
    const used = process.cpuUsage(start);
    micros += used.user + used.system;
  }
  return micros / 1e6;
}
