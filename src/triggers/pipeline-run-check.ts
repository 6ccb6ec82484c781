import { formatRunInput, parseRunInput } from '../config/index.js';
import { BatchScorerError } from '../errors.js';
import type { RunJobData } from '../queue/index.js';
import { formatLocation, parseLocation } from '../storage/index.js';
import { excerpt } from '../text-excerpt.js';
import { fillDateTemplate } from './date-template.js';
import { watches } from './file-drop.js';
import type { Pipeline } from './pipelines.js';

/** A run's request as its job carries it (text), with the trigger that started it. */
type RunRequestText = RunJobData['request'];

const same = (a: string, b: string) => formatLocation(parseLocation(a)) === formatLocation(parseLocation(b));

/** Whether two inputs are the same: files at one location, or one database. */
const sameInput = (a: string, b: string) => formatRunInput(parseRunInput(a)) === formatRunInput(parseRunInput(b));

/**
 * Why a run whose trigger names a pipeline is not a run that pipeline, as `pipelines` declare it,
 * makes; undefined when it is, or when it names none. A scheduled pipeline's run reads its input
 * filled for the fire time; a file-drop pipeline's reads a file it watches; both write to the
 * pipeline's output with its model and service. Other options are not compared: a resume may
 * raise its caps.
 */
export function pipelineRunProblem(pipelines: readonly Pipeline[], request: RunRequestText): string | undefined {
  const { trigger } = request;
  if (trigger === undefined || trigger.kind === 'cli' || trigger.kind === 'api') return undefined;
  const name = trigger.pipeline;
  const declared = pipelines.find((p) => p.name === name);
  if (!declared) return `pipeline ${excerpt(name, 100)} is not declared in the jobs folder`;
  if (request.model !== declared.model) return `its model is not pipeline ${name}'s`;
  if (!same(request.out, declared.output)) return `its output is not pipeline ${name}'s`;
  if (request.options.service !== declared.options.service) return `its service is not pipeline ${name}'s`;
  // A database input's rows are its table or query: another would read other rows under the pipeline's name.
  const rows = ['table', 'query', 'segmentBy'] as const;
  if (rows.some((option) => request.options[option] !== declared.options[option])) return `its table or query is not pipeline ${name}'s`;
  if (trigger.kind === 'schedule') {
    if (declared.kind !== 'schedule') return `pipeline ${name} has no schedule`;
    return sameInput(request.input, fillDateTemplate(declared.input, new Date(trigger.fireTime), declared.schedule.tz))
      ? undefined
      : `its input is not pipeline ${name}'s for its fire time`;
  }
  if (declared.kind !== 'trigger') return `pipeline ${name} starts no runs for files`;
  const file = parseLocation(trigger.object.location);
  return same(request.input, trigger.object.location) && watches(declared, file) ? undefined : `its input is not a file pipeline ${name} watches`;
}

/**
 * The check a worker makes of each run job before it reads or sends anything (see
 * WorkerOptions.checkPipelineRun): a run naming a pipeline must be one the pipeline makes, so
 * that a job anyone wrote to Redis cannot pass for a pipeline's run (its webhooks, its drift
 * baseline) while reading, writing or calling elsewhere. Refused: E_NOT_ALLOWED.
 */
export function pipelineRunCheck(pipelines: readonly Pipeline[]): (runId: string, request: RunRequestText) => void {
  return (runId, request) => {
    let problem: string | undefined;
    try {
      problem = pipelineRunProblem(pipelines, request);
    } catch {
      problem = 'its input, output or fire time cannot be read';
    }
    if (problem) throw new BatchScorerError('E_NOT_ALLOWED', `run ${runId} names a pipeline, but ${problem}: refused; nothing was read or sent`);
  };
}
