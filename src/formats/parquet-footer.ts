import type { AsyncBuffer } from 'hyparquet';
import { InputError } from '../errors.js';

/**
 * Bounds on what a Parquet footer may make this process hold, checked before hyparquet parses it
 * (its parse makes objects for every row group and column chunk the footer lists, whatever they
 * are worth), with the error of passing one: the caller's, naming the setting that set it.
 */
export interface ParquetBounds {
  /** The most bytes a footer may declare: one declaring more is refused before it is read. */
  maxFooterBytes: number;
  /** The most row groups a footer may list: counted in its bytes before it is parsed. */
  maxRowGroups: number;
  /** The error of a bound passed; `what` names the file and what it holds. */
  refuse(bound: 'maxFooterBytes' | 'maxRowGroups', what: string): Error;
}

const MAGIC = 0x31524150; // "PAR1", little-endian

/**
 * A Parquet file's footer as hyparquet's `parquetMetadata` parses it (the metadata, its length and
 * the closing magic), read from the file's end in at most two reads: the last `guess` bytes, and
 * what a longer footer needs before them. A footer declaring more than `bounds.maxFooterBytes` is
 * refused before it is read, and one listing more than `bounds.maxRowGroups` row groups before it
 * is parsed.
 */
export async function readFooter(file: AsyncBuffer, name: string, guess: number, bounds?: ParquetBounds): Promise<ArrayBuffer> {
  const size = file.byteLength;
  const tailStart = Math.max(0, size - guess);
  const tail = await file.slice(tailStart, size);
  const view = new DataView(tail);
  if (view.getUint32(tail.byteLength - 4, true) !== MAGIC) {
    throw new InputError(`${name}: not a Parquet file (it does not end with the PAR1 magic bytes), or a Parquet file cut short`);
  }
  const length = view.getUint32(tail.byteLength - 8, true);
  if (length > size - 12) throw new InputError(`${name}: not a Parquet file, or one cut short (its footer says it takes ${length} bytes of ${size})`);
  if (bounds && length > bounds.maxFooterBytes) throw bounds.refuse('maxFooterBytes', `${name}: its footer of ${length.toLocaleString('en-US')} bytes`);
  let footer = tail;
  if (length + 8 > tail.byteLength) {
    const start = size - length - 8;
    footer = new ArrayBuffer(length + 8);
    const bytes = new Uint8Array(footer);
    bytes.set(new Uint8Array(await file.slice(start, tailStart)));
    bytes.set(new Uint8Array(tail), tailStart - start);
  }
  if (bounds) {
    const groups = rowGroupCount(new Uint8Array(footer, footer.byteLength - 8 - length, length), name);
    if (groups > bounds.maxRowGroups) throw bounds.refuse('maxRowGroups', `${name}: its footer lists ${groups.toLocaleString('en-US')} row groups, which`);
  }
  return footer;
}

// Thrift's compact protocol, as the footer (a FileMetaData struct) is written in it.
const STOP = 0;
const TRUE = 1;
const FALSE = 2;
const BYTE = 3;
const I16 = 4;
const I32 = 5;
const I64 = 6;
const DOUBLE = 7;
const BINARY = 8;
const LIST = 9;
const SET = 10;
const MAP = 11;
const STRUCT = 12;
const UUID = 13;

/** FileMetaData's field of row groups (`4: required list<RowGroup> row_groups`). */
const ROW_GROUPS_FIELD = 4;

/** How deep structs and lists may nest in a footer read here: Parquet's own go some six deep. */
const MAX_DEPTH = 32;

/**
 * How many row groups a footer's metadata lists: the size in its `row_groups` list's header, found
 * by reading past the fields before it without making anything. 0 when it has none (hyparquet's
 * parse then says what is wrong).
 */
export function rowGroupCount(metadata: Uint8Array, name: string): number {
  const reader = new CompactSkimmer(metadata, name);
  for (let id = 0; ;) {
    const head = reader.byte();
    const type = head & 0x0f;
    if (type === STOP) return 0;
    id = head >> 4 ? id + (head >> 4) : reader.zigzag();
    if (id === ROW_GROUPS_FIELD && type === LIST) return reader.listHeader().size;
    reader.skip(type, 1);
  }
}

/** Reads thrift compact values only to pass them, bounds-checked, allocating nothing. */
class CompactSkimmer {
  private at = 0;

  constructor(
    private readonly bytes: Uint8Array,
    private readonly name: string,
  ) {}

  byte(): number {
    if (this.at >= this.bytes.length) throw this.broken('it ends inside a value');
    return this.bytes[this.at++];
  }

  varint(): number {
    let value = 0;
    for (let shift = 0; ; shift += 7) {
      const b = this.byte();
      if (shift < 49) value += (b & 0x7f) * 2 ** shift;
      if (!(b & 0x80)) return value;
      if (shift > 63) throw this.broken('a number runs on past 64 bits');
    }
  }

  zigzag(): number {
    const n = this.varint();
    return n % 2 === 0 ? n / 2 : -(n + 1) / 2;
  }

  listHeader(): { size: number; type: number } {
    const head = this.byte();
    const size = head >> 4 === 15 ? this.varint() : head >> 4;
    return { size, type: head & 0x0f };
  }

  /** Passes a value of `type` (a list element's when `inList`: a boolean then takes a byte). */
  skip(type: number, depth: number, inList = false): void {
    if (depth > MAX_DEPTH) throw this.broken(`it nests more than ${MAX_DEPTH} levels deep`);
    switch (type) {
      case TRUE:
      case FALSE:
        if (inList) this.advance(1);
        return;
      case BYTE:
        return this.advance(1);
      case I16:
      case I32:
      case I64:
        this.varint();
        return;
      case DOUBLE:
        return this.advance(8);
      case BINARY:
        return this.advance(this.varint());
      case UUID:
        return this.advance(16);
      case LIST:
      case SET: {
        const { size, type: element } = this.listHeader();
        for (let i = 0; i < size; i++) this.skip(element, depth + 1, true);
        return;
      }
      case MAP: {
        const size = this.varint();
        if (size === 0) return;
        const types = this.byte();
        for (let i = 0; i < size; i++) {
          this.skip(types >> 4, depth + 1, true);
          this.skip(types & 0x0f, depth + 1, true);
        }
        return;
      }
      case STRUCT:
        for (let head = this.byte(); (head & 0x0f) !== STOP; head = this.byte()) {
          if (!(head >> 4)) this.varint();
          this.skip(head & 0x0f, depth + 1);
        }
        return;
      default:
        throw this.broken(`it holds a value of unknown type ${type}`);
    }
  }

  private advance(bytes: number): void {
    if (this.at + bytes > this.bytes.length) throw this.broken('it ends inside a value');
    this.at += bytes;
  }

  private broken(why: string): InputError {
    return new InputError(`${this.name}: the Parquet footer cannot be read: ${why}`);
  }
}
