import { fileURLToPath } from 'node:url';
import { predictTargets } from '../../src/simulator/models.js';
import { csvLine, RENTAL_COLUMNS, rentalRow } from '../../src/simulator/sample-data.js';
import { waitFor } from '../helpers/queue.js';
import type { MindsdbConnection, MindsdbServer } from './mindsdb-server.js';
import { sqlRows } from './mindsdb-server.js';

/** The Bring-Your-Own-Model engine the suite's models are made with. */
export const ENGINE = 'scorer_byom';
const MODEL_FILE = fileURLToPath(new URL('./byom/linear_model.py', import.meta.url));
const EMPTY_REQUIREMENTS = fileURLToPath(new URL('./byom/requirements.txt', import.meta.url));

/** Columns of a rentals training file: the model inputs (no listing id, no notes) and the target. */
const RENTAL_INPUTS = RENTAL_COLUMNS.filter((c) => c !== 'listing_id' && c !== 'notes');

/**
 * Home-rentals training rows `first..first+rows`: the sample data's inputs (blanks, non-ASCII
 * neighbourhoods and all) and a rental price from the simulator's formula of `version`, plus a
 * deterministic wobble so that the fit is a real fit. Two versions trained on two slices differ.
 */
export function rentalsTrainingCsv(first: number, rows: number, version: 1 | 2): string {
  const lines = [csvLine([...RENTAL_INPUTS, 'rental_price'])];
  for (let i = first; i < first + rows; i++) {
    const fields = rentalRow(i);
    const row = Object.fromEntries(RENTAL_COLUMNS.map((c, j) => [c, fields[j]]));
    const price = Number(predictTargets('home_rentals_model', version, row).rental_price);
    lines.push(csvLine([...RENTAL_INPUTS.map((c) => row[c]), String(Math.round(price + ((i * 37) % 101) - 50))]));
  }
  return lines.join('');
}

/** customer_churn rows: tenure, plan and monthly charges, the class from the simulator's formula. */
export function churnRow(i: number): { tenure_months: string; plan: string; monthly_charges: string } {
  return {
    tenure_months: String((i * 7) % 72),
    plan: ['basic', 'standard', 'premium'][i % 3],
    monthly_charges: (((i * 13) % 100) + 20.5).toFixed(2),
  };
}

/** customer_churn rows to score: churnRow's inputs, each row keyed by a `customer_id` the model does not read. */
export function churnCsv(rows: number): string {
  const lines = [csvLine(['customer_id', 'tenure_months', 'plan', 'monthly_charges'])];
  for (let i = 0; i < rows; i++) {
    const row = churnRow(i);
    lines.push(csvLine([`C${String(i).padStart(6, '0')}`, row.tenure_months, row.plan, row.monthly_charges]));
  }
  return lines.join('');
}

export function churnTrainingCsv(rows: number): string {
  const lines = [csvLine(['tenure_months', 'plan', 'monthly_charges', 'churn'])];
  for (let i = 0; i < rows; i++) {
    const row = churnRow(i);
    lines.push(csvLine([row.tenure_months, row.plan, row.monthly_charges, String(predictTargets('customer_churn', 1, row).churn)]));
  }
  return lines.join('');
}

/**
 * Makes the suite's models on a fresh server: the BYOM engine from the model file, then
 * - `home_rentals_model` (numeric `rental_price`), version 1 from one slice of rows and version 2
 *   retrained on another, so `.1` and `.2` both answer and the active one is 2;
 * - `customer_churn` (categorical `churn`, yes or no).
 * Resolves once every version is `complete`.
 */
export async function trainModels(server: MindsdbServer): Promise<void> {
  await server.sql(`CREATE ML_ENGINE ${ENGINE} FROM byom USING code='${MODEL_FILE}', modules='${EMPTY_REQUIREMENTS}', type='inhouse'`);
  await server.uploadFile('home_rentals', rentalsTrainingCsv(0, 2000, 1));
  await server.uploadFile('home_rentals_v2', rentalsTrainingCsv(5000, 2000, 2));
  await server.uploadFile('customer_churn', churnTrainingCsv(1500));
  await server.sql(`CREATE MODEL mindsdb.home_rentals_model FROM files (SELECT * FROM home_rentals) PREDICT rental_price USING engine='${ENGINE}'`);
  await server.sql(`CREATE MODEL mindsdb.customer_churn FROM files (SELECT * FROM customer_churn) PREDICT churn USING engine='${ENGINE}'`);
  await waitForVersions(server, 'home_rentals_model', 1);
  await server.sql(`RETRAIN mindsdb.home_rentals_model FROM files (SELECT * FROM home_rentals_v2)`);
  await waitForVersions(server, 'home_rentals_model', 2);
  await waitForVersions(server, 'customer_churn', 1);
}

/** Waits until `model` has `count` versions, all complete; a version in error throws with its message. */
export async function waitForVersions(server: MindsdbConnection, model: string, count: number): Promise<void> {
  await waitFor(
    `MindsDB to finish training ${model} (${count} versions)`,
    async () => {
      const rows = sqlRows(await server.sql(`SELECT name, version, status, error FROM mindsdb.models WHERE name = '${model}'`));
      const failed = rows.find((r) => r.status === 'error');
      if (failed) throw new Error(`MindsDB could not train ${model} version ${String(failed.version)}: ${String(failed.error)}`);
      return rows.length >= count && rows.every((r) => r.status === 'complete');
    },
    120_000,
    200,
  );
}
