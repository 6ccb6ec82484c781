import { shellWord } from '../shell-word.js';
import { optionFlag, type RunOptionsInput } from '../config/index.js';
import { CAP_FLAGS } from '../scoring/index.js';

/** The flags of the caps (each takes a value). They count the run's totals, so a run they ended cannot resume under them. */
const CAP_FLAG_NAMES: readonly string[] = Object.values(CAP_FLAGS);

/**
 * The command that resumes a run: the arguments it was started with, quoted as a shell reads
 * them, and `--run-id` when the id was chosen for it. The same options ask for the same run.
 * `withoutCaps` (a run that expired): the caps' flags left out, since the run has used them up.
 */
export function resumeCommand(args: readonly string[], runId: string, withoutCaps = false): string {
  const named = args.some((a) => a === '--run-id' || a.startsWith('--run-id='));
  const kept = withoutCaps ? args.filter((a, i) => !isCapFlag(a) && !(CAP_FLAG_NAMES.includes(args[i - 1]) && !a.startsWith('--'))) : args;
  return ['batch-scorer', ...kept, ...(named ? [] : ['--run-id', runId])].map(shellWord).join(' ');
}

function isCapFlag(arg: string): boolean {
  return CAP_FLAG_NAMES.some((flag) => arg === flag || arg.startsWith(`${flag}=`));
}

/**
 * The `enqueue` that resumes a queued run, from what its job holds: its input, model, output and
 * the options its enqueuer set, as flags, under its run id.
 */
export function enqueueCommand(run: { runId: string; input: string; model: string; out: string; options: RunOptionsInput }): string {
  const flags: string[] = [];
  for (const [key, value] of Object.entries(run.options)) {
    if (key === 'runId' || value === undefined || value === false) continue;
    if (key === 'params') {
      for (const [k, v] of Object.entries(value as Record<string, unknown>)) flags.push('--param', `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`);
    } else flags.push(optionFlag(key), ...(value === true ? [] : [typeof value === 'string' ? value : JSON.stringify(value)]));
  }
  return resumeCommand(['enqueue', run.input, '--model', run.model, '--out', run.out, ...flags], run.runId);
}
