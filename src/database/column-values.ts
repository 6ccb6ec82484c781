/**
 * The value types a column's values are read as: the types the tool's readers give and its
 * writers keep (the Parquet value types), so that a table's rows reach the model and the outputs
 * as the same rows in a Parquet file would.
 */
export type ColumnValueType = 'boolean' | 'int32' | 'int64' | 'float' | 'double' | 'string' | 'date' | 'timestamp' | 'json' | 'binary';

/** A column's value as read from the server's text for it (never called for NULL, which is null). */
export type ValueReader = (text: string) => unknown;

/** Type OIDs of the built-in types read as other than text (pg_type.oid; fixed across servers and releases). */
const OID = {
  bool: 16,
  bytea: 17,
  int8: 20,
  int2: 21,
  int4: 23,
  oid: 26,
  json: 114,
  float4: 700,
  float8: 701,
  date: 1082,
  timestamp: 1114,
  timestamptz: 1184,
  numeric: 1700,
  jsonb: 3802,
} as const;

/** How a column of a type is read: its value type, and its reader of the server's text. */
interface ColumnReading {
  type: ColumnValueType;
  read: ValueReader;
}

const asText: ValueReader = (text) => text;

/**
 * An integer as a number while it is exact in one (within 2^53), else its digits as text, as the
 * Parquet reader gives int64 values: a long id keeps its digits.
 */
const integer: ValueReader = (text) => {
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : text;
};

/** A float as a number; NaN and the infinities, which JSON has no number for, as their names ('NaN', 'Infinity', '-Infinity'). */
const float: ValueReader = (text) => {
  const n = Number(text);
  return Number.isFinite(n) ? n : text;
};

/**
 * A numeric as the nearest number, as a canonical number in a CSV file is sent, unless a number
 * would change it beyond rounding: an integer past 2^53, a value too small for a double (it would
 * read 0), NaN and the infinities stay their text.
 */
const numeric: ValueReader = (text) => {
  const n = Number(text);
  if (!Number.isFinite(n) || (Number.isInteger(n) && !Number.isSafeInteger(n))) return text;
  if (n === 0 && /[1-9]/.test(text)) return text;
  return n;
};

/** A timestamp written with a space (the server's ISO style) as ISO 8601: `2026-01-31T10:00:00.5`. */
const ISO_STYLE = /^(\d{4,}-\d\d-\d\d) (\d\d:\d\d:\d\d(?:\.\d+)?)$/;

/** A timestamp with time zone, read in UTC (see READING_SETTINGS): `2026-01-31 10:00:00.5+00`. */
const ISO_STYLE_UTC = /^(\d{4,}-\d\d-\d\d) (\d\d:\d\d:\d\d(?:\.\d+)?)\+00$/;

/** A naive timestamp in ISO 8601 without a zone; BC dates and infinities stay as the server writes them. */
const timestamp: ValueReader = (text) => {
  const m = ISO_STYLE.exec(text);
  return m ? `${m[1]}T${m[2]}` : text;
};

/** A timestamp with time zone in ISO 8601, ending in Z (the Parquet reader's form of a UTC-adjusted timestamp). */
const timestampUtc: ValueReader = (text) => {
  const m = ISO_STYLE_UTC.exec(text);
  return m ? `${m[1]}T${m[2]}Z` : text;
};

/** bytea in the hex output (`\x0a0b`) as base64, as the Parquet reader gives binary values. */
const bytes: ValueReader = (text) => (text.startsWith('\\x') ? Buffer.from(text.slice(2), 'hex').toString('base64') : text);

const READINGS: ReadonlyMap<number, ColumnReading> = new Map<number, ColumnReading>([
  [OID.bool, { type: 'boolean', read: (text) => text === 't' }],
  [OID.int2, { type: 'int32', read: Number }],
  [OID.int4, { type: 'int32', read: Number }],
  [OID.int8, { type: 'int64', read: integer }],
  [OID.oid, { type: 'int64', read: Number }],
  [OID.float4, { type: 'float', read: float }],
  [OID.float8, { type: 'double', read: float }],
  [OID.numeric, { type: 'double', read: numeric }],
  [OID.date, { type: 'date', read: asText }],
  [OID.timestamp, { type: 'timestamp', read: timestamp }],
  [OID.timestamptz, { type: 'timestamp', read: timestampUtc }],
  [OID.json, { type: 'json', read: (text) => JSON.parse(text) as unknown }],
  [OID.jsonb, { type: 'json', read: (text) => JSON.parse(text) as unknown }],
  [OID.bytea, { type: 'binary', read: bytes }],
]);

/** Every other type (text, varchar, uuid, interval, enums, arrays...): its text as the server writes it. */
const TEXT: ColumnReading = { type: 'string', read: asText };

/**
 * The value type of a column of the type `oid`: numbers for the integer, float and numeric
 * types, boolean, date, timestamp (with or without time zone), json for json and jsonb, binary
 * for bytea, and string for every other type.
 */
export function columnValueType(oid: number): ColumnValueType {
  return (READINGS.get(oid) ?? TEXT).type;
}

/**
 * The reader of a column of the type `oid`, from the server's text of a value (read with
 * READING_SETTINGS): boolean as true or false; int2, int4 as numbers; int8 as a number within 2^53,
 * else its digits as text; float4, float8 as numbers (NaN, Infinity, -Infinity as text); numeric
 * as the nearest number, unless it is an integer past 2^53, too small for a double, NaN or
 * infinite (then its text); date as 'YYYY-MM-DD'; timestamp as ISO 8601 without a zone
 * (`2026-01-31T10:00:00.123456`), timestamptz in UTC ending in Z; json and jsonb as the parsed
 * value; bytea as base64; any other type as its text. These are the values the CSV and Parquet
 * readers give for the same data.
 */
export function valueReader(oid: number): ValueReader {
  return (READINGS.get(oid) ?? TEXT).read;
}
