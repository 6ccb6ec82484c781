import { createWriteStream } from 'node:fs';
import { open, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip, gzipSync } from 'node:zlib';
import { parquetMetadata } from 'hyparquet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Manifest } from '../../src/scoring/manifest.js';
import type { Simulator } from '../../src/simulator/server.js';
import { csvLine, RENTAL_COLUMNS, rentalRow } from '../../src/simulator/sample-data.js';
import { runCli } from '../helpers/cli.js';
import { folderTree } from '../helpers/folder-tree.js';
import { runCliMeasured, type MeasuredCliResult } from '../helpers/peak-rss.js';
import { parseJsonLines, startSimulator, tempDir } from '../helpers/scoring.js';

/**
 * Issue 32, item 4, replayed through the real CLI against the simulator: a gzipped field of 1 GiB,
 * a gzip bomb, a Parquet footer of 200,000 row groups or of a length past its bound, and a disk
 * without room for a staged copy each end in a quarantined row or an E_LIMIT naming the setting,
 * in bounded memory, leaving no partial staged copy. Hostile files are written by streaming
 * generators through zlib, never held whole.
 */

const MODEL = 'mindsdb/home_rentals_model';
const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
/** The bound on every hostile input's peak RSS. */
const PEAK_RSS_MIB = 400;

let sim: Simulator;
let tmp: Awaited<ReturnType<typeof tempDir>>;
beforeAll(async () => {
  [sim, tmp] = await Promise.all([startSimulator(), tempDir()]);
});
afterAll(() => Promise.all([sim.close(), tmp.cleanup()]));

/** Writes what `parts` yields, gzipped at zlib's best level, to `path`; answers the file's bytes. */
async function gzipTo(path: string, parts: () => Generator<Buffer | string>): Promise<number> {
  await pipeline(Readable.from(parts()), createGzip({ level: 9 }), createWriteStream(path));
  return (await stat(path)).size;
}

/** `size` bytes of `text` repeated, a MiB at a time. */
function* repeat(text: string, size: number): Generator<Buffer> {
  const chunk = Buffer.alloc(MiB, text);
  for (let left = size; left > 0; left -= MiB) yield left >= MiB ? chunk : chunk.subarray(0, left);
}

/** Scores `input` through the CLI, its peak RSS measured, with `env` besides the simulator's URL. */
function score(input: string, runId: string, env: Record<string, string> = {}): Promise<MeasuredCliResult> {
  return runCliMeasured(['score', input, '--model', MODEL, '--out', join(tmp.dir, 'out'), '--run-id', runId, '--json'], {
    MODEL_SERVICE_URL: sim.url,
    ...env,
  });
}

const runFolder = (runId: string) => join(tmp.dir, 'out', runId);

/** The run folder's files below `_work/inputs/`: staged copies, whole or half-written. */
async function stagedFiles(runId: string): Promise<string[]> {
  return Object.keys(await folderTree(runFolder(runId))).filter((name) => name.startsWith('_work/inputs/') && !name.endsWith('/'));
}

async function expectFailedWithLimit(r: MeasuredCliResult, runId: string, setting: string): Promise<Manifest> {
  expect(r.code, r.stderr).toBe(1);
  expect(r.stderr).toContain('E_LIMIT');
  expect(r.stderr).toContain(setting);
  const tree = await folderTree(runFolder(runId));
  expect(Object.keys(tree)).not.toContain('_SUCCESS');
  const manifest = JSON.parse(await readFile(join(runFolder(runId), 'manifest.json'), 'utf8')) as Manifest & { error: { code: string; message: string } };
  expect(manifest.error).toMatchObject({ code: 'E_LIMIT', message: expect.stringContaining(setting) as string });
  return manifest;
}

