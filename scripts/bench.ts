// npm run bench: measured figures for the targets in the issues (never asserted in timed tests).
//   - rows/s and peak RSS of `score` on 200k and 1M rows (local files), and the ratio of the two RSS peaks;
//     the same rows as Parquet (written by DuckDB) scored into Parquet, peak RSS beside the CSV run's;
//   - a 1M-row CSV on S3 (s3rver) scored into an S3 run folder, every output row checked against
//     the simulator's formula, in order.
//   - queue mode (needs Redis at REDIS_URL): the same 1M-row S3 file scored by two worker processes,
//     compared byte for byte with `score`; and rows/s of one vs two workers against a simulator
//     with 100 ms latency (BENCH_LATENCY_ROWS rows, batches of 250, so the workers wait on the
//     model rather than on this machine's two cores).
// The scorer and the simulator run as separate processes; peak RSS is the scorer's VmHWM.
// Sizes can be changed: BENCH_ROWS=200000,1000000 BENCH_S3_ROWS=1000000. Results: .bench/results.json.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { setTimeout } from 'node:timers/promises';
import { DuckDBInstance } from '@duckdb/node-api';
import { Redis } from 'ioredis';
import Papa from 'papaparse';
import type { RunOptionsInput } from '../src/config/run-options.js';
import type { DescribeSnapshot } from '../src/pipeline/describe-snapshot.js';
import type { Manifest } from '../src/pipeline/manifest.js';
import { RunQueue } from '../src/queue/producer.js';
import { requestValue } from '../src/pipeline/request-row.js';
import { HOME_RENTALS_INPUTS, predictTargets } from '../src/simulator/models.js';
import { rentalsCsv } from '../src/simulator/sample-data.js';
import { parseLocation } from '../src/storage/location.js';
import { createStorage } from '../src/storage/storage.js';
import { startS3Server } from '../test/helpers/s3-server.js';

// This process talks to s3rver through the AWS SDK too; its Node 22 notice is noise here.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const CLI = 'dist/cli.js';
const DIR = '.bench';
const sizes = (process.env.BENCH_ROWS ?? '200000,1000000')
  .split(',')
  .map(Number)
  .filter((n) => n > 0);
const s3Rows = Number(process.env.BENCH_S3_ROWS ?? 1_000_000);
const results: Record<string, unknown>[] = [];

/** Starts `batch-scorer simulate` as its own process; answers its URL. */
async function startSimulator(extra: string[] = []): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [CLI, 'simulate', '--port', '0', ...extra], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, LOG_LEVEL: 'warn' },
  });
  let text = '';
  for await (const chunk of child.stdout) {
    text += chunk;
    const m = /listening on (\S+)/.exec(text);
    if (m) return { url: m[1], child };
  }
  throw new Error('simulator did not start');
}

/** Runs a CLI command, sampling its peak RSS (VmHWM) until it exits. */
async function measure(args: string[], env: Record<string, string> = {}): Promise<{ seconds: number; peakRssMiB: number; stdout: string }> {
  const started = process.hrtime.bigint();
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, LOG_LEVEL: 'warn', ...env } });
  let stdout = '';
  child.stdout.on('data', (d) => (stdout += d));
  let peakKiB = 0;
  const sample = async () => {
    try {
      const status = await readFile(`/proc/${child.pid}/status`, 'utf8');
      peakKiB = Math.max(peakKiB, Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0));
    } catch {
      // The process has exited between two samples.
    }
  };
  const timer = setInterval(() => void sample(), 20);
  const [code] = (await once(child, 'exit')) as [number | null];
  clearInterval(timer);
  if (code !== 0) throw new Error(`batch-scorer ${args.join(' ')} exited ${code}`);
  return { seconds: Number(process.hrtime.bigint() - started) / 1e9, peakRssMiB: Math.round(peakKiB / 102.4) / 10, stdout };
}

