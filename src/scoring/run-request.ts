import { isDeepStrictEqual } from 'node:util';
import { CAP_OPTIONS, formatRunInput, optionFlag, OUTPUT_NEUTRAL_OPTIONS, parseRunInput, type RunOptions } from '../config/index.js';
import { formatLocation, parseLocation } from '../storage/index.js';
import type { RunTrigger } from './run-trigger.js';

/** What the user asked for: the run's fingerprint (all but `trigger`). */
export interface RunRequest {
  input: string;
  model: string;
  out: string;
  options: RunOptions;
  /** What started the run; not compared: the same run asked again by other means is the same run. */
  trigger?: RunTrigger;
}

/**
 * What makes `asked` another run than `stored`, as the user would type it (`--batch-size 500,
 * where the run has 1000`), or undefined when it asks for the same output: the same input and
 * output locations (however written), model and every option that shapes the output bytes.
 * Options that do not (OUTPUT_NEUTRAL_OPTIONS) may differ.
 */
export function requestDifference(stored: RunRequest, asked: RunRequest): string | undefined {
  const where = (text: string) => formatLocation(parseLocation(text));
  const reads = (text: string) => formatRunInput(parseRunInput(text));
  if (reads(stored.input) !== reads(asked.input)) return `input ${asked.input}, where the run has ${stored.input}`;
  if (where(stored.out) !== where(asked.out)) return `--out ${asked.out}, where the run has ${stored.out}`;
  if (stored.model !== asked.model) return `--model ${asked.model}, where the run has ${stored.model}`;
  const keys = new Set([...Object.keys(stored.options), ...Object.keys(asked.options)] as (keyof RunOptions)[]);
  for (const key of keys) {
    if (OUTPUT_NEUTRAL_OPTIONS.includes(key)) continue;
    const [was, is] = [stored.options[key], asked.options[key]];
    if (!isDeepStrictEqual(was, is)) return `${optionFlag(key)} ${show(is)}, where the run has ${show(was)}`;
  }
  return undefined;
}

/** Whether two requests ask for the same run output; the run id is the key they were found by. */
export function sameRequest(a: RunRequest, b: RunRequest): boolean {
  return requestDifference(a, b) === undefined;
}

/**
 * The stored request, with the output-neutral options of `asked` (a resume may raise
 * --max-error-rate, say). The caps are `asked`'s, set or not: a resume naming none is uncapped.
 */
export function withNeutralOptions(stored: RunRequest, asked: Partial<RunOptions>): RunRequest {
  const neutral = Object.fromEntries(OUTPUT_NEUTRAL_OPTIONS.filter((k) => k !== 'runId' && asked[k] !== undefined).map((k) => [k, asked[k]]));
  const options: Record<string, unknown> = { ...stored.options, ...neutral };
  for (const cap of CAP_OPTIONS) if (asked[cap] === undefined) delete options[cap];
  return { ...stored, options: options as RunOptions };
}

function show(value: unknown): string {
  return value === undefined ? '(not set)' : typeof value === 'string' ? value : JSON.stringify(value);
}
