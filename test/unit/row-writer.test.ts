import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_DIALECT } from '../../src/formats/csv-dialect.js';
import { csvRecord } from '../../src/formats/row-parser.js';
import { createRowWriter, csvRowText } from '../../src/formats/row-writer.js';

const options = { inputColumns: ['id', 'note'], predictionColumns: ['price', 'label'], rowNumber: false, passThroughText: false };

describe('CSV row writer', () => {
  it('quotes fields holding a delimiter, quote, line break or an edge space, as RFC 4180 readers expect', () => {
    const writer = createRowWriter('csv', options);
    expect(writer.header()).toBe('id,note,price,label\n');
    const text = String(
      writer.lines([
        { row: { record: { id: '1', note: 'a, "b"\nc' }, index: 0 }, predictions: [4609.6, ' x'] },
        { row: { record: { id: '2', note: '' }, index: 1 }, predictions: [null, { k: 1 }] },
      ]),
    );
    expect(text).toBe('1,"a, ""b""\nc",4609.6," x"\n2,,,"{""k"":1}"\n');
  });

  it('writes a row as read, predictions added, when asked to pass text through', () => {
    const writer = createRowWriter('csv', { ...options, passThroughText: true, rowNumber: true });
    const text = String(writer.lines([{ row: { record: { id: '1', note: 'x' }, text: '1,"x"', index: 6 }, predictions: [1, 'b'] }]));
    expect(text).toBe('7,1,"x",1,b\n');
    // Its text is all such a writer needs; one that writes values refuses a row without them rather than write it empty.
    expect(String(writer.lines([{ row: { text: '2,y', index: 7 }, predictions: [2, 'c'] }]))).toBe('8,2,y,2,c\n');
    for (const format of ['csv', 'jsonl', 'values'] as const) {
      expect(() => createRowWriter(format, options).lines([{ row: { text: '2,y', index: 7 }, predictions: [2, 'c'] }])).toThrow(
        'row 8 came to be written without its values',
      );
    }
  });

  it('writes non-ASCII text as UTF-8, and a second call holds only its own rows', () => {
    const writer = createRowWriter('csv', options);
    const first = writer.lines([{ row: { record: { id: 'Zürich €😀', note: '中央区' }, index: 0 }, predictions: [1.5, 'größe'] }]);
    const second = writer.lines([{ row: { record: { id: '2', note: 'x' }, index: 1 }, predictions: [2, 'b'] }]);
    expect(String(first)).toBe('Zürich €😀,中央区,1.5,größe\n');
    expect(String(second)).toBe('2,x,2,b\n');
  });

  it('quotes an empty value in a file of one column, which would otherwise be no row at all', () => {
    const writer = createRowWriter('csv', { inputColumns: [], predictionColumns: ['price'], rowNumber: false, passThroughText: false });
    expect(String(writer.lines([{ row: { record: {}, index: 0 }, predictions: [null] }]))).toBe('""\n');
  });
});

describe('csvRowText', () => {
  const dialects = [DEFAULT_DIALECT, { delimiter: '\t', quote: '"' }, { delimiter: ';', quote: "'" }];

  it("reads back as its fields in any dialect, and in the writer's is the text the writer writes for them", () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ unit: fc.constantFrom('a', ' ', ',', '"', "'", ';', '\t', '\n', '\r', 'é', '\uFEFF') }), { minLength: 1, maxLength: 5 }),
        (fields) => {
          const header = fields.map((_, i) => `c${i}`);
          for (const dialect of dialects) expect(Object.values(csvRecord(csvRowText(fields, dialect), header, dialect) ?? {})).toEqual(fields);
          const written = String(
            createRowWriter('csv', { inputColumns: header, predictionColumns: [], rowNumber: false, passThroughText: false }).lines([
              { row: { record: Object.fromEntries(header.map((c, i) => [c, fields[i]])), index: 0 }, predictions: [] },
            ]),
          );
          expect(`${csvRowText(fields)}\n`).toBe(written);
        },
      ),
    );
  });
});
