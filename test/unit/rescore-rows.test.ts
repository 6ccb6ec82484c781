import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS } from '../../src/config/limits.js';
import type { InputRow } from '../../src/formats/row-parser.js';
import { inputDigest, type PatchedRun } from '../../src/scoring/patched-run.js';
import { planRowsToSend, type RowReading, rowsSource } from '../../src/scoring/rescore-rows.js';
import { parseLocation } from '../../src/storage/location.js';
import { createStorage } from '../../src/storage/storage.js';
import { tempDir } from '../helpers/scoring.js';

let tmp: Awaited<ReturnType<typeof tempDir>>;
const storage = createStorage();
beforeAll(async () => (tmp = await tempDir()));
afterAll(async () => {
  storage.close();
  await tmp.cleanup();
});

/** A CSV run of two files (columns id, note) that quarantined rows 3 and 7 (file 0) and 1209 (file 1, malformed: a field too many). */
function patchedRun(syntax: 'csv' | 'jsonl' = 'csv'): PatchedRun {
  const inputs = ['/data/a.csv', '/data/b.csv'].map((location) => ({ location }));
  return {
    runId: 'r1',
    folder: parseLocation('/runs/r1'),
    manifest: { input: { location: '/data/' }, inputs } as unknown as PatchedRun['manifest'],
    layout: {
      syntax,
      columns: ['id', 'note'],
      sent: ['note'],
      outputFormat: syntax,
      output: { inputColumns: ['id', 'note'], rowNumber: false, compress: 'none' },
      schema: { targets: [], columns: [], warnings: [] },
    },
    outputs: [],
    errors: { file: 'errors.jsonl', location: '/runs/r1/errors.jsonl', rows: 3, bytes: 0, sha256: '' },
    quarantined: { rows: [3, 7, 1209], lines: [4, 8, 211], files: [0, 0, 1], malformed: new Map([[1209, inputDigest(JSON.stringify('9,x,extra'))]]) },
  };
}

const reading = (patched: PatchedRun): RowReading => ({ patched, options: { quote: '"' }, limits: DEFAULT_LIMITS });

async function rowsFile(name: string, lines: readonly unknown[]): Promise<string> {
  const path = join(tmp.dir, name);
  await writeFile(path, lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n') + '\n');
  return path;
}

async function plan(lines: readonly unknown[], patched = patchedRun()) {
  const path = await rowsFile('rows.jsonl', lines);
  return planRowsToSend(storage, parseLocation(path), '--rows rows.jsonl', reading(patched));
}

describe('planRowsToSend', () => {
  it('plans a segment per input file, and reads each row back at its place: CSV values as the writer would write them', async () => {
    const patched = patchedRun();
    const path = await rowsFile('good.jsonl', [
      { row: 3, line: 4, input: { id: '2', note: 'a, "quoted" note' }, status: 500 },
      { row: 7, input: { id: 6, note: null } },
      { row: 1209, input: '9,x' },
    ]);
    const toSend = await planRowsToSend(storage, parseLocation(path), '--rows good.jsonl', reading(patched));
    expect(toSend.rows).toEqual([3, 7, 1209]);
    expect(toSend.lines).toEqual([4, 8, 211]);
    expect(toSend.segments.map((s) => [s.file, s.firstRow, s.rows])).toEqual([
      [0, 0, 2],
      [1, 2, 1],
    ]);
    const source = rowsSource(storage, toSend, reading(patched));
    const rows: InputRow[][] = [];
    for (const segment of toSend.segments) {
      const read: InputRow[] = [];
      for await (const chunk of source(segment.index, new AbortController().signal)) read.push(...chunk);
      rows.push(read);
    }
    expect(rows).toEqual([
      [
        { index: 2, line: 4, record: { id: '2', note: 'a, "quoted" note' }, text: '2,"a, ""quoted"" note"' },
        { index: 6, line: 8, record: { id: '6', note: '' }, text: '6,' },
      ],
      [{ index: 1208, line: 211, record: { id: '9', note: 'x' }, text: '9,x' }],
    ]);
  });

  it('leaves out a malformed row whose input was not changed, and quarantines again one that still cannot be read', async () => {
    const toSend = await plan([
      { row: 3, input: '1,a,b' },
      { row: 1209, input: '9,x,extra' },
    ]);
    expect(toSend.rows).toEqual([3]);
    const source = rowsSource(storage, toSend, reading(patchedRun()));
    const read: InputRow[] = [];
    for await (const chunk of source(0, new AbortController().signal)) read.push(...chunk);
    expect(read).toEqual([{ index: 2, line: 4, text: '1,a,b', problem: 'expected 2 fields, found 3' }]);
  });

  it('keeps a JSON Lines row as written, long digits too', async () => {
    const patched = patchedRun('jsonl');
    const toSend = await plan(['{"row":7,"input":{"id": 12345678901234567890,"note":"x"},"title":"t"}'], patched);
    const read: InputRow[] = [];
    for await (const chunk of rowsSource(storage, toSend, reading(patched))(0, new AbortController().signal)) read.push(...chunk);
    expect(read[0]).toMatchObject({ index: 6, line: 8, text: '{"id": 12345678901234567890,"note":"x"}' });
  });

  it('refuses, naming the file and line, what is not a quarantined row of the run in its order', async () => {
    const refused = (lines: unknown[]) =>
      plan(lines).then(
        () => 'planned',
        (err: Error) => err.message,
      );
    expect(
      await refused([
        { row: 7, input: { id: '1', note: '' } },
        { row: 3, input: { id: '1', note: '' } },
      ]),
    ).toBe("--rows rows.jsonl: line 2 names row 3 after row 7: keep errors.jsonl's lines in its order, each row once");
    expect(await refused([{ row: 4, input: {} }])).toBe(
      '--rows rows.jsonl: line 1 names row 4, which run r1 did not quarantine; keep only lines of its errors.jsonl',
    );
    expect(await refused(['{"row":3,'])).toMatch(/^--rows rows.jsonl: line 1 is not JSON \(/);
    expect(await refused([{ input: {} }])).toBe('--rows rows.jsonl: line 1 names no row (a "row" number, as each line of errors.jsonl has)');
    expect(await refused([{ row: 3 }])).toBe(`--rows rows.jsonl: line 1 (row 3) has no "input": keep each line's row under "input"`);
    expect(await refused([{ row: 3, input: { id: '1', notes: '' } }])).toBe(
      '--rows rows.jsonl: line 1 (row 3): the input file has no column(s) notes, and no value for note: change the values, not the columns',
    );
    expect(await refused([{ row: 3, input: { id: '1', note: [1] } }])).toBe(
      '--rows rows.jsonl: line 1 (row 3): column note holds an array; a CSV value is text',
    );
    expect(await refused([{ row: 3, input: 5 }])).toBe('--rows rows.jsonl: line 1 (row 3): "input" must be the row: its values by column, or its text');
    const long = { row: 3, input: { id: '1', note: 'x'.repeat(2 * DEFAULT_LIMITS.rowBytes + 64 * 1024) } };
    expect(await refused([long])).toMatch(/^--rows rows.jsonl: line 1 takes \d+ bytes, more than a line may \(\d+: twice MAX_ROW_BYTES/);
  });
});
