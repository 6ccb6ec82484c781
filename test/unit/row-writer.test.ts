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

describe('JSON Lines row writer', () => {
  /** The line as the writer wrote it before it wrote bytes: strings built and joined (the reference). */
  function stringLine(text: string, number: number, predictionColumns: readonly string[], predictions: readonly unknown[], rowNumber: boolean): string {
    const added: Record<string, unknown> = {};
    predictionColumns.forEach((c, i) => (added[c] = predictions[i] ?? null));
    const numbered = rowNumber ? `{"row_number":${number}` : '{';
    const head = text.trimEnd().slice(0, -1).trimEnd();
    const line = `${head}${head.endsWith('{') ? '' : ','}${JSON.stringify(added).slice(1)}`;
    if (!rowNumber) return `${line}\n`;
    const open = line.indexOf('{') + 1;
    return `${numbered}${line.slice(open).trimStart() === '}' ? '' : ','}${line.slice(open)}\n`;
  }

  const space = fc.constantFrom('', ' ', '\t', '\r', '  \n');
  const value = fc.oneof(fc.double(), fc.integer(), fc.string(), fc.boolean(), fc.constant(null), fc.constant(undefined), fc.jsonValue());
  // `__proto__` aside: the strings set the prototype of their object with it, and left the column out (see below).
  const column = fc.oneof(
    fc.string({ minLength: 1 }).filter((c) => c !== '__proto__'),
    fc.constantFrom('0', '7', 'price', 'price_confidence', 'é'),
  );

  it('writes a row read as its text, the predictions added, as the strings joined wrote it', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 4 }),
        fc.uniqueArray(column, { minLength: 1, maxLength: 4 }),
        fc.array(value, { minLength: 4, maxLength: 4 }),
        space,
        space,
        space,
        (object, predictionColumns, predictions, before, inside, after) => {
          const json = JSON.stringify(object);
          const text = `${before}${json.slice(0, -1)}${inside}}${after}`;
          for (const rowNumber of [false, true]) {
            const writer = createRowWriter('jsonl', { inputColumns: Object.keys(object), predictionColumns, rowNumber, passThroughText: true });
            const written = writer.lines([{ row: { text, index: 41 }, predictions: predictions.slice(0, predictionColumns.length) }]);
            const expected = stringLine(text, 42, predictionColumns, predictions.slice(0, predictionColumns.length), rowNumber);
            expect(written.toString()).toBe(expected);
            expect(JSON.parse(expected)).toEqual({
              ...(rowNumber && { row_number: 42 }),
              ...JSON.parse(json),
              ...Object.fromEntries(predictionColumns.map((c, i) => [c, JSON.parse(JSON.stringify(predictions[i] ?? null))])),
            });
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it('writes an output column named __proto__, which the strings joined left out', () => {
    const writer = createRowWriter('jsonl', { inputColumns: ['a'], predictionColumns: ['__proto__', 'p'], rowNumber: false, passThroughText: true });
    const line = writer.lines([{ row: { text: '{"a":1}', index: 0 }, predictions: [2, 3] }]).toString();
    expect(line).toBe('{"a":1,"__proto__":2,"p":3}\n');
    expect(Object.getOwnPropertyDescriptor(JSON.parse(line), '__proto__')?.value).toBe(2);
  });

  it('writes a row as read when the model has no output column', () => {
    for (const rowNumber of [false, true]) {
      const writer = createRowWriter('jsonl', { inputColumns: ['a'], predictionColumns: [], rowNumber, passThroughText: true });
      const written = writer.lines([
        { row: { text: '{"a":{}} ', index: 0 }, predictions: [] },
        { row: { text: '{}', index: 1 }, predictions: [] },
      ]);
      expect(written.toString()).toBe(rowNumber ? '{"row_number":1,"a":{}}\n{"row_number":2}\n' : '{"a":{}}\n{}\n');
    }
  });

  it('adds the predictions as members a reader finds, after the row number, and writes rows without text from their values', () => {
    const writer = createRowWriter('jsonl', { inputColumns: ['id', 'n'], predictionColumns: ['price', '1'], rowNumber: true, passThroughText: true });
    const lines = writer
      .lines([
        { row: { text: ' {"id":"a", "n":12345678901234567890} ', index: 0 }, predictions: [2.5, 'x'] },
        { row: { text: '{ }', index: 1 }, predictions: [null, undefined] },
        { row: { record: { id: 'b', n: 3, other: 4 }, index: 2 }, predictions: [Number.NaN, { a: 1 }] },
      ])
      .toString();
    expect(lines).toBe(
      [
        '{"row_number":1,"id":"a", "n":12345678901234567890,"1":"x","price":2.5}',
        '{"row_number":2,"1":null,"price":null}',
        // From its values: an object's members, array-index names first.
        '{"row_number":3,"1":{"a":1},"id":"b","n":3,"price":null}',
        '',
      ].join('\n'),
    );
  });
});
