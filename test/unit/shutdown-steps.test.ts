import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.js';
import { Releasers } from '../../src/shutdown-steps.js';

describe('Releasers', () => {
  it('releases in reverse order of opening, each even when one before it failed, once however often called', async () => {
    const released: string[] = [];
    const releasers = new Releasers(silentLogger);
    releasers.add('redis', () => Promise.resolve(released.push('redis')));
    releasers.add('queues', () => Promise.reject(new Error('queues would not close')));
    releasers.add('server', () => Promise.resolve(released.push('server')));
    await Promise.all([releasers.release(), releasers.release()]);
    await releasers.release();
    expect(released).toEqual(['server', 'redis']);
  });
});
