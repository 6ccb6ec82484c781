import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import iconv from 'iconv-lite';
import Papa from 'papaparse';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Simulator } from '../../src/simulator/server.js';
import { RENTAL_COLUMNS, rentalRow } from '../../src/simulator/sample-data.js';
import { runCli } from '../helpers/cli.js';
import { expectedRental, parseCsv, score, startSimulator, tempDir } from '../helpers/scoring.js';

const ROWS = 300;
let sim: Simulator;
let tmp: Awaited<ReturnType<typeof tempDir>>;

beforeAll(async () => {
  sim = await startSimulator();
  tmp = await tempDir();
});
afterAll(async () => {
  await Promise.all([sim.close(), tmp.cleanup()]);
});

const rows = Array.from({ length: ROWS }, (_, i) => rentalRow(i));
/** The rentals as CSV text in a dialect, written by papaparse (an independent writer). */
const rentalsIn = (delimiter: string, quoteChar = '"', newline = '\n') =>
  `${Papa.unparse([[...RENTAL_COLUMNS], ...rows], { delimiter, quoteChar, newline, header: false })}${newline}`;

async function scoreFile(name: string, content: Buffer | string, ...flags: string[]) {
  const path = join(tmp.dir, name);
  await writeFile(path, content);
  const out = join(tmp.dir, 'runs');
  const runId = name.replace(/\W/g, '-');
  const result = await runCli(['score', path, '--model', 'mindsdb/home_rentals_model', '--out', out, '--run-id', runId, '--segment-rows', '100', ...flags], {
    MODEL_SERVICE_URL: sim.url,
  });
  const predictions = result.code === 0 ? parseCsv(await readFile(join(out, runId, 'predictions.csv'), 'utf8')) : [];
  return { ...result, path, predictions };
}

/** Every input value came through unchanged (as UTF-8), and each row has the model's prediction for it. */
function expectRentals(predictions: Record<string, string>[]) {
  expect(predictions).toHaveLength(ROWS);
  predictions.forEach((p, i) => {
    expect(RENTAL_COLUMNS.map((c) => p[c])).toEqual(rows[i]);
    expect(Number(p.rental_price)).toBe(expectedRental(p).rental_price);
  });
}

describe('CSV dialects and encodings, through the CLI', () => {
  it('reads a .tsv file with tabs, and --delimiter tab on another name', async () => {
    const tsv = await scoreFile('rentals.tsv', rentalsIn('\t'));
    expect(tsv.code, tsv.stderr).toBe(0);
    expectRentals(tsv.predictions);
    const named = await scoreFile('rentals-tabs.txt', rentalsIn('\t'), '--delimiter', 'tab');
    expect(named.code, named.stderr).toBe(0);
    expectRentals(named.predictions);
  });

  it('reads semicolons with --delimiter, and another quote with --quote, CRLF line ends', async () => {
    const semi = await scoreFile('semicolons.csv', rentalsIn(';', '"', '\r\n'), '--delimiter', ';');
    expect(semi.code, semi.stderr).toBe(0);
    expectRentals(semi.predictions);
    const quoted = await scoreFile('single-quotes.csv', rentalsIn(';', "'"), '--delimiter', ';', '--quote', "'");
    expect(quoted.code, quoted.stderr).toBe(0);
    expectRentals(quoted.predictions);
  });

  it('decodes Latin-1 and UTF-16 inputs with --encoding, writing UTF-8', async () => {
    // Latin-1 holds the accents of the rentals but not their CJK or emoji: those rows are left out.
    const latin = rows.filter((r) => r.every((v) => [...v].every((c) => c.charCodeAt(0) < 256)));
    const latinText = `${Papa.unparse([[...RENTAL_COLUMNS], ...latin], { newline: '\n' })}\n`;
    const result = await scoreFile('latin1.csv', iconv.encode(latinText, 'latin1'), '--encoding', 'latin1');
    expect(result.code, result.stderr).toBe(0);
    expect(result.predictions.map((p) => RENTAL_COLUMNS.map((c) => p[c]))).toEqual(latin);
    expect(result.predictions.some((p) => p.notes === 'près du métro')).toBe(true);

    // Written back in Latin-1 when asked: the same text, re-encoded; a character Latin-1 lacks fails the run, named.
    const back = await runCli(
      [
        'score',
        result.path,
        '--model',
        'mindsdb/home_rentals_model',
        '--out',
        join(tmp.dir, 'runs'),
        '--run-id',
        'latin1-out',
        '--encoding',
        'latin1',
        '--output-encoding',
        'latin1',
      ],
      { MODEL_SERVICE_URL: sim.url },
    );
    expect(back.code, back.stderr).toBe(0);
    const utf8Out = await readFile(join(tmp.dir, 'runs', 'latin1-csv', 'predictions.csv'), 'utf8');
    expect((await readFile(join(tmp.dir, 'runs', 'latin1-out', 'predictions.csv'))).equals(iconv.encode(utf8Out, 'latin1'))).toBe(true);
    const wideOut = await scoreFile('cjk.csv', rentalsIn(','), '--output-encoding', 'latin1');
    expect(wideOut.code).toBe(2);
    expect(wideOut.stderr).toMatch(/predictions\.csv: "(中|🐶)" \(U\+[0-9A-F]+, character \d+\) cannot be written in latin1/);

    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), iconv.encode(rentalsIn(','), 'utf-16le')]);
    const wide = await scoreFile('utf16.csv', utf16, '--encoding', 'utf-16le');
    expect(wide.code, wide.stderr).toBe(0);
    expectRentals(wide.predictions);
    // A dry run reads the file itself (no staged copy), decoded from its start: the same rows.
    const dry = await runCli(
      [
        'score',
        wide.path,
        '--model',
        'mindsdb/home_rentals_model',
        '--out',
        join(tmp.dir, 'dry'),
        '--encoding',
        'utf-16le',
        '--dry-run',
        '--segment-rows',
        '100',
        '--json',
      ],
      {
        MODEL_SERVICE_URL: sim.url,
      },
    );
    expect(dry.code, dry.stderr).toBe(0);
    expect(JSON.parse(dry.stdout)).toMatchObject({ rows: ROWS, segments: 3, canary: { batches: 3, rows: ROWS, scored: ROWS, quarantined: 0 } });
    // Without --encoding, the BOM says what the file is.
    const unnamed = await scoreFile('utf16-unnamed.csv', utf16);
    expect(unnamed.code).toBe(1);
    expect(unnamed.stderr).toContain('UTF-16 text: pass --encoding utf-16le');
  });

  it('names a spreadsheet saved under a .csv name, and refuses an unknown encoding or a bad delimiter by flag', async () => {
    const xlsx = Buffer.concat([Buffer.from('PK\x03\x04', 'latin1'), Buffer.alloc(200, 7)]);
    const sheet = await scoreFile('export.csv', xlsx);
    expect(sheet.code).toBe(1);
    expect(sheet.stderr).toContain(`${join(tmp.dir, 'export.csv')}: is a ZIP archive (an Excel .xlsx or OpenDocument spreadsheet?); export it as CSV`);
    const encoding = await scoreFile('x.csv', 'a\n1\n', '--encoding', 'klingon');
    expect(encoding.code).toBe(2);
    expect(encoding.stderr).toContain('--encoding: must be a text encoding');
    const same = await scoreFile('z.csv', 'a\n1\n', '--delimiter', ';', '--quote', ';');
    expect(same.code).toBe(2);
    expect(same.stderr).toContain('--delimiter and --quote:');
    expect(same.stderr).toContain('[E_USAGE]');
    const delimiter = await scoreFile('y.csv', 'a\n1\n', '--delimiter', ';;');
    expect(delimiter.code).toBe(2);
    expect(delimiter.stderr).toContain('--delimiter: must be one ASCII character');
  });
});

