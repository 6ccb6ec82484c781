#!/usr/bin/env -S MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=131072 node --max-semi-space-size=8 --scavenger-max-new-space-capacity-mb=4
// The young generation is capped at 8 MiB per semi-space (V8's default is 16): a batch's rows die
// young once their requests are sent, and a cap of 4 collected them twice as often, for about 4%
// more CPU and about a point of the latency-bound rate; 16 cost ~15 MiB of peak RSS for no more
// speed. glibc gives each thread that allocates (V8's collector and compiler threads, libuv's pool)
// its own arena and keeps what they free: two arenas take ~10 MiB off the peak RSS of a 1M-row run,
// for no CPU measured. glibc also raises its mmap threshold to the size of each mapped block freed
// (up to 32 MiB): once the first answer (~0.5 MiB) was freed, every later request body and answer
// was carved from the heap, whose holes then grew RSS with the run's length (Node 24: 137 -> 166
// MiB over a 1M-row JSON Lines run, heap flat); a fixed threshold (its default, 128 KiB) maps
// them and unmaps them as they are freed. V8 13 (Node 24) forces a young collection for ArrayBuffers
// only once the young generation holds twice its *default* maximum semi-space of them, which this
// flag sets (in units of 2 MiB here) and --max-semi-space-size does not
// (Heap::AllocateExternalBackingStore): assembly, which allocates little else, let 33-50 MiB of
// read chunks wait dead for a collection (a 5M-row JSON Lines run peaked there at 196 MiB; at 8,
// 10M rows still reached 188). At 4 the trigger is 16 MiB; the young generation itself stays as
// set above, and no CPU cost was measured on the CPU-bound run.
// These can only be set as the process starts, hence here, where the installed `batch-scorer`
// command (and the container's entry point) run it (measured with `npm run bench`).
import module from 'node:module';
import v8 from 'node:v8';
import { Command } from 'commander';
import { reportUsageErrors } from './cli/action.js';
import { TOOL } from './version.js';

// Scoring keeps thousands of rows in flight, so most of what it allocates outlives a young-generation
// collection and ends as old-generation garbage; V8's default growth lets that reach ~190 MiB of heap
// before a full collection. Growing the heap by 20% instead of up to 4x keeps peak RSS flat whatever
// the file size, for ~15% more time in GC (measured with `npm run bench`).
v8.setFlagsFromString('--heap-growing-percent=20');

// The AWS SDK warns on every start that its 2027 releases will need Node 22; that is for whoever
// upgrades dependencies (see README), not for each user's terminal. Its own switch turns it off.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const program = new Command('batch-scorer').description('Score large CSV / JSON Lines files against a Model Query Service').version(TOOL.version);

// Each command's module, loaded only for that command: a `score` run does not hold the HTTP
// server, metrics and schedule code in memory (about 10 MiB of its peak). Help, and a name
// that is no command (answered with a suggestion), load them all.
const COMMANDS: Record<string, () => Promise<(program: Command) => void>> = {
  score: async () => (await import('./cli/score.js')).registerScore,
  worker: async () => (await import('./cli/worker.js')).registerWorker,
  enqueue: async () => (await import('./cli/enqueue.js')).registerEnqueue,
  status: async () => (await import('./cli/status.js')).registerStatus,
  cancel: async () => (await import('./cli/cancel.js')).registerCancel,
  serve: async () => (await import('./cli/serve.js')).registerServe,
  pipelines: async () => (await import('./cli/pipelines.js')).registerPipelines,
  schedule: async () => (await import('./cli/schedule.js')).registerSchedule,
  watch: async () => (await import('./cli/watch.js')).registerWatch,
  describe: async () => (await import('./cli/describe.js')).registerDescribe,
  simulate: async () => (await import('./cli/simulate.js')).registerSimulate,
};
// V8's compiled code of the modules a command loads is kept on disk (in the OS temp folder, or
// NODE_COMPILE_CACHE; NODE_DISABLE_COMPILE_CACHE=1 turns it off) and reused by the next start:
// about 50 ms less CPU before a `score` run's first request. A folder it cannot write costs nothing.
module.enableCompileCache();
const named = process.argv[2];
const loading = named !== undefined && Object.hasOwn(COMMANDS, named) ? [COMMANDS[named]] : Object.values(COMMANDS);
for (const register of await Promise.all(loading.map((load) => load()))) register(program);
// Usage errors are one line with a hint, and exit 2, as every batch-scorer configuration error does.
reportUsageErrors(program);

await program.parseAsync(process.argv);
