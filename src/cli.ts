#!/usr/bin/env -S MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=131072 node --max-semi-space-size=8 --scavenger-max-new-space-capacity-mb=2 --no-maglev --no-allocation-site-pretenuring
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
// 10M rows still reached 188). At 2 the trigger is 8 MiB (at 4, 16 MiB left a 1M-row JSON Lines
// run ~5 MiB higher); the young generation itself stays as set above, and no CPU cost was
// measured on the CPU-bound run.
// Two V8 features cost a run more than they gave (Node 24.21, medians of 8 alternating pairs of
// the CPU-bound run). Maglev, the tier between the baseline compiler and TurboFan, compiled ~690
// functions of a 500k-row run (~0.3 s, --trace-opt), the hottest of which TurboFan compiled
// again: without it, ~3% less CPU. Allocation-site pretenuring saw that what the sites of a
// batch's rows and answers allocate outlives a young collection (they live until the batch is
// written), and from then on allocated them straight in the old generation, where each had to be
// found dead by a full collection (concurrent marking: 0.4-0.9 CPU-s of ~4.3): without it most
// die young, and the run takes 8% less CPU. Peak RSS of a 1M-row JSON Lines run: 140-147 MiB with
// both on, 134-139 without Maglev, 135-140 without either.
// These can only be set as the process starts, hence here, where the installed `batch-scorer`
// command (and the container's entry point) run it (measured with `npm run bench`).
import module from 'node:module';
import v8 from 'node:v8';
import { buildProgram, reportUsageErrors } from './cli/index.js';

// Scoring keeps thousands of rows in flight, so much of what it allocates outlives a young-generation
// collection and ends as old-generation garbage; V8's default growth lets that reach ~190 MiB of heap
// before a full collection. A fixed growth bounds the heap at a multiple of the live heap (~20 MiB),
// so peak RSS stays flat whatever the file size. The factor trades CPU for memory (Node 24.9,
// 500k-row CPU-bound run against the hand-written scorer; 1M-row JSON Lines peak RSS): 20% made
// 77-89 full collections a run (1.3x the yardstick, 134 MiB), 80% 1.63-1.65x at 139-144 MiB, 100%
// 1.97x at 140-153 MiB, V8's default 1.81x at 198 MiB. 80% keeps both targets with a margin.
// Set once the process runs, so it overrides the same flag given on the first line or in NODE_OPTIONS.
v8.setFlagsFromString('--heap-growing-percent=80');

// V8's compiled code of the modules a command loads is kept on disk (in the OS temp folder, or
// NODE_COMPILE_CACHE; NODE_DISABLE_COMPILE_CACHE=1 turns it off) and reused by the next start:
// about 50 ms less CPU before a `score` run's first request. A folder it cannot write costs nothing.
module.enableCompileCache();

// Only the named command's module is loaded (see buildProgram): a `score` run does not hold the
// HTTP server, metrics and schedule code in memory. Help, and a name that is no command (answered
// with a suggestion), load them all.
const program = await buildProgram(process.argv[2]);
// Usage errors are one line with a hint, and exit 2, as every batch-scorer configuration error does.
reportUsageErrors(program);

await program.parseAsync(process.argv);
