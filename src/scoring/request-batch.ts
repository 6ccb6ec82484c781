import { ByteWriter, type InputRow } from '../formats/index.js';
import { EnvelopedRows, type RowsJson } from '../service/index.js';
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
   * @param bytes the rows' JSON, each followed by a comma (the last by anything), from `starts[0]` on
   * @param starts where each row's JSON starts in `bytes`, and where the next row would start
   * @param enveloped `bytes` is the whole request body, envelope and all (a batch as built, not a slice)
   */
  constructor(
    readonly rows: readonly InputRow[],
    private readonly bytes: Buffer,
    private readonly starts: readonly number[],
    private readonly enveloped = false,
  ) {}

  /** The request's rows: the whole body when the batch was built in its envelope, else the rows' JSON joined with commas. */
  body(): RowsJson {
    return this.enveloped ? new EnvelopedRows(this.bytes) : this.joinedRows();
  }

  /** The rows' JSON joined with commas: the contents of the request's array. */
  private joinedRows(): Buffer {
    return this.bytes.subarray(this.starts[0], this.starts[this.rows.length] - 1);
  }

  /** Rows `from` to `to` (exclusive), sharing this batch's bytes. */
  slice(from: number, to: number): RequestBatch {
    return new RequestBatch(this.rows.slice(from, to), this.bytes, this.starts.slice(from, to + 1));
  }
}

/**
 * Fills a batch a row at a time; `bytes` counts the rows' JSON (not the commas), as --max-batch-bytes
 * does. The rows are written into one buffer the builder keeps; each batch taken is copied out of it
 * once, in the request's envelope when one is given, so that the request needs no copy of its own.
 */
export class RequestBatchBuilder {
  private rows: InputRow[] = [];
  private readonly out: ByteWriter;
  private starts: number[] = [0];
  /** The UTF-8 bytes of the rows' JSON so far. */
  bytes = 0;

  /**
   * @param envelope what a request body holds before its rows and after them (see predictEnvelope); none: batches hold their rows alone
   * @param capacity the bytes a batch has room for to start with (it grows as needed)
   */
  constructor(
    private readonly envelope?: { head: Buffer; tail: Buffer },
    capacity = 64 * 1024,
  ) {
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

  /** The batch so far, in a buffer of its own; the builder starts over empty. */
  take(): RequestBatch {
    const { out, envelope, rows, starts } = this;
    let batch: RequestBatch;
    if (envelope === undefined || rows.length === 0) batch = new RequestBatch(rows, out.take(), starts);
    else {
      // The last comma's place takes the tail.
      const { head, tail } = envelope;
      const end = head.length + out.length - 1;
      const bytes = Buffer.allocUnsafe(end + tail.length);
      head.copy(bytes, 0);
      out.copyTo(bytes, head.length, 0, out.length - 1);
      tail.copy(bytes, end);
      for (let i = 0; i < starts.length; i++) starts[i] += head.length;
      batch = new RequestBatch(rows, bytes, starts, true);
      out.reset();
    }
    this.rows = [];
    this.starts = [0];
    this.bytes = 0;
    return batch;
  }
}
