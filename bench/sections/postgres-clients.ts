/**
 * PostgreSQL clients (BENCH_SECTIONS=postgres-clients): which client the table input and output
 * of issue 36 use, chosen by measurement. A 1M-row table shaped like the rentals input (an
 * integer primary key id, integer, numeric, double, text, boolean and date columns, NULLs, quoted
 * text with commas, quotes, line breaks and non-ASCII) in a schema of its own (dropped at the end)
 * is read in full ORDER BY id, its ids alone ORDER BY id (what planning reads), and loaded with COPY
 * FROM STDIN (CSV text, 64 KiB chunks) into a copy of it without indexes (a staging table). Each
 * operation runs in a child process of its own (bench/postgres-client.mjs, with the node flags and
 * malloc settings of dist/cli.js's shebang, which set how far the heap grows), which reports its wall
 * and CPU seconds (process.cpuUsage) and peak RSS (getrusage); clients alternate, median of
 * BENCH_PG_RUNS (3) runs each, after one untimed read that brings the table into the caches.
 *
 * Outcome (AMD EPYC, 2 cores, Node 24.9.0, PostgreSQL 15.20 on the same machine, 2026-12-01;
 * medians of 3, CPU of the client process; BENCHMARKS.md has the table and the reasons):
 *   read all columns   pg-cursor 2.34 s CPU, 82 MiB; pg-query-stream 2.65 s, 82 MiB; postgres.js 3.07 s, 108 MiB
 *   SELECT id          pg-cursor 0.51 s, 78 MiB;     pg-query-stream 0.71 s, 79 MiB; postgres.js 0.59 s, 98 MiB
 *   COPY FROM STDIN    pg-copy-streams 0.17 s, 67 MiB; postgres.js .writable() 0.17 s, 68 MiB
 * So pg + pg-cursor (read(1000)) for reading and pg + pg-copy-streams for COPY: the least CPU
 * and memory reading, a tie on COPY, and one client library (pg) for both directions.
 *
 * Then (2026-12-02) reading as src/database/ reads, rows as arrays of text in a READ ONLY
 * transaction: pg-cursor 2.22 s CPU, 81 MiB; DECLARE / FETCH 1000 through pg's callback form
 * 2.28 s, 73 MiB (ids: 0.62 s against 0.68 s). The reading moved to DECLARE / FETCH, whose
 * fetches the server's statement_timeout bounds one by one (see src/database/row-cursor.ts).
 */
import { rm } from 'node:fs/promises';
import pg from 'pg';
import { nodeCommand } from '../cli.js';
import { measure, median } from '../measure.js';
import { DATABASE_URL, loadRentalsTable, serverVersion } from '../rentals-table.js';
import type { Section, SectionReport } from '../report.js';

const READERS = ['pg-cursor', 'pg-query-stream', 'postgres', 'pg-cursor-text', 'pg-declare-text'] as const;
const COPIERS = ['pg-copy-streams', 'postgres'] as const;
const LABEL: Record<string, string> = {
  'pg-cursor': 'pg + pg-cursor read(1000)',
  'pg-query-stream': 'pg + pg-query-stream (batchSize 1000)',
  postgres: 'postgres.js',
  'pg-cursor-text': 'pg + pg-cursor read(1000), arrays of text',
  'pg-declare-text': 'pg + DECLARE / FETCH 1000, arrays of text',
  'pg-copy-streams': 'pg + pg-copy-streams',
};

/** What a child reports of one operation (see bench/postgres-client.mjs). */
interface ClientRun {
  operation: string;
  rows: number | null;
  idSum: number;
  wallSeconds: number;
  cpuSeconds: number;
  peakRssMiB: number;
}

export const postgresClients: Section = {
  id: 'postgres-clients',
  title: 'PostgreSQL clients: reading and COPY',
  onlyWhenNamed: true,
  async run(ctx, report) {
    const rows = ctx.rows('BENCH_PG_ROWS', 1_000_000);
    const runs = Number(process.env.BENCH_PG_RUNS ?? 3);
    const schema = `bench_pg_${process.pid}`;
    const csv = `${ctx.inputsDir}/table-${rows}.csv`;
    const admin = new pg.Client({ connectionString: DATABASE_URL });
    await admin.connect();
    try {
      await admin.query(`CREATE SCHEMA ${schema}`);
      await loadRentalsTable(admin, `${schema}.rentals`, rows, csv);
      await admin.query(`CREATE TABLE ${schema}.loaded (LIKE ${schema}.rentals)`);
      const version = await serverVersion(admin);
      report.note(
        `${rows.toLocaleString('en-US')} rows, PostgreSQL ${version} on ${new URL(DATABASE_URL).host}; each figure the median of ${runs} alternating runs`,
      );
      const idSum = (rows * (rows - 1)) / 2;
      const child = async (operation: string): Promise<ClientRun> => {
        const table = `${schema}.${operation.startsWith('copy') ? 'loaded' : 'rentals'}`;
        const m = await measure(nodeCommand('bench/postgres-client.mjs', operation, DATABASE_URL, table, csv));
        return JSON.parse(m.stdout) as ClientRun;
      };
      await child('read:pg-cursor'); // untimed: the table into shared buffers and the page cache
      const taken = new Map<string, ClientRun[]>();
      for (let round = 0; round < runs; round++) {
        // Each round starts with another client, so none is always first after the others.
        for (const operation of rotate(
          ['read', 'keys'].flatMap((k) => READERS.map((c) => `${k}:${c}`)),
          round,
        )) {
          const r = await child(operation);
          if (r.rows !== rows || r.idSum !== idSum) throw new Error(`${operation} read ${r.rows} rows (id sum ${r.idSum}) of ${rows}`);
          keep(taken, report, r);
        }
        for (const operation of rotate(
          COPIERS.map((c) => `copy:${c}`),
          round,
        )) {
          await admin.query(`TRUNCATE ${schema}.loaded`);
          const r = await child(operation);
          const loaded = Number((await admin.query<{ n: string }>(`SELECT count(*) AS n FROM ${schema}.loaded`)).rows[0].n);
          if (loaded !== rows) throw new Error(`${operation} loaded ${loaded} rows of ${rows}`);
          keep(taken, report, { ...r, rows: loaded });
        }
      }
      for (const [operation, rs] of taken) figures(report, operation, rs, rows);
    } finally {
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined);
      await admin.end();
      await rm(csv, { force: true });
    }
  },
};

function rotate<T>(items: T[], by: number): T[] {
  const k = by % items.length;
  return [...items.slice(k), ...items.slice(0, k)];
}

function keep(taken: Map<string, ClientRun[]>, report: SectionReport, r: ClientRun): void {
  taken.set(r.operation, [...(taken.get(r.operation) ?? []), r]);
  report.raw.push({ ...r });
}

/** The medians of one operation's runs: wall, CPU, rows per CPU-second, peak RSS. */
function figures(report: SectionReport, operation: string, rs: ClientRun[], rows: number): void {
  const [kind, client] = operation.split(':');
  const name = `${{ read: 'read all columns', keys: 'read ids', copy: 'COPY FROM STDIN' }[kind]}, ${LABEL[client]}`;
  const cpu = median(rs.map((r) => r.cpuSeconds));
  report.figure(`${name}: wall`, median(rs.map((r) => r.wallSeconds)), 's');
  report.figure(`${name}: CPU`, cpu, 's');
  report.figure(`${name}: rows per CPU-second`, Math.round(rows / cpu), 'rows/s');
  report.figure(`${name}: peak RSS`, median(rs.map((r) => r.peakRssMiB)), 'MiB');
}
