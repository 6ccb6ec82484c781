// One measured operation of the postgres-clients bench section (bench/sections/postgres-clients.ts),
// in a process of its own so that its CPU and peak RSS are one client's. Plain JavaScript run by
// node itself, as hand-written-scorer.mjs is: no tsx loader in the figures.
//   node bench/postgres-client.mjs <operation> <database URL> <table> [<CSV file for copy:*>]
// Operations: read:<client> (every column, ORDER BY id), keys:<client> (SELECT id ORDER BY id),
// <client> one of pg-cursor, pg-query-stream, postgres (postgres.js .cursor), and as src/database/ reads (rows
// as arrays of the server's text, in a READ ONLY transaction) pg-cursor-text and pg-declare-text (DECLARE ...
// NO SCROLL CURSOR, FETCH 1000); copy:pg-copy-streams
// and copy:postgres (postgres.js .writable()): COPY FROM STDIN of the CSV file, 64 KiB chunks.
// Only the client measured is loaded (so its modules are all the RSS there is beyond Node's own).
// Prints one JSON line: rows, the sum of the ids read (a check that every row came), wall and CPU
// seconds (process.cpuUsage, user + system) from before loading the client to after closing, and peak
// RSS in MiB (getrusage's ru_maxrss).
import { createReadStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';

const BATCH = 1000;
const [operation, url, table, csvFile] = process.argv.slice(2);
const [kind, client] = operation.split(':');
const query = kind === 'keys' ? `SELECT id FROM ${table} ORDER BY id` : kind === 'read' ? `SELECT * FROM ${table} ORDER BY id` : null;
const copy = `COPY ${table} FROM STDIN (FORMAT csv, HEADER true)`;

/** Reads with pg and pg-cursor: read(1000) until an empty batch. */
async function pgCursor(visit) {
  const [{ default: pg }, { default: Cursor }] = await Promise.all([import('pg'), import('pg-cursor')]);
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const cursor = c.query(new Cursor(query));
    for (let rows = await cursor.read(BATCH); rows.length > 0; rows = await cursor.read(BATCH)) for (const row of rows) visit(row);
    await cursor.close();
  } finally {
    await c.end();
  }
}

/** Every value as the server's text, as src/database/row-cursor.ts reads them (its readers map them, not pg's parsers). */
const AS_TEXT = { getTypeParser: () => (text) => text };

/** Reads as src/database/ did first: pg-cursor read(1000) in a READ ONLY transaction, rows as arrays of text. */
async function pgCursorText(visit) {
  const [{ default: pg }, { default: Cursor }] = await Promise.all([import('pg'), import('pg-cursor')]);
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query('BEGIN TRANSACTION READ ONLY');
    const cursor = c.query(new Cursor(query, [], { rowMode: 'array', types: AS_TEXT }));
    for (let rows = await cursor.read(BATCH); rows.length > 0; rows = await cursor.read(BATCH)) for (const row of rows) visit(row);
    await cursor.close();
    await c.query('ROLLBACK');
  } finally {
    await c.end();
  }
}

/** Reads as src/database/row-cursor.ts does: DECLARE ... NO SCROLL CURSOR, FETCH 1000 in a READ ONLY transaction, rows as arrays of text. */
async function pgDeclareText(visit) {
  const { default: pg } = await import('pg');
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query('BEGIN TRANSACTION READ ONLY');
    await c.query("SELECT set_config('cursor_tuple_fraction', '1', true)");
    await c.query({ text: `DECLARE rows NO SCROLL CURSOR FOR ${query}`, values: [], queryMode: 'extended' });
    const fetch = { text: `FETCH FORWARD ${BATCH} FROM rows`, rowMode: 'array', types: AS_TEXT };
    // pg's callback form: its promise form costs more CPU and heap here (see src/database/row-cursor.ts).
    const next = () => new Promise((resolve, reject) => c.query(fetch, (err, result) => (err ? reject(err) : resolve(result.rows))));
    for (let rows = await next(); rows.length > 0; rows = await next()) for (const row of rows) visit(row);
    await c.query('CLOSE rows');
    await c.query('ROLLBACK');
  } finally {
    await c.end();
  }
}

/** Reads with pg and pg-query-stream (batchSize 1000), row by row with for await. */
async function pgQueryStream(visit) {
  const [{ default: pg }, { default: QueryStream }] = await Promise.all([import('pg'), import('pg-query-stream')]);
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    for await (const row of c.query(new QueryStream(query, [], { batchSize: BATCH }))) visit(row);
  } finally {
    await c.end();
  }
}

/** Reads with postgres.js: .cursor(1000) yields arrays of up to 1000 rows. */
async function postgresCursor(visit) {
  const { default: postgres } = await import('postgres');
  const sql = postgres(url, { max: 1, onnotice: () => undefined });
  try {
    for await (const rows of sql.unsafe(query).cursor(BATCH)) for (const row of rows) visit(row);
  } finally {
    await sql.end();
  }
}

/** COPY FROM STDIN with pg and pg-copy-streams. */
async function pgCopy() {
  const [{ default: pg }, { default: copyStreams }] = await Promise.all([import('pg'), import('pg-copy-streams')]);
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const stream = c.query(copyStreams.from(copy));
    await pipeline(createReadStream(csvFile), stream);
    return stream.rowCount;
  } finally {
    await c.end();
  }
}

/** COPY FROM STDIN with postgres.js's .writable(). */
async function postgresCopy() {
  const { default: postgres } = await import('postgres');
  const sql = postgres(url, { max: 1, onnotice: () => undefined });
  try {
    await pipeline(createReadStream(csvFile), await sql.unsafe(copy).writable());
    // .writable() does not say how many rows the server took: the section counts them.
    return null;
  } finally {
    await sql.end();
  }
}

const readers = {
  'pg-cursor': pgCursor,
  'pg-query-stream': pgQueryStream,
  postgres: postgresCursor,
  'pg-cursor-text': pgCursorText,
  'pg-declare-text': pgDeclareText,
};
const copiers = { 'pg-copy-streams': pgCopy, postgres: postgresCopy };
const started = process.hrtime.bigint();
const cpuBefore = process.cpuUsage();
let rows = 0;
let idSum = 0;
if (query) {
  const read = readers[client];
  if (!read) throw new Error(`no reader ${client}`);
  await read((row) => {
    rows++;
    // Arrays of text (the *-text readers), or objects of parsed values.
    idSum += Array.isArray(row) ? Number(row[0]) : row.id;
  });
} else if (kind === 'copy' && copiers[client]) {
  rows = await copiers[client]();
} else throw new Error(`unknown operation ${operation}`);
const cpu = process.cpuUsage(cpuBefore);
const wallSeconds = Number(process.hrtime.bigint() - started) / 1e9;
const peakRssMiB = process.resourceUsage().maxRSS / 1024;
console.log(JSON.stringify({ operation, rows, idSum, wallSeconds, cpuSeconds: (cpu.user + cpu.system) / 1e6, peakRssMiB }));
