import { describe, expect, it } from 'vitest';
import { enqueueCommand, resumeCommand } from '../../src/cli/resume-command.js';

describe('resumeCommand', () => {
  it('repeats the arguments and adds the run id chosen for the run', () => {
    expect(resumeCommand(['score', 'in.csv', '--model', 'p/m', '--out', 'runs', '--json'], 'r1')).toBe(
      'batch-scorer score in.csv --model p/m --out runs --json --run-id r1',
    );
  });

  it('leaves the caps out for a run they ended, however they were written', () => {
    const args = ['score', 'in.csv', '--max-requests', '50', '--batch-size', '100', '--max-rows=900', '--deadline', '2h', '--run-id', 'c'];
    expect(resumeCommand(args, 'c', true)).toBe('batch-scorer score in.csv --batch-size 100 --run-id c');
    expect(resumeCommand(args, 'c')).toBe('batch-scorer score in.csv --max-requests 50 --batch-size 100 --max-rows=900 --deadline 2h --run-id c');
  });

  it('adds no second --run-id, however the first was written', () => {
    expect(resumeCommand(['score', 'in.csv', '--run-id', 'mine'], 'mine')).toBe('batch-scorer score in.csv --run-id mine');
    expect(resumeCommand(['score', 'in.csv', '--run-id=mine'], 'mine')).toBe('batch-scorer score in.csv --run-id=mine');
  });

  it('quotes words a shell would split or expand', () => {
    expect(resumeCommand(['score', 'my file.csv', '--param', "note=it's", '--out', '$HOME/runs', '--param', 'k={"a":1}'], 'r')).toBe(
      `batch-scorer score 'my file.csv' --param 'note=it'\\''s' --out '$HOME/runs' --param 'k={"a":1}' --run-id r`,
    );
  });
});

describe('enqueueCommand', () => {
  it('writes a queued run back as the enqueue that resumes it, its options as flags', () => {
    const run = {
      runId: 'nightly',
      input: '/data/in.csv',
      model: 'p/m.2',
      out: 's3://b/runs',
      options: {
        runId: 'nightly',
        batchSize: 50,
        explain: true,
        strictColumns: false,
        concurrency: 'auto' as const,
        params: { partition_size: 10, mode: 'fast' },
      },
    };
    expect(enqueueCommand(run)).toBe(
      'batch-scorer enqueue /data/in.csv --model p/m.2 --out s3://b/runs --batch-size 50 --explain --concurrency auto --param partition_size=10 --param mode=fast --run-id nightly',
    );
  });
});
