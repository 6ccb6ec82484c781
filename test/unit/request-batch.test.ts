import { describe, expect, it } from 'vitest';
import { RequestBatchBuilder } from '../../src/scoring/request-batch.js';
import { RequestEncoder } from '../../src/scoring/request-row.js';
import type { InputRow } from '../../src/formats/row-parser.js';

const encoder = new RequestEncoder(['name'], true, 'rid');
const rows: InputRow[] = ['Zürich', 'a "quoted" name', '42', ''].map((name, index) => ({ index, line: index + 2, record: { name } }));
const json = (r: InputRow) => JSON.stringify({ name: r.record!.name === '' ? null : r.record!.name === '42' ? 42 : r.record!.name, rid: r.index });

function fill(builder: RequestBatchBuilder, batchRows: InputRow[]) {
  for (const row of batchRows) {
    encoder.encode(row.record!, row.index);
    builder.add(row, encoder);
  }
}

describe('RequestBatchBuilder', () => {
  it('holds the rows and their JSON joined with commas; counts the rows JSON bytes only', () => {
    const builder = new RequestBatchBuilder(8);
    fill(builder, rows);
    expect(builder.length).toBe(4);
    expect(builder.bytes).toBe(rows.reduce((n, r) => n + Buffer.byteLength(json(r)), 0));
    const batch = builder.take();
    expect(batch.rows).toEqual(rows);
    expect(JSON.parse(`[${batch.body().toString('utf8')}]`)).toEqual(rows.map((r) => JSON.parse(json(r)) as unknown));
  });

  it('starts over empty after take, and the batch taken keeps its bytes', () => {
    const builder = new RequestBatchBuilder(8);
    fill(builder, rows.slice(0, 2));
    const first = builder.take();
    expect(builder.length).toBe(0);
    expect(builder.bytes).toBe(0);
    fill(builder, rows.slice(2));
    const second = builder.take();
    expect(first.body().toString()).toBe(rows.slice(0, 2).map(json).join(','));
    expect(second.body().toString()).toBe(rows.slice(2).map(json).join(','));
  });

  it('slices a batch into halves that send exactly their rows', () => {
    const builder = new RequestBatchBuilder();
    fill(builder, rows);
    const batch = builder.take();
    const [a, b] = [batch.slice(0, 2), batch.slice(2, 4)];
    expect(a.rows).toEqual(rows.slice(0, 2));
    expect(a.body().toString()).toBe(rows.slice(0, 2).map(json).join(','));
    expect(b.body().toString()).toBe(rows.slice(2).map(json).join(','));
    expect(b.slice(1, 2).body().toString()).toBe(json(rows[3]));
  });
});