async function main() {
  await rm(DIR, { recursive: true, force: true });
  await mkdir(DIR, { recursive: true });
  const sim = await startSimulator();
  try {
    // 1. Local files: throughput and memory at two sizes.
    const local: Record<number, { rowsPerSecond: number; peakRssMiB: number }> = {};
    for (const rows of sizes) {
      const input = `${DIR}/rentals-${rows}.csv`;
      await pipeline(rentalsCsv(rows), createWriteStream(input));
      const r = await measure(['score', input, '--model', 'mindsdb/home_rentals_model', '--out', `${DIR}/runs`, '--service', sim.url, '--json']);
      const summary = JSON.parse(r.stdout) as { rowsScored: number };
      if (summary.rowsScored !== rows) throw new Error(`scored ${summary.rowsScored} of ${rows} rows`);
      local[rows] = { rowsPerSecond: Math.round(rows / r.seconds), peakRssMiB: r.peakRssMiB };
      results.push({ bench: 'score local csv', rows, seconds: Number(r.seconds.toFixed(2)), ...local[rows] });
      console.log(`score ${rows} rows (local): ${r.seconds.toFixed(1)} s, ${local[rows].rowsPerSecond} rows/s, peak RSS ${r.peakRssMiB} MiB`);
      await parquetBench(input, rows, sim.url, local[rows].peakRssMiB);
      await rm(input);
    }
    if (sizes.length >= 2) {
      const [small, large] = [local[sizes[0]], local[sizes[sizes.length - 1]]];
      const growth = (large.peakRssMiB / small.peakRssMiB - 1) * 100;
      results.push({ bench: 'rss growth', from: sizes[0], to: sizes[sizes.length - 1], percent: Number(growth.toFixed(1)) });
      console.log(
        `peak RSS ${sizes[sizes.length - 1]} rows vs ${sizes[0]} rows: ${growth >= 0 ? '+' : ''}${growth.toFixed(1)}% (target: under 200 MiB and within 15%)`,
      );
    }

    // 2. S3 to S3, every row verified; then the same file through two queue workers.
    if (s3Rows > 0) await s3Bench(sim.url);
  } finally {
    sim.child.kill('SIGTERM');
  }
  // 3. One worker against two, waiting on a slow model.
  if (await redisAnswers()) await scaleOutBench();
  else console.log(`queue benchmarks skipped: no Redis at ${REDIS_URL}`);
  await writeFile(`${DIR}/results.json`, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`results in ${DIR}/results.json`);
}

/**
 * The same rows as Parquet written by DuckDB (row groups of 100,000), scored into Parquet: time and
 * peak RSS beside the CSV run's, and every row read back by DuckDB.
 */
async function parquetBench(csv: string, rows: number, serviceUrl: string, csvPeakMiB: number) {
  const instance = await DuckDBInstance.create(':memory:', { threads: '1' });
  const duckdb = await instance.connect();
  try {
    const parquet = `${DIR}/rentals-${rows}.parquet`;
    await duckdb.run(`COPY (SELECT * FROM read_csv('${csv}', header = true)) TO '${parquet}' (FORMAT parquet, ROW_GROUP_SIZE 100000)`);
    const r = await measure([
      'score',
      parquet,
      '--model',
      'mindsdb/home_rentals_model',
      '--out',
      `${DIR}/runs`,
      '--service',
      serviceUrl,
      '--run-id',
      `pq-${rows}`,
      '--json',
    ]);
    const out = `${DIR}/runs/pq-${rows}/predictions.parquet`;
    const [count] = (await duckdb.runAndReadAll(`SELECT count(*) AS n, count(rental_price) AS scored FROM read_parquet('${out}')`)).getRowObjectsJson();
    if (Number(count.n) !== rows || Number(count.scored) !== rows)
      throw new Error(`DuckDB read ${Number(count.n)} rows (${Number(count.scored)} scored) of ${rows}`);
    const ratio = r.peakRssMiB / csvPeakMiB;
    results.push({
      bench: 'score local parquet',
      rows,
      seconds: Number(r.seconds.toFixed(2)),
      rowsPerSecond: Math.round(rows / r.seconds),
      peakRssMiB: r.peakRssMiB,
      rssVsCsv: Number(ratio.toFixed(2)),
    });
    console.log(
      `score ${rows} rows (parquet to parquet): ${r.seconds.toFixed(1)} s, ${Math.round(rows / r.seconds)} rows/s, peak RSS ${r.peakRssMiB} MiB (${ratio.toFixed(2)}x the CSV run's); DuckDB reads back every row`,
    );
    await rm(parquet);
    await rm(`${DIR}/runs/pq-${rows}`, { recursive: true, force: true });
  } finally {
    duckdb.closeSync();
    instance.closeSync();
  }
}

