import { describe, expect, it } from 'vitest';
import { RequestBatchBuilder } from '../../src/scoring/request-batch.js';
import { RequestEncoder } from '../../src/scoring/request-row.js';
import { EnvelopedRows, predictBody, predictEnvelope, type RowsJson } from '../../src/service/client.js';
import type { InputRow } from '../../src/formats/row-parser.js';

const encoder = new RequestEncoder(['name'], true, 'rid');
const rows: InputRow[] = ['Zürich', 'a "quoted" name', '42', ''].map((name, index) => ({ index, line: index + 2, record: { name } }));
const json = (r: InputRow) => JSON.stringify({ name: r.record!.name === '' ? null : r.record!.name === '42' ? 42 : r.record!.name, rid: r.index });

/** The rows' JSON of a batch that holds its rows alone (a slice, or a batch built without an envelope). */
function joined(body: RowsJson): string {
  if (body instanceof EnvelopedRows) throw new Error('a whole body, not rows');
  return body.toString();
}

function fill(builder: RequestBatchBuilder, batchRows: InputRow[]) {
  for (const row of batchRows) {
    encoder.encode(row.record!, row.index);
    builder.add(row, encoder);
  }
}

describe('RequestBatchBuilder', () => {
  it('holds the rows and their JSON joined with commas; counts the rows JSON bytes only', () => {
    const builder = new RequestBatchBuilder(undefined, 8);
    fill(builder, rows);
    expect(builder.length).toBe(4);
    expect(builder.bytes).toBe(rows.reduce((n, r) => n + Buffer.byteLength(json(r)), 0));
    const batch = builder.take();
    expect(batch.rows).toEqual(rows);
    expect(JSON.parse(`[${joined(batch.body())}]`)).toEqual(rows.map((r) => JSON.parse(json(r)) as unknown));
  });

  it('starts over empty after take, and the batch taken keeps its bytes', () => {
    const builder = new RequestBatchBuilder(undefined, 8);
    fill(builder, rows.slice(0, 2));
    const first = builder.take();
    expect(builder.length).toBe(0);
    expect(builder.bytes).toBe(0);
    fill(builder, rows.slice(2));
    const second = builder.take();
    expect(joined(first.body())).toBe(rows.slice(0, 2).map(json).join(','));
    expect(joined(second.body())).toBe(rows.slice(2).map(json).join(','));
  });

  it('slices a batch into halves that send exactly their rows', () => {
    const builder = new RequestBatchBuilder();
    fill(builder, rows);
    const batch = builder.take();
    const [a, b] = [batch.slice(0, 2), batch.slice(2, 4)];
    expect(a.rows).toEqual(rows.slice(0, 2));
    expect(joined(a.body())).toBe(rows.slice(0, 2).map(json).join(','));
    expect(joined(b.body())).toBe(rows.slice(2).map(json).join(','));
    expect(joined(b.slice(1, 2).body())).toBe(json(rows[3]));
  });

  it('builds a batch in its envelope: the whole batch is the body predictBody makes, and its slices still send their rows', () => {
    for (const options of [{ envelope: 'data' as const, params: { mode: 'fast' } }, { envelope: 'data' as const }, { envelope: 'array' as const }]) {
      const builder = new RequestBatchBuilder(predictEnvelope(options), 8);
      fill(builder, rows);
      const batch = builder.take();
      const body = batch.body();
      expect(body).toBeInstanceOf(EnvelopedRows);
      const all = rows.map(json).join(',');
      expect(predictBody(body, options).toString()).toBe(predictBody(all, options).toString());
      expect(joined(batch.slice(0, 4).body())).toBe(all);
      expect(joined(batch.slice(1, 3).body())).toBe(rows.slice(1, 3).map(json).join(','));
      expect(joined(batch.slice(3, 4).body())).toBe(json(rows[3]));
      // The builder's own buffer goes on to the next batch; the batch taken keeps its bytes.
      fill(builder, rows.slice(0, 1));
      expect(predictBody(builder.take().body(), options).toString()).toBe(predictBody(json(rows[0]), options).toString());
      expect(predictBody(body, options).toString()).toBe(predictBody(all, options).toString());
    }
  });
});
