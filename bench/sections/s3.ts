/**
 * S3 to S3 (--full only): a CSV on S3 (s3rver, in this process) scored into an S3 run folder,
 * every output row checked against the simulator's formula, in order; then, with Redis, the same
 * file through two queue workers, whose predictions must be byte-identical to score's.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import Papa from 'papaparse';
import { requestValue } from '../../src/scoring/request-row.js';
import { HOME_RENTALS_INPUTS, predictTargets } from '../../src/simulator/models.js';
import { rentalsCsv } from '../../src/simulator/sample-data.js';
import { parseLocation } from '../../src/storage/location.js';
import { createStorage } from '../../src/storage/storage.js';
import { startS3Server } from '../../test/helpers/s3-server.js';
import { cliCommand, MODEL } from '../cli.js';
import { BENCH_DIR } from '../context.js';
import { measure } from '../measure.js';
import { queueRun } from '../queue-run.js';
import type { Section, SectionReport } from '../report.js';
import { runFacts } from '../run-folder.js';

type Storage = ReturnType<typeof createStorage>;
const INPUT = 's3://data/bench/rentals.csv';

export const s3: Section = {
  id: 's3',
  title: 'S3 to S3, every row verified',
  fullOnly: true,
  async run(ctx, report) {
    // This process talks to s3rver through the AWS SDK too; its Node version notice is noise here.
    process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
    const rows = ctx.rows('BENCH_S3_ROWS', 1_000_000);
    const server = await startS3Server(['data', 'results']);
    const storage = createStorage(server.settings);
    try {
      await storage.write(parseLocation(INPUT), rentalsCsv(rows));
      const env = {
        S3_ENDPOINT: server.endpoint,
        S3_FORCE_PATH_STYLE: 'true',
        AWS_ACCESS_KEY_ID: server.settings.credentials!.accessKeyId,
        AWS_SECRET_ACCESS_KEY: server.settings.credentials!.secretAccessKey,
      };
      const sim = await ctx.simulator();
      const command = cliCommand('score', INPUT, '--model', MODEL, '--out', 's3://results/bench', '--run-id', 's3', '--service', sim.url, '--json');
      const { stdout: _stdout, ...r } = await measure(command, { ...env, LOG_LEVEL: 'warn' });
      const checked = await verify(storage, 's3://results/bench/s3/predictions.csv', rows);
      const manifest = JSON.parse(await storage.readText(parseLocation('s3://results/bench/s3/manifest.json'))) as ShaManifest;
      report.raw.push({ rows, ...r, rowsVerified: checked });
      report.note(`${rows.toLocaleString('en-US')} rows; ${checked.toLocaleString('en-US')} output rows verified in order against the formula`);
      report.figure('S3 → S3: time', r.wallSeconds, 's');
      report.figure('S3 → S3: rows/s', rows / r.wallSeconds, 'rows/s');
      report.figure('S3 → S3: peak RSS', r.peakRssMiB, 'MiB');
      if (await ctx.redisAnswers()) await queueToS3(report, { storage, env, serviceUrl: sim.url, rows, direct: predictionsSha(manifest) });
      else report.note('queue run skipped: no Redis');
    } finally {
      storage.close();
      await server.close();
    }
  },
};

interface ShaManifest {
  outputs: { file: string; sha256: string }[];
}

function predictionsSha(m: ShaManifest): string | undefined {
  return m.outputs.find((o) => o.file === 'predictions.csv')?.sha256;
}

/** The same S3 file through two queue workers: its time, and its predictions against score's. */
async function queueToS3(
  report: SectionReport,
  p: { storage: Storage; env: Record<string, string>; serviceUrl: string; rows: number; direct: string | undefined },
): Promise<void> {
  let sha: string | undefined;
  const q = await queueRun({
    workers: 2,
    serviceUrl: p.serviceUrl,
    env: p.env,
    input: INPUT,
    out: 's3://results/bench-queue',
    options: {},
    readFacts: async (runId) => {
      const text = await p.storage.readText(parseLocation(`s3://results/bench-queue/${runId}/manifest.json`));
      sha = predictionsSha(JSON.parse(text) as ShaManifest);
      return runFacts(text);
    },
  });
  report.raw.push({ ...q, rows: p.rows });
  report.figure('queue S3 → S3, 2 workers: rows/s', p.rows / q.seconds, 'rows/s');
  report.figure('queue S3 → S3: workers that scored segments', `${new Set(q.facts.workers).size} of 2`);
  report.figure('queue S3 → S3: predictions byte-identical to score', sha !== undefined && sha === p.direct ? 'yes' : 'no');
  if (sha !== p.direct) throw new Error('queue output differs from score output');
}

/** Reads the S3 predictions back and checks every row: order, input echo and the formula's values. */
async function verify(storage: Storage, location: string, rows: number): Promise<number> {
  let i = 0;
  // Copied to disk first: a slow reader of s3rver, in this same process, is cut off mid-stream.
  const copy = `${BENCH_DIR}/s3-predictions.csv`;
  await pipeline(await storage.read(parseLocation(location)), createWriteStream(copy));
  const parser = Papa.parse(Papa.NODE_STREAM_INPUT, { header: true, newline: '\n', skipEmptyLines: true });
  // Decoded before papaparse: it turns a character split across two chunks into U+FFFD.
  createReadStream(copy, { encoding: 'utf8' }).pipe(parser);
  for await (const row of parser as AsyncIterable<Record<string, string>>) {
    if (row.listing_id !== `L${String(i).padStart(8, '0')}`) throw new Error(`row ${i}: found ${row.listing_id}`);
    const expected = predictTargets('home_rentals_model', 2, Object.fromEntries(HOME_RENTALS_INPUTS.map((c) => [c, requestValue(row[c], true)])));
    for (const k of ['rental_price', 'rental_price_confidence', 'rental_price_min', 'rental_price_max']) {
      if (Number(row[k]) !== expected[k]) throw new Error(`row ${i}: ${k} ${row[k]} where the formula gives ${String(expected[k])}`);
    }
    i++;
  }
  await rm(copy);
  if (i !== rows) throw new Error(`${i} rows in the output, ${rows} expected`);
  return i;
}
