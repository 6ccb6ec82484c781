import type { Command } from 'commander';
import { UsageError } from '../errors.js';
import { formatIssues } from '../config/index.js';
import { PROCESS_DEFAULTS } from '../process-defaults.js';
import { createLogger } from '../log.js';
import { action } from './action.js';
import { runUntilSignal } from './graceful-exit.js';
import { listenRefusal } from './listen-refusal.js';

const num = (v: string) => Number(v);

export function registerSimulate(program: Command): void {
  program
    .command('simulate')
    .description('run the bundled Model Query Service simulator until SIGINT/SIGTERM')
    .option('--port <port>', 'port (0 picks a free one)', num, PROCESS_DEFAULTS.simulatorPort)
    .option('--host <host>', 'interface to listen on', PROCESS_DEFAULTS.simulatorHost)
    .option('--base-path <path>', 'prefix before /api, e.g. /v1')
    .option('--envelope <envelope>', 'predict body the simulator accepts: data or array')
    .option('--engine <engine>', 'how the models answer: lightwood (MindsDB to 25.x) or byom (MindsDB 26.x)')
    .option('--legacy-describe', 'answer describe {} with the info shape, as older servers do')
    .option('--latency-ms <ms>', "time each predict answer takes, from the request's arrival", num)
    .option('--latency-jitter-ms <ms>', 'random extra delay up to this', num)
    .option('--error-rate <fraction>', 'share of predict requests answered 500', num)
    .option('--rate-limit-rate <fraction>', 'share answered 429 with Retry-After', num)
    .option('--capacity <n>', 'requests the engine works on at once; more get 429 (0: no limit)', num)
    .option('--retry-after-seconds <s>', 'Retry-After of 429s', num)
    .option('--reset-rate <fraction>', 'share whose connection is reset', num)
    .option('--hang-rate <fraction>', 'share never answered', num)
    .option('--gateway-error-rate <fraction>', 'share answered 503 with an HTML page', num)
    .option('--short-answer-rate <fraction>', 'share answered with one row too few or too many', num)
    .option('--retrain-after-predicts <n>', 'retrain every model after this many predict requests (0: never)', num)
    .option('--no-engine-errors', 'a fixed engine: read __engine_error__ as any other value instead of failing the rows holding it')
    .option('--seed <n>', 'seed of the fault draws', num)
    .option('--row-id-member <name>', 'row id member echoed back (__mindsdb_row_id; none: no echo)')
    .action(
      action(async (flags: Record<string, unknown>) => {
        // The simulator's server loads only when it runs (the help of every command loads this module).
        const { createSimulator, simulatorOptionsSchema } = await import('../simulator/index.js');
        // The token is a secret: from the environment only, never a flag (flags show in `ps`).
        const parsed = simulatorOptionsSchema.safeParse({ ...flags, token: process.env.SIMULATOR_TOKEN || undefined });
        if (!parsed.success) throw new UsageError(`simulate: ${formatIssues(parsed.error, 'flags')}`);
        const log = createLogger({ name: 'simulator' });
        const simulator = await createSimulator(parsed.data, log).catch((err: unknown) => {
          throw listenRefusal(err, 'simulate', parsed.data.host, parsed.data.port, 'choose another --port (0 picks a free one) or --host');
        });
        process.stdout.write(`simulator listening on ${simulator.url}\n`);
        await runUntilSignal(log, PROCESS_DEFAULTS.stopTimeoutMs, () => simulator.close());
      }),
    );
}
