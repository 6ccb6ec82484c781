import { describe, expect, it } from 'vitest';
import type { Manifest } from '../../src/scoring/manifest.js';
import { allListeners, type RunListener } from '../../src/scoring/run-listener.js';
import { parseLocation } from '../../src/storage/location.js';
import { keptLogger } from '../helpers/kept-logger.js';

describe('allListeners', () => {
  it('tells every listener in turn; one that throws is logged with its error and passed over', () => {
    const { log, lines } = keptLogger();
    const heard: string[] = [];
    const recording = (name: string): RunListener => ({
      runStarted: (start) => heard.push(`${name} started ${start.runId}`),
      runEnded: (manifest) => heard.push(`${name} ended ${manifest.runId}`),
    });
    const throwing: RunListener = {
      runStarted: () => {
        throw new Error('listener broke');
      },
      runEnded: () => {
        throw new Error('listener broke again');
      },
    };
    const all = allListeners([recording('a'), throwing, recording('b')], log);
    const request = { input: 'in.csv', out: 'out/', model: 'p/m', options: {} } as never;
    all.runStarted({ runId: 'r1', request, folder: parseLocation('out/r1'), startedAt: new Date().toISOString(), attempt: 1 });
    all.runEnded({ runId: 'r1' } as Manifest);

    expect(heard).toEqual(['a started r1', 'b started r1', 'a ended r1', 'b ended r1']);
    expect(lines.map((l) => [l.msg, (l.err as { message: string }).message, typeof (l.err as { stack?: string }).stack])).toEqual([
      ['a run listener failed on a run start; the run goes on', 'listener broke', 'string'],
      ['a run listener failed on a run end; the run goes on', 'listener broke again', 'string'],
    ]);
  });
});
