import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { readParquetLayout, readParquetRows, type RangeRead } from '../../src/formats/parquet-input.js';
import { createParquetOutput, type ParquetOutputColumn, type ParquetOutputOptions } from '../../src/formats/parquet-output.js';

/** A sink that keeps what it is given, optionally slowly, so backpressure shows. */
class MemorySink extends Writable {
  readonly chunks: Buffer[] = [];
  drains = 0;

  constructor(private readonly delayMs = 0) {
    super({ highWaterMark: 1024 });
    this.on('drain', () => this.drains++);
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.chunks.push(chunk);
    setTimeout(callback, this.delayMs);
  }

  bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

async function writeFile(columns: ParquetOutputColumn[], rows: unknown[][], options?: ParquetOutputOptions, batch = 1000): Promise<Buffer> {
  const sink = new MemorySink();
  const output = createParquetOutput(sink, columns, options);
  for (let start = 0; start < rows.length; start += batch) await output.writeRows(rows.slice(start, start + batch));
  await output.end();
  return sink.bytes();
}

function bufferRead(bytes: Uint8Array): RangeRead {
  return (start, end) => Promise.resolve(bytes.subarray(start, end));
}

async function readBack(bytes: Buffer): Promise<Record<string, unknown>[]> {
  const read = bufferRead(bytes);
  const layout = await readParquetLayout(read, bytes.length, 'mem.parquet');
  const rows: Record<string, unknown>[] = [];
  for await (const group of readParquetRows(read, bytes.length, 'mem.parquet', { first: 0, count: layout.rowGroups.length })) rows.push(...group);
  return rows;
}

describe('createParquetOutput', () => {
  const columns: ParquetOutputColumn[] = [
    { name: 'id', type: 'int64' },
    { name: 'text', type: 'string' },
    { name: 'score', type: 'double' },
  ];
  const rows = Array.from({ length: 5_000 }, (_, i) => [i, `row ${i}`, i / 7]);

  it('writes the same bytes for the same rows, however they are batched', async () => {
    const once = await writeFile(columns, rows, { rowGroupRows: 1_000 }, 1_000);
    const again = await writeFile(columns, rows, { rowGroupRows: 1_000 }, 333);
    expect(once.length).toBeGreaterThan(0);
    expect(again.equals(once)).toBe(true);
    expect(once.subarray(0, 4).toString()).toBe('PAR1');
    expect(once.subarray(-4).toString()).toBe('PAR1');
  });

  it('writes a file with no rows that reads back empty', async () => {
    const bytes = await writeFile(columns, []);
    const layout = await readParquetLayout(bufferRead(bytes), bytes.length, 'empty.parquet');
    expect(layout).toEqual({ columns, rowGroups: [], rows: 0 });
  });

  it('refuses a value that does not fit a numeric column, naming the column, and keeps none of that call', async () => {
    const sink = new MemorySink();
    const output = createParquetOutput(sink, columns, { rowGroupRows: 2 });
    await output.writeRows([[1, 'a', 0.5]]);
    await expect(
      output.writeRows([
        [2, 'b', 0.25],
        [3, 'c', 'high'],
      ]),
    ).rejects.toThrow(/"high" of Parquet output column "score" is not a number/);
    await expect(output.writeRows([['1.5', 'd', 1]])).rejects.toThrow(/column "id" is not an integer/);
    await expect(output.writeRows([[1, 'e']])).rejects.toThrow(/2 values for 3 columns/);
    await output.writeRows([[4, 'f', 1]]);
    expect(await output.end()).toEqual({ rows: 2 });
    expect(await readBack(sink.bytes())).toEqual([
      { id: 1, text: 'a', score: 0.5 },
      { id: 4, text: 'f', score: 1 },
    ]);
  });

  it('converts only where nothing is lost, and refuses the rest', async () => {
    const check = async (type: ParquetOutputColumn['type'], value: unknown) => {
      const output = createParquetOutput(new MemorySink(), [{ name: 'v', type }]);
      await output.writeRows([[value]]);
    };
    for (const [type, value] of [
      ['int32', 2 ** 31],
      ['int32', 1.5],
      ['int32', '1e3'],
      ['int64', 2n ** 63n],
      ['double', '12abc'],
      ['double', true],
      ['double', 2n ** 60n + 1n],
      ['boolean', 'yes'],
      ['boolean', 1],
      ['date', '2023-02-30'],
      ['date', '2024-01-01T10:00:00Z'],
      ['timestamp', '2024-01-01T10:00:00.123456789Z'],
      ['timestamp', 'yesterday'],
      ['json', 10n],
      ['binary', 'not base64!'],
      ['string', Symbol('s')],
    ] as const) {
      await expect(check(type, value), `${type} ${String(value)}`).rejects.toThrow(/Parquet output column "v"/);
    }
  });

  it('reads back what it wrote, with the values converted by the rule', async () => {
    const all: ParquetOutputColumn[] = [
      { name: 'i32', type: 'int32' },
      { name: 'i64', type: 'int64' },
      { name: 'f', type: 'float' },
      { name: 'd', type: 'double' },
      { name: 's', type: 'string' },
      { name: 'b', type: 'boolean' },
      { name: 'day', type: 'date' },
      { name: 'ts', type: 'timestamp' },
      { name: 'j', type: 'json' },
      { name: 'bin', type: 'binary' },
    ];
    const bytes = await writeFile(all, [
      ['-7', '9223372036854775807', 1.1, '1e3', { a: 1 }, 'true', '1969-07-20', '2024-05-01 14:30:00.5+02:00', 'text', new Uint8Array([0, 255])],
      [7, 42n, 'NaN', -Infinity, 2.5, false, new Date(Date.UTC(2024, 1, 29)), new Date(Date.UTC(1960, 0, 1, 0, 0, 0, 1)), [1, null], 'AP8='],
      [null, undefined, null, null, null, null, null, null, null, null],
    ]);
    expect(await readBack(bytes)).toEqual([
      {
        i32: -7,
        i64: '9223372036854775807',
        f: 1.1,
        d: 1000,
        s: '{"a":1}',
        b: true,
        day: '1969-07-20',
        ts: '2024-05-01T12:30:00.500Z',
        j: 'text',
        bin: 'AP8=',
      },
      { i32: 7, i64: 42, f: 'NaN', d: '-Infinity', s: '2.5', b: false, day: '2024-02-29', ts: '1960-01-01T00:00:00.001Z', j: [1, null], bin: 'AP8=' },
      { i32: null, i64: null, f: null, d: null, s: null, b: null, day: null, ts: null, j: null, bin: null },
    ]);
  });

  it('waits for a slow stream to drain before taking more rows', async () => {
    const sink = new MemorySink(5);
    const output = createParquetOutput(sink, columns, { rowGroupRows: 500 });
    for (let start = 0; start < 2_000; start += 500) {
      await output.writeRows(rows.slice(start, start + 500));
      // Each row group was handed over whole and awaited: nothing of it waits in the stream.
      expect(sink.writableLength).toBe(0);
    }
    await output.end();
    expect(sink.drains).toBeGreaterThanOrEqual(4);
    expect(await readBack(sink.bytes())).toHaveLength(2_000);
  });

  it('rejects when the stream fails', async () => {
    const sink = new Writable({
      write: (_chunk, _encoding, callback) => callback(new Error('disk full')),
    });
    const output = createParquetOutput(sink, columns, { rowGroupRows: 10 });
    await expect(
      (async () => {
        await output.writeRows(rows.slice(0, 10));
        await output.writeRows(rows.slice(10, 20));
        await output.end();
      })(),
    ).rejects.toThrow('disk full');
  });

  it('refuses repeated column names and calls that overlap', async () => {
    expect(() => createParquetOutput(new MemorySink(), [...columns, { name: 'id', type: 'string' }])).toThrow(/"id" twice/);
    const output = createParquetOutput(new MemorySink(), columns, { rowGroupRows: 1 });
    const first = output.writeRows(rows.slice(0, 3));
    await expect(output.writeRows(rows.slice(3, 4))).rejects.toThrow(/await each call/);
    await first;
  });
});

describe('readParquetRows', () => {
  it('passes on the errors of the read function as they are', async () => {
    const bytes = await writeFile([{ name: 'a', type: 'int32' }], [[1]]);
    const failure = new Error('connection reset');
    let calls = 0;
    const read: RangeRead = (start, end) => (calls++ > 0 ? Promise.reject(failure) : Promise.resolve(bytes.subarray(start, end)));
    const rows = readParquetRows(read, bytes.length, 'flaky.parquet', { first: 0, count: 1 });
    await expect(rows.next()).rejects.toBe(failure);
  });

  it('holds one row group at a time in a process: readers side by side take turns by row group', async () => {
    const rows = Array.from({ length: 6_000 }, (_, i) => [i]);
    const bytes = await writeFile([{ name: 'n', type: 'int32' }], rows, { rowGroupRows: 3_000 });
    const read = bufferRead(bytes);
    const taken: string[] = [];
    const consume = async (reader: string) => {
      for await (const slice of readParquetRows(read, bytes.length, 'turns.parquet', { first: 0, count: 2 })) {
        taken.push(`${reader}${Math.floor((slice[0].n as number) / 3_000)}`);
      }
    };
    await Promise.all([consume('a'), consume('b')]);
    // Three slices of 1,000 rows per group; a group's slices are never interleaved with another reader's group.
    expect(taken.join(' ')).toBe('a0 a0 a0 b0 b0 b0 a1 a1 a1 b1 b1 b1');
  });

  it('gives up its row group turn when its consumer stops early', async () => {
    const bytes = await writeFile([{ name: 'n', type: 'int32' }], [[1], [2]]);
    const read = bufferRead(bytes);
    for await (const slice of readParquetRows(read, bytes.length, 'early.parquet', { first: 0, count: 1 })) {
      expect(slice).toEqual([{ n: 1 }, { n: 2 }]);
      break;
    }
    // Were the turn still held, this read would wait forever and the test time out.
    expect(await readBack(bytes)).toEqual([{ n: 1 }, { n: 2 }]);
  });

  it('reports a file that changed while read', async () => {
    const bytes = await writeFile([{ name: 'a', type: 'int32' }], [[1]]);
    const read: RangeRead = (start, end) => Promise.resolve(bytes.subarray(start, end - 1));
    await expect(readParquetLayout(read, bytes.length, 'moving.parquet')).rejects.toMatchObject({ code: 'E_INPUT_CHANGED' });
  });
});
