import { mkdtemp, readFile, rm, writeFile, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { text } from 'node:stream/consumers';
import Papa from 'papaparse';
import { afterAll, beforeAll } from 'vitest';
import { parseRunOptions, type RunOptionsInput } from '../../src/config/run-options.js';
import type { ServiceTokens } from '../../src/config/service-tokens.js';
import { silentLogger } from '../../src/log.js';
import type { Manifest } from '../../src/scoring/manifest.js';
import { scoreRun } from '../../src/scoring/score-run.js';
import { requestValue } from '../../src/scoring/request-row.js';
import { createSimulator, type Simulator } from '../../src/simulator/server.js';
import type { SimulatorOptions } from '../../src/simulator/options.js';
import { HOME_RENTALS_INPUTS, predictTargets } from '../../src/simulator/models.js';
import { ENGINE_ERROR_VALUE } from '../../src/simulator/predict.js';
import { csvLine, RENTAL_COLUMNS, rentalRow, rentalsCsv } from '../../src/simulator/sample-data.js';
import { createStorage } from '../../src/storage/storage.js';
import type { Storage } from '../../src/storage/storage-types.js';
import type { S3Settings } from '../../src/storage/s3-settings.js';
import { serviceClientFactory } from '../../src/app/service-clients.js';
import { DEFAULT_LIMITS } from '../../src/config/limits.js';

/** A temp folder removed by `cleanup`. */
export async function tempDir(): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'batch-scorer-test-'));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * A test file's simulator (a real HTTP server) and temp folder, with `out` in it for run folders:
 * started before the file's tests, stopped and removed after them.
 */
export function useScoringFixture(): { sim: Simulator; dir: string; out: string } {
  const fixture = { dir: '', out: '' } as { sim: Simulator; dir: string; out: string };
  let tmp: Awaited<ReturnType<typeof tempDir>> | undefined;
  beforeAll(async () => {
    fixture.sim = await startSimulator();
    tmp = await tempDir();
    fixture.dir = tmp.dir;
    fixture.out = join(tmp.dir, 'out');
  });
  afterAll(async () => {
    await fixture.sim?.close();
    await tmp?.cleanup();
  });
  return fixture;
}

/**
 * A test file's input: a rentals CSV of `rows` rows (`input`) in a temp folder of its own (`dir`),
 * written before the file's tests and removed after them.
 */
export function useRentalsInput(rows: number): { dir: string; input: string } {
  const files = { dir: '', input: '' };
  let tmp: Awaited<ReturnType<typeof tempDir>> | undefined;
  beforeAll(async () => {
    tmp = await tempDir();
    files.dir = tmp.dir;
    files.input = join(tmp.dir, 'rentals.csv');
    await writeRentals(files.input, rows);
  });
  afterAll(() => tmp?.cleanup());
  return files;
}

export async function startSimulator(options: SimulatorOptions = {}): Promise<Simulator> {
  return createSimulator({ port: 0, ...options });
}

export async function writeRentals(path: string, rows: number): Promise<void> {
  await writeFile(path, await text(rentalsCsv(rows)));
}

/** A rentals CSV with every sqft `factor` times as large: a run of it drifts from one of writeRentals' (the input column and the predictions). */
export async function writeShiftedRentals(path: string, rows: number, factor: number): Promise<void> {
  await writeFile(
    path,
    rentalsWithSqft(rows, (v) => v * factor),
  );
}

/** A rentals CSV's text of `rows` rows, each row's fields (by column name) passed through `edit` first. */
export function rentalsText(rows: number, edit: (row: Record<string, string>, i: number) => void = () => undefined): string {
  const lines = [csvLine(RENTAL_COLUMNS)];
  for (let i = 0; i < rows; i++) {
    const fields = rentalRow(i);
    const row = Object.fromEntries(RENTAL_COLUMNS.map((c, j) => [c, fields[j]]));
    edit(row, i);
    lines.push(csvLine(RENTAL_COLUMNS.map((c) => row[c])));
  }
  return lines.join('');
}

/** A rentals CSV whose rows `bad(i)` holds for carry `__engine_error__`, which the simulator's engine fails on. */
export async function writeRentalsWithEngineErrors(path: string, rows: number, bad: (i: number) => boolean): Promise<void> {
  await writeFile(
    path,
    rentalsText(rows, (row, i) => {
      if (bad(i)) row.location = ENGINE_ERROR_VALUE;
    }),
  );
}

/** A rentals CSV of `rows` rows with each row's sqft passed through `sqft` (drift tests shift it). */
export function rentalsWithSqft(rows: number, sqft: (value: number) => number = (v) => v): string {
  return rentalsText(rows, (row) => {
    row.sqft = String(sqft(Number(row.sqft)));
  });
}

/** Runs `score` in this process, as the CLI does, with a real storage and the given service. */
export async function score(
  input: string,
  out: string,
  options: RunOptionsInput & { model?: string; tokens?: ServiceTokens; s3?: S3Settings; signal?: AbortSignal } = {},
): Promise<Manifest> {
  const { model = 'mindsdb/home_rentals_model', tokens = new Map(), s3, signal, ...rest } = options;
  const storage: Storage = createStorage(s3);
  try {
    return await scoreRun(
      { input, out, model, options: parseRunOptions(rest) },
      { storage, log: silentLogger, predictorFor: serviceClientFactory(tokens, DEFAULT_LIMITS), signal },
    );
  } finally {
    storage.close();
  }
}

/** The run folder's files, by name. */
export async function runFolder(out: string, runId: string): Promise<Record<string, string>> {
  const dir = join(out, runId);
  const files: Record<string, string> = {};
  for (const name of await readdir(dir)) if (!name.startsWith('_work')) files[name] = await readFile(join(dir, name), 'utf8');
  return files;
}

export function parseCsv(text: string): Record<string, string>[] {
  return Papa.parse<Record<string, string>>(text, { header: true, newline: '\n', skipEmptyLines: true }).data;
}

/** A JSON Lines file's rows (predictions.jsonl, errors.jsonl), one object a line. */
export function parseJsonLines(text: string): Record<string, unknown>[] {
  return text
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** The simulator's prediction for a CSV row, computed from its formula as the row was sent. */
export function expectedRental(row: Record<string, string>, version = 2): Record<string, unknown> {
  const sent = Object.fromEntries(HOME_RENTALS_INPUTS.map((c) => [c, requestValue(row[c], true)]));
  return predictTargets('home_rentals_model', version, sent);
}
