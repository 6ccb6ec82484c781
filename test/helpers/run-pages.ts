import { writeFile } from 'node:fs/promises';
import helmet from '@fastify/helmet';
import { Queue } from 'bullmq';
import Fastify, { type FastifyInstance } from 'fastify';
import { dashboardInlineStyles } from '../../src/http/dashboard.js';
import { runPages } from '../../src/http/run-pages.js';
import { securityHeaders } from '../../src/http/security-headers.js';
import { silentLogger } from '../../src/log.js';
import { redisConnection, SCHEDULES_QUEUE, SEGMENTS_QUEUE } from '../../src/queue/queues.js';
import { RunProgressStore } from '../../src/queue/run-progress.js';
import { knownRuns } from '../../src/run-index/index.js';
import { csvLine, RENTAL_COLUMNS, rentalRow } from '../../src/simulator/sample-data.js';
import type { Storage } from '../../src/storage/storage-types.js';
import { listSchedules } from '../../src/triggers/schedule-list.js';
import type { useQueueFixture } from './queue.js';

/** Markup in an input value, which the pages must show as text. */
export const HOSTILE = '<script>alert(1)</script>';

/** The run the page tests score: 6 segments of 1000 rows, of which one row in 1000 the engine fails on (quarantined). */
export const PAGE_RUN = { rows: 6_000, segmentRows: 1_000, batchSize: 100, quarantined: 6 } as const;

/** Writes the page tests' input: rentals, with row 908 of every thousand failing in the engine and carrying markup in its notes. */
export async function writePageInput(path: string): Promise<void> {
  const lines = [csvLine(RENTAL_COLUMNS)];
  for (let i = 0; i < PAGE_RUN.rows; i++) {
    const row = rentalRow(i);
    if (i % 1000 === 907) {
      row[RENTAL_COLUMNS.indexOf('location')] = '__engine_error__';
      row[RENTAL_COLUMNS.indexOf('notes')] = HOSTILE;
    }
    lines.push(csvLine(row));
  }
  await writeFile(path, lines.join(''));
}

/** A fastify server with the run pages under `/ui`, on the fixture's queue alone (no run folders indexed), as `serve` mounts them (with its security headers). */
export async function mountRunPages(f: ReturnType<typeof useQueueFixture>, storage: Storage): Promise<FastifyInstance> {
  const connection = redisConnection({ redisUrl: f.redisUrl, prefix: f.prefix }, 'producer');
  const segments = new Queue(SEGMENTS_QUEUE, { connection, prefix: f.prefix });
  const schedules = new Queue(SCHEDULES_QUEUE, { connection, prefix: f.prefix });
  const app = Fastify();
  await app.register(helmet, securityHeaders({ inlineStyles: dashboardInlineStyles() }));
  await app.register(
    runPages({
      runs: knownRuns(f.queue),
      schedules: () => listSchedules(schedules),
      storage,
      segments,
      progress: new RunProgressStore(connection, f.prefix),
      log: silentLogger,
    }),
    { prefix: '/ui' },
  );
  app.addHook('onClose', async () => {
    await segments.close();
    await schedules.close();
    await connection.close();
  });
  await app.ready();
  return app;
}