describe('every supported dialect keeps every value through a run (property)', () => {
  const DIALECTS = [
    { delimiter: ',', quote: '"' },
    { delimiter: ';', quote: '"' },
    { delimiter: '\t', quote: '"' },
    { delimiter: '|', quote: "'" },
  ];
  const ENCODINGS = ['utf-8', 'utf-16le', 'windows-1252'] as const;
  /** Text a run must keep: delimiters, quotes, line breaks, spaces, accents (and beyond Latin-1 where the encoding holds it). */
  const value = (encoding: string) =>
    fc.string({
      unit: fc.constantFrom(...'ab ,;|\t"\'\n\r\\é€ü'.split(''), ...(encoding === 'windows-1252' ? [] : ['中', '🐶'])),
      maxLength: 12,
    });

  it('generated CSVs in each dialect and encoding score with every input value unchanged', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...DIALECTS),
        fc.boolean(),
        fc.constantFrom(...ENCODINGS).chain((encoding) =>
          fc.integer({ min: 1, max: 3 }).chain((extra) =>
            fc.tuple(
              fc.constant(encoding),
              fc.constant(extra),
              fc.array(fc.tuple(fc.integer({ min: 100, max: 3000 }), fc.array(value(encoding), { minLength: extra, maxLength: extra })), {
                minLength: 1,
                maxLength: 30,
              }),
            ),
          ),
        ),
        async (dialect, crlf, [encoding, extra, table]) => {
          const header = ['sqft', ...Array.from({ length: extra }, (_, i) => `text ${i}`)];
          const data = table.map(([sqft, texts]) => [String(sqft), ...texts]);
          const csv = `${Papa.unparse([header, ...data], { delimiter: dialect.delimiter, quoteChar: dialect.quote, newline: crlf ? '\r\n' : '\n', quotes: true })}\n`;
          const path = join(tmp.dir, `prop-${run}.csv`);
          const runId = `prop-${run++}`;
          await writeFile(path, iconv.encode(csv, encoding));
          await score(path, join(tmp.dir, 'prop'), {
            service: sim.url,
            runId,
            segmentRows: 7,
            delimiter: dialect.delimiter,
            quote: dialect.quote,
            encoding,
            maxErrorRate: 0,
          });
          const out = parseCsv(await readFile(join(tmp.dir, 'prop', runId, 'predictions.csv'), 'utf8'));
          expect(out.map((r) => header.map((c) => r[c]))).toEqual(data);
          out.forEach((r) => expect(r.rental_price).not.toBe(''));
        },
      ),
      { numRuns: 40 },
    );
  });
});
