import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import iconv from 'iconv-lite';
import Papa from 'papaparse';
import type { CsvDialect } from '../../src/formats/csv-dialect.js';
import { parseCsvHeader, parseRows } from '../../src/formats/row-parser.js';
import { RowSplitter, type RawRow } from '../../src/formats/row-splitter.js';
import { decodeToUtf8 } from '../../src/formats/text-encoding.js';

// ---- property: a table written in any dialect and encoding reads back as the same table ----

const special = ['"', "'", ',', ';', '\t', '|', '\r', '\n', ' '];
const latin1Chars = fc.constantFrom('a', 'z', '0', 'é', 'ß', 'ÿ', '\u00a0', ...special);
const unicodeChars = fc.constantFrom('a', 'z', '0', 'é', '€', '中', '😀', '\u2028', ...special);

const dialect: fc.Arbitrary<CsvDialect> = fc.record({ delimiter: fc.constantFrom(',', ';', '\t', '|'), quote: fc.constantFrom('"', "'") });

/** A table of `columns` columns whose values are drawn from `chars`; a row is never one empty field (an empty line, skipped). */
function table(chars: fc.Arbitrary<string>) {
  const value = fc.array(chars, { maxLength: 6 }).map((cs) => cs.join(''));
  return fc.integer({ min: 1, max: 4 }).chain((columns) =>
    fc.array(fc.array(value, { minLength: columns, maxLength: columns }), { maxLength: 10 }).map((rows) => ({
      header: Array.from({ length: columns }, (_, i) => `c${i}`),
      rows: rows.filter((r) => r.length > 1 || r[0] !== ''),
    })),
  );
}

const encoded = fc.oneof(
  fc.record({ encoding: fc.constant('utf-8'), table: table(unicodeChars), bom: fc.constant(false) }),
  fc.record({ encoding: fc.constant('latin1'), table: table(latin1Chars), bom: fc.constant(false) }),
  fc.record({ encoding: fc.constant('utf-16le'), table: table(unicodeChars), bom: fc.boolean() }),
);

const case_ = fc.record({
  input: encoded,
  dialect,
  crlf: fc.boolean(),
  quoteAll: fc.boolean(),
  finalNewline: fc.boolean(),
  // chunk sizes for the encoded bytes, then for the decoded UTF-8 bytes (the rest in one last chunk)
  encodedChunks: fc.array(fc.integer({ min: 1, max: 9 }), { minLength: 1, maxLength: 200 }),
  decodedChunks: fc.array(fc.integer({ min: 1, max: 9 }), { minLength: 1, maxLength: 200 }),
});

function cut(bytes: Buffer, sizes: readonly number[]): Buffer[] {
  const parts: Buffer[] = [];
  let at = 0;
  for (const size of sizes) {
    if (at >= bytes.length) break;
    parts.push(bytes.subarray(at, at + size));
    at += size;
  }
  if (at < bytes.length) parts.push(bytes.subarray(at));
  return parts;
}

describe('dialects and encodings, end to end', () => {
  it('a table written as CSV in any dialect and encoding decodes, splits and parses back to the same table', async () => {
    await fc.assert(
      fc.asyncProperty(case_, async (c) => {
        const { header, rows } = c.input.table;
        const eol = c.crlf ? '\r\n' : '\n';
        const csv =
          Papa.unparse([header, ...rows], { delimiter: c.dialect.delimiter, quoteChar: c.dialect.quote, newline: eol, quotes: c.quoteAll }) +
          (c.finalNewline ? eol : '');
        const bytes = Buffer.concat([c.input.bom ? Buffer.from([0xff, 0xfe]) : Buffer.alloc(0), iconv.encode(csv, c.input.encoding)]);

        const decoded: Buffer[] = [];
        for await (const chunk of decodeToUtf8(Readable.from(cut(bytes, c.encodedChunks)), c.input.encoding)) decoded.push(chunk);
        const utf8 = Buffer.concat(decoded);
        expect(utf8.toString('utf8')).toBe(csv);

        const splitter = new RowSplitter('csv', 0, 1, c.dialect);
        const raw: RawRow[] = [];
        const onRow = (row: RawRow) => raw.push(row);
        for (const part of cut(utf8, c.decodedChunks)) splitter.push(part, onRow);
        expect(splitter.end(onRow)).toEqual({});
        expect(raw).toHaveLength(rows.length + 1);

        expect(parseCsvHeader(raw[0], 'in.csv', c.dialect)).toEqual(header);
        const parsed = parseRows(raw.slice(1), 0, header, 'csv', c.dialect);
        expect(parsed.map((r) => r.problem)).toEqual(rows.map(() => undefined));
        expect(parsed.map((r) => header.map((h) => r.record?.[h]))).toEqual(rows);
      }),
      { numRuns: 200 },
    );
  });
});