async function s3Bench(serviceUrl: string) {
  const s3 = await startS3Server(['data', 'results']);
  const storage = createStorage(s3.settings);
  try {
    await storage.write(parseLocation('s3://data/bench/rentals.csv'), rentalsCsv(s3Rows));
    const env = {
      S3_ENDPOINT: s3.endpoint,
      S3_FORCE_PATH_STYLE: 'true',
      AWS_ACCESS_KEY_ID: s3.settings.credentials!.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3.settings.credentials!.secretAccessKey,
    };
    const r = await measure(
      [
        'score',
        's3://data/bench/rentals.csv',
        '--model',
        'mindsdb/home_rentals_model',
        '--out',
        's3://results/bench',
        '--run-id',
        's3',
        '--service',
        serviceUrl,
        '--json',
      ],
      env,
    );
    const checked = await verify(storage, s3Rows);
    const manifest = JSON.parse(await storage.readText(parseLocation('s3://results/bench/s3/manifest.json'))) as Manifest;
    const describe = JSON.parse(await storage.readText(parseLocation('s3://results/bench/s3/describe.json'))) as DescribeSnapshot;
    const complete = manifest.state === 'succeeded' && manifest.input.sha256 && manifest.outputs.every((o) => o.sha256) && describe.answers.length === 2;
    if (!complete) throw new Error('manifest.json or describe.json incomplete');
    results.push({
      bench: 'score s3 csv',
      rows: s3Rows,
      seconds: Number(r.seconds.toFixed(2)),
      rowsPerSecond: Math.round(s3Rows / r.seconds),
      peakRssMiB: r.peakRssMiB,
      rowsVerified: checked,
    });
    console.log(
      `score ${s3Rows} rows S3 -> S3: ${r.seconds.toFixed(1)} s, ${Math.round(s3Rows / r.seconds)} rows/s, peak RSS ${r.peakRssMiB} MiB; ${checked} rows verified in order against the formula; manifest and describe complete`,
    );

    if (await redisAnswers()) {
      const q = await queueRun({ workers: 2, serviceUrl, env, input: 's3://data/bench/rentals.csv', out: 's3://results/bench-queue', options: {} });
      const direct = manifest.outputs.find((o) => o.file === 'predictions.csv')!.sha256;
      const queued = JSON.parse(await storage.readText(parseLocation(`s3://results/bench-queue/${q.runId}/manifest.json`))) as Manifest;
      const same = queued.outputs.find((o) => o.file === 'predictions.csv')!.sha256 === direct;
      results.push({
        bench: 'queue s3 csv, 2 workers',
        rows: s3Rows,
        seconds: Number(q.seconds.toFixed(2)),
        rowsPerSecond: Math.round(s3Rows / q.seconds),
        workersThatScoredSegments: q.segmentWorkers,
        byteIdenticalToScore: same,
      });
      console.log(
        `queue ${s3Rows} rows S3 -> S3 with 2 workers: ${q.seconds.toFixed(1)} s, ${Math.round(s3Rows / q.seconds)} rows/s; workers that scored segments: ${q.segmentWorkers}; predictions byte-identical to score: ${same}`,
      );
      if (!same) throw new Error('queue output differs from score output');
    }
  } finally {
    storage.close();
    await s3.close();
  }
}

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

async function redisAnswers(): Promise<boolean> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
  try {
    await redis.connect();
    return (await redis.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    redis.disconnect();
  }
}