describe('a gzipped CSV with one field of 1 GiB', () => {
  it('quarantines that row naming MAX_FIELD_BYTES and scores the others, under 400 MiB', async () => {
    const rows = 400;
    const long = 150;
    const notes = RENTAL_COLUMNS.indexOf('notes');
    const input = join(tmp.dir, 'long-field.csv.gz');
    const gzBytes = await gzipTo(input, function* () {
      yield csvLine(RENTAL_COLUMNS);
      for (let i = 0; i < rows; i++) {
        const values = rentalRow(i);
        if (i !== long) {
          yield csvLine(values);
          continue;
        }
        values[notes] = '\u0000';
        const [before, after] = csvLine(values).split('\u0000');
        yield before;
        yield* repeat('x', GiB);
        yield after;
      }
    });
    expect(gzBytes).toBeLessThan(2 * MiB);

    // Its ratio (about 1,000) is a bomb's: the default MAX_INFLATION_RATIO refuses it (see below), so it is raised here.
    const r = await score(input, 'long-field', { MAX_INFLATION_RATIO: '2000' });
    console.log(`a 1 GiB field in ${gzBytes} bytes of gzip: peak RSS ${r.peakRssMiB.toFixed(0)} MiB`);
    expect(r.code, r.stderr).toBe(0);
    expect(r.peakRssMiB).toBeLessThan(PEAK_RSS_MIB);
    const folder = runFolder('long-field');
    const manifest = JSON.parse(await readFile(join(folder, 'manifest.json'), 'utf8')) as Manifest;
    expect(manifest.counts).toMatchObject({ rowsIn: rows, rowsScored: rows - 1, rowsQuarantined: 1 });
    const errorsText = await readFile(join(folder, 'errors.jsonl'), 'utf8');
    expect(Buffer.byteLength(errorsText)).toBeLessThan(4096);
    const [quarantined] = parseJsonLines(errorsText);
    expect(quarantined).toMatchObject({
      row: long + 1,
      title: 'Malformed row',
      detail: expect.stringMatching(/^line \d+: the row's field of 1,073,741,824 bytes passes MAX_FIELD_BYTES \(1 MiB\)/) as string,
      input: expect.stringMatching(/^L00000150,.*x+\.\.\. \d+ more bytes$/) as string,
    });
    const output = await readFile(join(folder, 'predictions.csv.gz'));
    expect(output.length).toBeGreaterThan(0);
    expect(await stagedFiles('long-field')).toEqual([]);
  }, 120_000);
});

describe('the row bounds a run was planned with', () => {
  it('read its every segment, after a resume by a process with other settings too', async () => {
    const notes = RENTAL_COLUMNS.indexOf('notes');
    const wide = [50, 450];
    const lines = [csvLine(RENTAL_COLUMNS)];
    for (let i = 0; i < 600; i++) {
      const values = rentalRow(i);
      if (wide.includes(i)) values[notes] = 'n'.repeat(2000);
      lines.push(csvLine(values));
    }
    const input = join(tmp.dir, 'wide-notes.csv');
    await writeFile(input, lines.join(''));
    const args = ['score', input, '--model', MODEL, '--out', join(tmp.dir, 'out'), '--run-id', 'planned-bounds'];
    const shape = ['--segment-rows', '200', '--batch-size', '50', '--segments-at-once', '1'];
    const capped = await runCli([...args, ...shape, '--max-requests', '3'], { MODEL_SERVICE_URL: sim.url, MAX_FIELD_BYTES: '1KiB' });
    expect(capped.stderr).toContain('E_EXPIRED');
    const run = JSON.parse(await readFile(join(runFolder('planned-bounds'), '_work', 'run.json'), 'utf8')) as { input: { rowBounds: unknown } };
    expect(run.input.rowBounds).toEqual({ maxFieldBytes: 1024, maxRowBytes: 4 * MiB });

    // Resumed where a field may take a MiB: the rows are still read as the run was planned.
    const resumed = await runCli([...args, ...shape], { MODEL_SERVICE_URL: sim.url, MAX_FIELD_BYTES: '1MiB' });
    expect(resumed.code, resumed.stderr).toBe(0);
    const manifest = JSON.parse(await readFile(join(runFolder('planned-bounds'), 'manifest.json'), 'utf8')) as Manifest;
    expect(manifest.counts).toMatchObject({ rowsIn: 600, rowsQuarantined: 2 });
    const errors = parseJsonLines(await readFile(join(runFolder('planned-bounds'), 'errors.jsonl'), 'utf8'));
    expect(errors.map((e) => [e.row, e.detail])).toEqual(
      wide.map((i) => [i + 1, expect.stringMatching(/: the row's field of 2,000 bytes passes MAX_FIELD_BYTES \(1 KiB\)/) as string]),
    );
  }, 60_000);
});

describe('a CSV header past a bound', () => {
  it('fails the run E_LIMIT naming the setting, since the rows have no columns without it', async () => {
    const input = join(tmp.dir, 'wide-header.csv');
    await writeFile(input, `${RENTAL_COLUMNS.join(',')},${'h'.repeat(100)}\n${csvLine([...rentalRow(0), 'v'])}`);
    const r = await score(input, 'wide-header', { MAX_FIELD_BYTES: '64' });
    await expectFailedWithLimit(r, 'wide-header', 'MAX_FIELD_BYTES');
    expect(r.stderr).toContain("wide-header.csv: the header row's field of 100 bytes passes MAX_FIELD_BYTES (64 bytes)");
  }, 60_000);
});

describe('a gzip bomb', () => {
  it('fails E_LIMIT naming MAX_INFLATION_RATIO, leaves no staged copy and no _SUCCESS, under 400 MiB', async () => {
    const input = join(tmp.dir, 'bomb.csv.gz');
    const gzBytes = await gzipTo(input, function* () {
      yield 'a,b\n';
      yield* repeat('1,2\n', 2 * GiB);
    });
    expect(gzBytes).toBeLessThan(4 * MiB);

    const r = await score(input, 'bomb');
    console.log(`a gzip bomb of ${gzBytes} bytes (2 GiB inflated): peak RSS ${r.peakRssMiB.toFixed(0)} MiB`);
    await expectFailedWithLimit(r, 'bomb', 'MAX_INFLATION_RATIO');
    expect(r.peakRssMiB).toBeLessThan(PEAK_RSS_MIB);
    expect(await stagedFiles('bomb')).toEqual([]);
  }, 120_000);
});

describe('Parquet footers', () => {
  it('a footer of 200,000 row groups is refused naming MAX_PARQUET_ROW_GROUPS before it is parsed, fast and under 400 MiB', async () => {
    // Honest: hyparquet reads the same construction of a few row groups as a file of them.
    const few = parquetMetadata(new Uint8Array(parquetOfEmptyGroups(3)));
    expect([few.row_groups.length, few.schema.map((e) => e.name)]).toEqual([3, ['schema', 'x']]);
    const input = join(tmp.dir, 'groups.parquet');
    await writeFile(input, parquetOfEmptyGroups(200_000));
    const started = Date.now();
    const r = await score(input, 'groups');
    const seconds = (Date.now() - started) / 1000;
    console.log(`a footer of 200,000 row groups (${(await stat(input)).size} bytes): peak RSS ${r.peakRssMiB.toFixed(0)} MiB, ${seconds.toFixed(1)} s`);
    await expectFailedWithLimit(r, 'groups', 'MAX_PARQUET_ROW_GROUPS');
    expect(r.stderr).toContain('its footer lists 200,000 row groups, which passes MAX_PARQUET_ROW_GROUPS (20,000)');
    expect(r.peakRssMiB).toBeLessThan(PEAK_RSS_MIB);
    expect(seconds).toBeLessThan(10);
  }, 60_000);

  it('a footer declaring more than MAX_PARQUET_FOOTER_BYTES is refused before it is read', async () => {
    // A sparse file: "PAR1", 17 MiB of nothing, then a footer length of all of it and "PAR1".
    const input = join(tmp.dir, 'footer.parquet');
    const footer = 17 * MiB;
    const file = await open(input, 'w');
    await file.write(Buffer.from('PAR1'), 0, 4, 0);
    const end = Buffer.alloc(8);
    end.writeUInt32LE(footer, 0);
    end.write('PAR1', 4);
    await file.write(end, 0, 8, 4 + footer);
    await file.close();
    const r = await score(input, 'footer');
    console.log(`a footer declaring ${footer} bytes: peak RSS ${r.peakRssMiB.toFixed(0)} MiB`);
    await expectFailedWithLimit(r, 'footer', 'MAX_PARQUET_FOOTER_BYTES');
    expect(r.stderr).toContain(`its footer of ${footer.toLocaleString('en-US')} bytes passes MAX_PARQUET_FOOTER_BYTES (16 MiB)`);
    expect(r.peakRssMiB).toBeLessThan(PEAK_RSS_MIB);
  }, 60_000);
});

describe('staging space', () => {
  it('a disk with less free space than MIN_STAGING_FREE_BYTES asks is refused before any byte is staged', async () => {
    const input = join(tmp.dir, 'small.csv.gz');
    await writeFile(input, gzipSync([csvLine(RENTAL_COLUMNS), ...Array.from({ length: 50 }, (_, i) => csvLine(rentalRow(i)))].join('')));
    const r = await score(input, 'no-room', { MIN_STAGING_FREE_BYTES: '100000GiB' });
    await expectFailedWithLimit(r, 'no-room', 'MIN_STAGING_FREE_BYTES');
    expect(r.stderr).toMatch(/gzip declares it inflates to/);
    const tree = await folderTree(runFolder('no-room'));
    expect(Object.keys(tree).filter((name) => name.startsWith('_work/inputs'))).toEqual([]);
  }, 60_000);
});

/**
 * The smallest honest Parquet file whose footer lists `groups` row groups: one INT32 column, and
 * row groups of no rows, each with its one column chunk described (no pages: none is ever read).
 * Written in thrift's compact protocol by hand, as parquet-format's FileMetaData has it.
 */
function parquetOfEmptyGroups(groups: number): Buffer {
  const bytes: number[] = [];
  const varint = (n: number) => {
    for (; n >= 0x80; n = Math.floor(n / 128)) bytes.push((n & 0x7f) | 0x80);
    bytes.push(n);
  };
  const zigzag = (n: number) => varint(n >= 0 ? 2 * n : -2 * n - 1);
  const field = (delta: number, type: number) => bytes.push((delta << 4) | type);
  const text = (s: string) => {
    varint(Buffer.byteLength(s));
    bytes.push(...Buffer.from(s));
  };
  const list = (size: number, type: number) => {
    if (size < 15) bytes.push((size << 4) | type);
    else {
      bytes.push(0xf0 | type);
      varint(size);
    }
  };
  const [I32, I64, BINARY, LIST, STRUCT] = [5, 6, 8, 9, 12];
  // FileMetaData: 1 version, 2 schema, 3 num_rows, 4 row_groups.
  field(1, I32);
  zigzag(1);
  field(1, LIST);
  list(2, STRUCT);
  // The root: 4 name, 5 num_children.
  field(4, BINARY);
  text('schema');
  field(1, I32);
  zigzag(1);
  bytes.push(0);
  // The column: 1 type (INT32), 3 repetition (REQUIRED), 4 name.
  field(1, I32);
  zigzag(1);
  field(2, I32);
  zigzag(0);
  field(1, BINARY);
  text('x');
  bytes.push(0);
  field(1, I64);
  zigzag(0);
  field(1, LIST);
  list(groups, STRUCT);
  for (let g = 0; g < groups; g++) {
    // RowGroup: 1 columns, 2 total_byte_size, 3 num_rows.
    field(1, LIST);
    list(1, STRUCT);
    // ColumnChunk: 2 file_offset, 3 meta_data (1 type, 2 encodings, 3 path_in_schema, 4 codec, 5 num_values, 6 and 7 sizes, 9 data_page_offset).
    field(2, I64);
    zigzag(4);
    field(1, STRUCT);
    field(1, I32);
    zigzag(1);
    field(1, LIST);
    list(1, I32);
    zigzag(0);
    field(1, LIST);
    list(1, BINARY);
    text('x');
    field(1, I32);
    zigzag(0);
    field(1, I64);
    zigzag(0);
    field(1, I64);
    zigzag(0);
    field(1, I64);
    zigzag(0);
    field(2, I64);
    zigzag(4);
    bytes.push(0, 0);
    field(1, I64);
    zigzag(0);
    field(1, I64);
    zigzag(0);
    bytes.push(0);
  }
  bytes.push(0);
  const footer = Buffer.from(bytes);
  const length = Buffer.alloc(4);
  length.writeUInt32LE(footer.length);
  return Buffer.concat([Buffer.from('PAR1'), footer, length, Buffer.from('PAR1')]);
}
