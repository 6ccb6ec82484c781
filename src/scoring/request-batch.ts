import { ByteWriter, type InputRow } from '../formats/index.js';
import type { RequestEncoder } from './request-row.js';

/**
 * A batch of rows to score and their request JSON, kept as the body's bytes (the rows' JSON
 * joined with commas) rather than a string per row, so that a batch waiting for its answer holds
 * one buffer and the rows as read. A batch split in halves shares its parent's bytes.
 */
export class RequestBatch {
  /**
   * Built by RequestBatchBuilder, and by `slice`.
   * @param rows the rows, in input order
   * @param bytes the rows' JSON, each followed by a comma, from `starts[0]` on
   * @param starts where each row's JSON starts in `bytes`, and where the next row would start
   */
  constructor(
    readonly rows: readonly InputRow[],
    private readonly bytes: Buffer,
    private readonly starts: readonly number[],
  ) {}

  /** The rows' JSON joined with commas: the contents of the request's array. */
  body(): Buffer {
    return this.bytes.subarray(this.starts[0], this.starts[this.rows.length] - 1);
  }

  /** Rows `from` to `to` (exclusive), sharing this batch's bytes. */
  slice(from: number, to: number): RequestBatch {
    return new RequestBatch(this.rows.slice(from, to), this.bytes, this.starts.slice(from, to + 1));
  }
}

/** Fills a batch a row at a time; `bytes` counts the rows' JSON (not the commas), as --max-batch-bytes does. */
export class RequestBatchBuilder {
  private rows: InputRow[] = [];
  private readonly out: ByteWriter;
  private starts: number[] = [0];
  /** The UTF-8 bytes of the rows' JSON so far. */
  bytes = 0;

  /** @param capacity the bytes a batch has room for to start with (it grows as needed) */
  constructor(capacity = 64 * 1024) {
    this.out = new ByteWriter(capacity);
  }

  get length(): number {
    return this.rows.length;
  }

  /** Adds a row and its JSON, the row `encoder` encoded last. */
  add(row: InputRow, encoder: RequestEncoder): void {
    encoder.appendTo(this.out);
    this.out.byte(0x2c);
    this.starts.push(this.out.length);
    this.rows.push(row);
    this.bytes += encoder.length;
  }

  /** The batch so far; the builder starts over empty, with room for as many bytes as this one took. */
  take(): RequestBatch {
    const batch = new RequestBatch(this.rows, this.out.take(), this.starts);
    this.rows = [];
    this.starts = [0];
    this.bytes = 0;
    return batch;
  }
}
