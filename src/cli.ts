#!/usr/bin/env node
import v8 from 'node:v8';
import { Command } from 'commander';
import { reportUsageErrors } from './cli/action.js';
import { registerCancel } from './cli/cancel.js';
import { registerDescribe } from './cli/describe.js';
import { registerEnqueue } from './cli/enqueue.js';
import { registerPipelines } from './cli/pipelines.js';
import { registerSchedule } from './cli/schedule.js';
import { registerScore } from './cli/score.js';
import { registerServe } from './cli/serve.js';
import { registerSimulate } from './cli/simulate.js';
import { registerStatus } from './cli/status.js';
import { registerWatch } from './cli/watch.js';
import { registerWorker } from './cli/worker.js';
import { TOOL } from './version.js';

// Scoring keeps thousands of rows in flight, so most of what it allocates outlives a young-generation
// collection and ends as old-generation garbage; V8's default growth lets that reach ~190 MiB of heap
// before a full collection. Growing the heap by 20% instead of up to 4x holds peak RSS near 175 MiB
// whatever the file size, for ~15% more time in GC (measured with `npm run bench`).
v8.setFlagsFromString('--heap-growing-percent=20');

// The AWS SDK warns on every start that its 2027 releases will need Node 22; that is for whoever
// upgrades dependencies (see README), not for each user's terminal. Its own switch turns it off.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const program = new Command('batch-scorer').description('Score large CSV / JSON Lines files against a Model Query Service').version(TOOL.version);

registerScore(program);
registerWorker(program);
registerEnqueue(program);
registerStatus(program);
registerCancel(program);
registerServe(program);
registerPipelines(program);
registerSchedule(program);
registerWatch(program);
registerDescribe(program);
registerSimulate(program);
// Usage errors are one line with a hint, and exit 2, as every batch-scorer configuration error does.
reportUsageErrors(program);

await program.parseAsync(process.argv);
