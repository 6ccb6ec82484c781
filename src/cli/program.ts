import { Command } from 'commander';
import { TOOL } from '../version.js';

/** What the top-level `--help` says the tool does. */
const DESCRIPTION = 'Score large CSV / JSON Lines / Parquet files against a Model Query Service';

/**
 * Each command's module, loaded only for that command: a `score` run does not hold the HTTP
 * server, metrics and schedule code in memory (about 10 MiB of its peak).
 */
const COMMANDS: Record<string, () => Promise<(program: Command) => void>> = {
  score: async () => (await import('./score.js')).registerScore,
  worker: async () => (await import('./worker.js')).registerWorker,
  enqueue: async () => (await import('./enqueue.js')).registerEnqueue,
  status: async () => (await import('./status.js')).registerStatus,
  cancel: async () => (await import('./cancel.js')).registerCancel,
  accept: async () => judgeCommand('accept'),
  reject: async () => judgeCommand('reject'),
  compare: async () => (await import('./compare.js')).registerCompare,
  runs: async () => (await import('./runs.js')).registerRuns,
  rescore: async () => (await import('./rescore.js')).registerRescore,
  serve: async () => (await import('./serve.js')).registerServe,
  pipelines: async () => (await import('./pipelines.js')).registerPipelines,
  schedule: async () => (await import('./schedule.js')).registerSchedule,
  watch: async () => (await import('./watch.js')).registerWatch,
  describe: async () => (await import('./describe.js')).registerDescribe,
  simulate: async () => (await import('./simulate.js')).registerSimulate,
};

/** `accept` or `reject`, one module for both verdicts. */
async function judgeCommand(verdict: 'accept' | 'reject'): Promise<(program: Command) => void> {
  const { registerJudge } = await import('./judge.js');
  return (program) => registerJudge(program, verdict);
}

/**
 * The `batch-scorer` program. Given the name of a command, only that command's module is loaded
 * and registered; without one (help, the reference generator), or with a name that is no command
 * (answered with a suggestion, which needs them all), every command is.
 */
export async function buildProgram(named?: string): Promise<Command> {
  const program = new Command('batch-scorer').description(DESCRIPTION).version(TOOL.version);
  const loading = named !== undefined && Object.hasOwn(COMMANDS, named) ? [COMMANDS[named]] : Object.values(COMMANDS);
  for (const register of await Promise.all(loading.map((load) => load()))) register(program);
  return program;
}