/** Enqueues one run for `workers` worker processes on a fresh queue prefix; answers its time and who scored segments. */
async function queueRun(p: { workers: number; serviceUrl: string; env: Record<string, string>; input: string; out: string; options: RunOptionsInput }) {
  const prefix = `{bs-bench-${process.pid}-${Date.now()}}`;
  const queue = new RunQueue({ redisUrl: REDIS_URL, prefix });
  const env = { ...process.env, ...p.env, REDIS_URL, QUEUE_PREFIX: prefix, LOG_LEVEL: 'info' };
  const children = Array.from({ length: p.workers }, () => spawn(process.execPath, [CLI, 'worker'], { stdio: ['ignore', 'ignore', 'pipe'], env }));
  try {
    // Timed from when every worker listens, so process start-up is not counted as scoring time.
    await Promise.all(
      children.map(
        (c) =>
          new Promise<void>((resolve) => {
            let log = '';
            c.stderr.on('data', (chunk) => {
              log += chunk;
              if (log.includes('worker started')) resolve();
            });
          }),
      ),
    );
    const started = process.hrtime.bigint();
    const { runId } = await queue.enqueue({
      input: p.input,
      model: 'mindsdb/home_rentals_model',
      out: p.out,
      options: { service: p.serviceUrl, ...p.options },
    });
    for (;;) {
      const s = await queue.get(runId);
      if (s?.state === 'failed') throw new Error(`queue run failed: ${s.failedReason}`);
      if (s?.state === 'completed') break;
      await setTimeout(100);
    }
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const pids = new Set((await queue.logs(runId)).map((l) => /^segment .*\(\S+:(\d+), attempt/.exec(l)?.[1]).filter(Boolean));
    return { runId, seconds, segmentWorkers: pids.size };
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await Promise.all(children.filter((c) => c.exitCode === null).map((c) => once(c, 'exit')));
    await queue.close();
    const redis = new Redis(REDIS_URL);
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  }
}

async function scaleOutBench() {
  const rows = Number(process.env.BENCH_LATENCY_ROWS ?? 400_000);
  const slow = await startSimulator(['--latency-ms', '100']);
  const input = `${DIR}/rentals-latency.csv`;
  try {
    await pipeline(rentalsCsv(rows), createWriteStream(input));
    const options = { batchSize: 250, segmentRows: 10_000 };
    const one = await queueRun({ workers: 1, serviceUrl: slow.url, env: {}, input, out: `${DIR}/runs-queue`, options });
    const two = await queueRun({ workers: 2, serviceUrl: slow.url, env: {}, input, out: `${DIR}/runs-queue`, options });
    const [r1, r2] = [rows / one.seconds, rows / two.seconds];
    results.push({
      bench: 'queue scale-out, 100 ms latency',
      rows,
      options,
      oneWorkerRowsPerSecond: Math.round(r1),
      twoWorkersRowsPerSecond: Math.round(r2),
      speedup: Number((r2 / r1).toFixed(2)),
    });
    console.log(
      `queue, simulator latency 100 ms, ${rows} rows, batch 250: 1 worker ${Math.round(r1)} rows/s, 2 workers ${Math.round(r2)} rows/s: ${(r2 / r1).toFixed(2)}x (target: at least 1.8x)`,
    );
  } finally {
    slow.child.kill('SIGTERM');
    await rm(input, { force: true });
  }
}

/** Reads the S3 predictions back and checks every row: order, input echo and the formula's values. */
async function verify(storage: ReturnType<typeof createStorage>, rows: number): Promise<number> {
  let i = 0;
  // Copied to disk first: a slow reader of s3rver, in this same process, is cut off mid-stream.
  const copy = `${DIR}/s3-predictions.csv`;
  await pipeline(await storage.read(parseLocation('s3://results/bench/s3/predictions.csv')), createWriteStream(copy));
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
  if (i !== rows) throw new Error(`${i} rows in the output, ${rows} expected`);
  return i;
}

await main();
