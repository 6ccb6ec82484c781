import { createHash } from 'node:crypto';
import { appendFile, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { beforeAll, describe, expect, it } from 'vitest';
import { ENGINE_ERROR_VALUE } from '../../src/simulator/predict.js';
import { csvLine, RENTAL_COLUMNS, rentalRow } from '../../src/simulator/sample-data.js';
import { corrected, RESCORE_MODEL, useRescoreFixture } from '../helpers/rescore.js';
import { rentalsText } from '../helpers/scoring.js';

// `rescore` sends again only the rows a run quarantined, and its new version of the run's outputs
// is what a run of the corrected input writes, byte for byte. Rows are counted as the simulator,
// a real HTTP server, received them.

const ROWS = 2_000;
/** 1% of the rows: the engine refuses them for their location until corrected (or the engine is fixed). */
const isBad = (i: number) => i % 100 === 37;
const BAD = Array.from({ length: ROWS }, (_, i) => i).filter(isBad);
/** Several segments and batches, so that the run's outputs are joined from parts as usual. */
const OPTIONS = ['--segment-rows', '500', '--batch-size', '200'];
const f = useRescoreFixture(OPTIONS);
const { cli, score, editedErrors, manifest: readManifest } = f;

/** Each file of a run folder (but the manifest, whose times differ) by name, as bytes. */
async function outputs(runId: string): Promise<Record<string, Buffer>> {
  const folder = join(f.out, runId);
  const files: Record<string, Buffer> = {};
  for (const entry of await readdir(folder, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || entry.name === 'manifest.json' || entry.name === 'describe.json') continue;
    const path = join(entry.parentPath, entry.name);
    files[path.slice(folder.length + 1)] = await readFile(path);
  }
  return files;
}

/** A digest of a run folder's files, to see that rescoring only read it. */
async function folderDigest(runId: string): Promise<string> {
  const hash = createHash('sha256');
  const folder = join(f.out, runId);
  for (const name of (await readdir(folder, { recursive: true })).sort()) {
    hash.update(name);
    hash.update(await readFile(join(folder, name)).catch(() => Buffer.alloc(0)));
  }
  return hash.digest('hex');
}

describe('rescore', () => {
  let input: string;
  let correctedInput: string;

  beforeAll(async () => {
    input = join(f.dir, 'rentals.csv');
    correctedInput = join(f.dir, 'rentals-corrected.csv');
    await writeFile(
      input,
      rentalsText(ROWS, (row, i) => void (isBad(i) && (row.location = ENGINE_ERROR_VALUE))),
    );
    await writeFile(
      correctedInput,
      rentalsText(ROWS, (row, i) => void (isBad(i) && (row.location = 'good'))),
    );
    const run = await score(input, 'csv-run');
    expect(run.counts).toMatchObject({ rowsIn: ROWS, rowsScored: ROWS - BAD.length, rowsQuarantined: BAD.length });
  });

  it('--rows: the corrected rows alone are sent, and predictions.csv is a run of the corrected file, byte for byte', async () => {
    const before = await folderDigest('csv-run');
    const rows = await editedErrors('csv-run', 'corrected.jsonl', corrected);
    const r = await cli(['rescore', 'csv-run', '--out', f.out, '--rows', rows, '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.rowsSent).toBe(BAD.length);
    expect(r.requests).toBe(1);
    const summary = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(summary).toMatchObject({ runId: 'csv-run.rescore-1', patches: 'csv-run', rowsSent: 20, rowsScored: 20, rowsQuarantinedAgain: 0 });

    await score(correctedInput, 'csv-corrected');
    const [patched, reference] = await Promise.all([outputs('csv-run.rescore-1'), outputs('csv-corrected')]);
    expect(Object.keys(patched).sort()).toEqual(['_SUCCESS', 'errors.jsonl', 'predictions.csv']);
    expect(patched['predictions.csv'].equals(reference['predictions.csv'])).toBe(true);
    expect(patched['errors.jsonl'].length).toBe(0);

    const manifest = await readManifest('csv-run.rescore-1');
    expect(manifest.state).toBe('succeeded');
    expect(manifest.patches).toMatchObject({ runId: 'csv-run', rows: `--rows ${rows}`, counts: { rowsIn: 20, rowsScored: 20, rowsQuarantined: 0 } });
    expect(manifest.counts).toMatchObject({ rowsIn: ROWS, rowsScored: ROWS, rowsQuarantined: 0 });
    expect(manifest.trigger).toEqual({ kind: 'cli', command: 'rescore' });
    expect(manifest.outputs.find((o) => o.file === 'predictions.csv')).toMatchObject({
      rows: ROWS,
      sha256: createHash('sha256').update(reference['predictions.csv']).digest('hex'),
    });
    // The patched run is only read.
    expect(await folderDigest('csv-run')).toBe(before);
  });

  it('without --rows, once the model is fixed: every refused row is sent as it was, and the outputs are a run of the fixed model', async () => {
    const r = await cli(['rescore', 'csv-run', '--out', f.out, '--service', f.fixed.url, '--run-id', 'csv-fixed-model'], f.fixed);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('run csv-fixed-model patched run csv-run: 20 rows sent again, 20 scored, 0 quarantined again');
    expect(r.rowsSent).toBe(BAD.length);
    await score(input, 'csv-all-fixed', [], f.fixed);
    const [patched, reference] = await Promise.all([outputs('csv-fixed-model'), outputs('csv-all-fixed')]);
    expect(patched['predictions.csv'].equals(reference['predictions.csv'])).toBe(true);
  });

  it('a row still refused stays in the new errors.jsonl, as a run of the half-corrected file quarantines it; a row not listed keeps its line', async () => {
    // Lines 0-3 left out (not sent), 4-11 corrected, 12-19 sent as they were (refused again).
    const rows = await editedErrors('csv-run', 'half.jsonl', (line, k) => (k < 4 ? undefined : k < 12 ? corrected(line) : line));
    const r = await cli(['rescore', 'csv-run', '--out', f.out, '--rows', rows, '--run-id', 'csv-half']);
    expect(r.code, r.stderr).toBe(0);
    expect((await readManifest('csv-half')).patches?.counts).toMatchObject({ rowsIn: 16, rowsScored: 8, rowsQuarantined: 8 });
    const half = join(f.dir, 'rentals-half.csv');
    const fixedRows = new Set(BAD.slice(4, 12));
    await writeFile(
      half,
      rentalsText(ROWS, (row, i) => void (isBad(i) && (row.location = fixedRows.has(i) ? 'good' : ENGINE_ERROR_VALUE))),
    );
    await score(half, 'csv-half-reference');
    const [patched, reference] = await Promise.all([outputs('csv-half'), outputs('csv-half-reference')]);
    expect(patched['predictions.csv'].equals(reference['predictions.csv'])).toBe(true);
    expect(patched['errors.jsonl'].toString()).toBe(reference['errors.jsonl'].toString());
  });

  it('refuses a --rows line naming a row the run did not quarantine, naming the line, before anything is sent', async () => {
    const rows = await editedErrors('csv-run', 'wrong.jsonl', (line, k) => (k === 1 ? corrected(line).replace(/^\{"row":\d+/, '{"row":140') : corrected(line)));
    const r = await cli(['rescore', 'csv-run', '--out', f.out, '--rows', rows, '--run-id', 'csv-wrong']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`--rows ${rows}: line 2 names row 140, which run csv-run did not quarantine`);
    expect(r.stderr).toContain('[E_USAGE]');
    expect(r.rowsSent).toBe(0);
    await expect(readdir(join(f.out, 'csv-wrong'))).rejects.toThrow();
  });

  it('refuses outputs changed since the run, naming the file', async () => {
    await score(input, 'csv-changed');
    await appendFile(join(f.out, 'csv-changed', 'predictions.csv'), 'x\n');
    const r = await cli(['rescore', 'csv-changed', '--out', f.out]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${join(f.out, 'csv-changed', 'predictions.csv')} changed since its run wrote it`);
    expect(r.stderr).toContain('[E_RUN_STATE]');
    expect(r.rowsSent).toBe(0);
  });

  it('refuses a run that did not succeed, naming its state', async () => {
    const r0 = await cli(['score', input, '--model', RESCORE_MODEL, '--out', f.out, '--run-id', 'csv-failed', '--max-error-rate', '0.005', ...OPTIONS]);
    expect(r0.code).toBe(1);
    const r = await cli(['rescore', 'csv-failed', '--out', f.out]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('run csv-failed is failed: only a run that succeeded has outputs to patch [E_RUN_CONFLICT]');
  });
});

describe('rescore of other outputs', () => {
  it('JSON Lines, gzipped and cut into files: every file a run of the corrected input writes, digits kept', async () => {
    // Each row carries a number JSON.parse would round: the output keeps it as written.
    const jsonl = (edit: (i: number) => string | undefined) =>
      gzipSync(
        Array.from({ length: ROWS }, (_, i) => {
          const row = Object.fromEntries(RENTAL_COLUMNS.map((c, k) => [c, rentalRow(i)[k]]));
          row.location = edit(i) ?? row.location;
          return `${JSON.stringify(row).slice(0, -1)},"account":1234567890123456789${i % 10}}\n`;
        }).join(''),
      );
    const input = join(f.dir, 'rentals.jsonl.gz');
    const correctedInput = join(f.dir, 'rentals-corrected.jsonl.gz');
    await writeFile(
      input,
      jsonl((i) => (isBad(i) ? ENGINE_ERROR_VALUE : undefined)),
    );
    await writeFile(
      correctedInput,
      jsonl((i) => (isBad(i) ? 'good' : undefined)),
    );
    const shaping = ['--max-rows-per-file', '700', '--row-number'];
    await score(input, 'jsonl-run', shaping);
    const rows = await editedErrors('jsonl-run', 'jsonl-corrected.jsonl', corrected);
    const r = await cli(['rescore', 'jsonl-run', '--out', f.out, '--rows', rows]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.rowsSent).toBe(BAD.length);
    await score(correctedInput, 'jsonl-corrected', shaping);
    const [patched, reference] = await Promise.all([outputs('jsonl-run.rescore-1'), outputs('jsonl-corrected')]);
    expect(Object.keys(patched).sort()).toEqual(Object.keys(reference).sort());
    expect(Object.keys(patched)).toContain('predictions-00002.jsonl.gz');
    for (const name of Object.keys(reference)) expect(patched[name].equals(reference[name]), name).toBe(true);
  });

  it('one output per input file: each file gets its own rows back, and a malformed row corrected in --rows is read again', async () => {
    const folder = join(f.dir, 'parts');
    const correctedFolder = join(f.dir, 'parts-corrected');
    await Promise.all([mkdir(folder), mkdir(correctedFolder)]);
    const location = RENTAL_COLUMNS.indexOf('location');
    const part = (p: number, fix: boolean) => {
      const lines = [csvLine(RENTAL_COLUMNS)];
      for (let i = p * 1_000; i < (p + 1) * 1_000; i++) {
        const values = rentalRow(i);
        if (isBad(i)) values[location] = fix ? 'good' : ENGINE_ERROR_VALUE;
        // One malformed row (a field too many) in the second file.
        lines.push(csvLine(i === 1_500 && !fix ? [...values, 'extra'] : values));
      }
      return lines.join('');
    };
    for (const p of [0, 1]) {
      await writeFile(join(folder, `part-${p}.csv`), part(p, false));
      await writeFile(join(correctedFolder, `part-${p}.csv`), part(p, true));
    }
    const shaping = ['--output-per-file', '--max-rows-per-file', '400', '--max-error-rate', '0.02'];
    await score(`${folder}/`, 'parts-run', shaping);
    // Without --rows, the malformed row is not sent: it could not be read, and stays as it was.
    const asItWas = await cli(['rescore', 'parts-run', '--out', f.out, '--service', f.fixed.url, '--run-id', 'parts-fixed-model'], f.fixed);
    expect(asItWas.code, asItWas.stderr).toBe(0);
    expect(asItWas.rowsSent).toBe(BAD.length);
    const malformed = (await readFile(join(f.out, 'parts-run', 'errors.jsonl'), 'utf8')).split('\n').filter((l) => l.includes('"Malformed row"'));
    expect(malformed).toHaveLength(1);
    expect(await readFile(join(f.out, 'parts-fixed-model', 'errors.jsonl'), 'utf8')).toBe(`${malformed[0]}\n`);
    // The malformed row's input is its text: corrected, the field too many goes.
    const rows = await editedErrors('parts-run', 'parts.jsonl', (line) => corrected(line).replace(',extra"', '"'));
    const r = await cli(['rescore', 'parts-run', '--out', f.out, '--rows', rows]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.rowsSent).toBe(BAD.length + 1);
    await score(`${correctedFolder}/`, 'parts-corrected', shaping);
    const [patched, reference] = await Promise.all([outputs('parts-run.rescore-1'), outputs('parts-corrected')]);
    expect(Object.keys(patched).sort()).toEqual(Object.keys(reference).sort());
    for (const name of Object.keys(reference)) expect(patched[name].equals(reference[name]), name).toBe(true);
  });
});
