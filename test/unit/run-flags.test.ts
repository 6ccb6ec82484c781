import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { addRunFlags, runFlagFields, runOptionsFromFlags } from '../../src/cli/run-flags.js';
import { optionFlag, runOptionsSchema, type RunOptions } from '../../src/config/run-options.js';
import { loadSettings } from '../../src/config/settings.js';

const FIELDS = Object.keys(runOptionsSchema.shape) as (keyof RunOptions)[];
/** The schema's defaults, as it fills them in. */
const DEFAULTS: Partial<RunOptions> = runOptionsSchema.parse({});
/** Settings from no environment and no config files: the schema's defaults alone. */
const settings = () => loadSettings({}, '/nonexistent-config-dir');

function command(name: 'score' | 'enqueue'): Command {
  return addRunFlags(new Command(name).exitOverride(), name);
}

/** The run option flags `name` registers: every flag but --model and --out. */
function runFlags(name: 'score' | 'enqueue') {
  return command(name).options.filter((o) => o.long !== '--model' && o.long !== '--out');
}

describe('run flags', () => {
  it('give every schema field a flag on enqueue, and every one but --priority on score', () => {
    expect(runFlags('enqueue').map((o) => o.long)).toEqual(expect.arrayContaining(FIELDS.map(optionFlag)));
    expect(runFlags('enqueue')).toHaveLength(FIELDS.length);
    expect(runFlagFields('score').sort()).toEqual(FIELDS.filter((f) => f !== 'priority').sort());
  });

  it('each map to a schema field', () => {
    const flags = new Set(FIELDS.map(optionFlag));
    for (const option of runFlags('enqueue')) expect(flags, option.long).toContain(option.long);
  });

  it('say in help the default the schema fills in', () => {
    const byFlag = new Map(runFlags('enqueue').map((o) => [o.long, o.description]));
    const shown = FIELDS.flatMap((f) => {
      const value = DEFAULTS[f];
      return typeof value === 'string' || typeof value === 'number' ? [[f, value] as const] : [];
    });
    expect(shown.map(([f]) => f)).toContain('batchSize');
    for (const [field, schemaDefault] of shown) {
      const value = field === 'maxBatchBytes' ? `${Number(schemaDefault) / 1024 / 1024} MiB` : String(schemaDefault);
      expect(byFlag.get(optionFlag(field)), field).toContain(`(default: ${value})`);
    }
  });

  it('offer the choices the schema accepts', () => {
    const choices = new Map(runFlags('enqueue').map((o) => [o.long, o.argChoices]));
    expect(choices.get('--format')).toEqual(['csv', 'jsonl', 'parquet']);
    expect(choices.get('--priority')).toEqual(['high', 'normal', 'low']);
    expect(choices.get('--batch-size')).toBeUndefined();
  });

  it('turn what was typed into run options', () => {
    const cmd = command('score');
    cmd.parse(
      [
        ...['--model', 'p/m', '--out', 'o', '--batch-size', '10', '--concurrency', 'auto', '--max-error-rate', '0.5'],
        ...['--param', 'a=1', '--param', 'b=x', '--keep-columns', 'c, d', '--keep-columns', 'e', '--explain', '--delimiter', 'tab'],
      ],
      { from: 'user' },
    );
    const options = runOptionsFromFlags(cmd.opts(), settings(), 'score');
    expect(options).toMatchObject({
      batchSize: 10,
      concurrency: 'auto',
      maxErrorRate: 0.5,
      params: { a: 1, b: 'x' },
      keepColumns: ['c', 'd', 'e'],
      explain: true,
      delimiter: '\t',
      timeout: DEFAULTS.timeout,
    });
  });

  it('name a bad value by the flag typed', () => {
    const cmd = command('score');
    cmd.parse(['--model', 'p/m', '--out', 'o', '--max-error-rate', '3'], { from: 'user' });
    expect(() => runOptionsFromFlags(cmd.opts(), settings(), 'score')).toThrow('score: --max-error-rate: must be at most 1');
  });
});
