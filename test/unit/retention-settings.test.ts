import { describe, expect, it } from 'vitest';
import { retentionFromEnv } from '../../src/config/retention.js';
import { keptJobs, MIN_JOB_AGE_S, RETENTION } from '../../src/queue/queues.js';
import { ageText } from '../../src/retention/prune-plan.js';

const DAY = 86_400_000;

describe('the retention settings', () => {
  it('are unset by default: everything is kept, and the queues keep their defaults', () => {
    expect(retentionFromEnv({})).toEqual({});
    expect(keptJobs({})).toEqual({ runs: RETENTION.runs, segments: RETENTION.segments });
  });

  it('read RETENTION_* over the keys of config/*.yaml', () => {
    const file = { olderThan: '2w', keep: 3, jobs: 50 };
    expect(retentionFromEnv({}, file)).toEqual({ olderThanMs: 14 * DAY, keep: 3, jobs: 50 });
    expect(retentionFromEnv({ RETENTION_OLDER_THAN: '12h', RETENTION_KEEP: '0', RETENTION_JOBS: '10' }, file)).toEqual({
      olderThanMs: 12 * 3_600_000,
      keep: 0,
      jobs: 10,
    });
  });

  it('refuse a bad value naming its variable (E_CONFIG)', () => {
    expect(() => retentionFromEnv({ RETENTION_OLDER_THAN: '30' })).toThrow(/^RETENTION_OLDER_THAN takes a duration such as 30d.*got "30"$/);
    expect(() => retentionFromEnv({ RETENTION_OLDER_THAN: '1y' })).toThrow(/RETENTION_OLDER_THAN/);
    expect(() => retentionFromEnv({ RETENTION_KEEP: '-2' })).toThrow(/^RETENTION_KEEP takes a whole number of 0 or more, got "-2"$/);
    expect(() => retentionFromEnv({ RETENTION_JOBS: '9' })).toThrow(/^RETENTION_JOBS takes a whole number from 10 to 5000, got "9"$/);
    expect(() => retentionFromEnv({ RETENTION_JOBS: '5001' })).toThrow(/RETENTION_JOBS/);
  });

  it('bound the finished jobs the workers keep: the count of each end state, the age when sooner than the default, never under an hour', () => {
    const kept = keptJobs({ jobs: 25, olderThanMs: 2 * DAY });
    expect(kept.runs).toEqual({ removeOnComplete: { age: 2 * 86_400, count: 25 }, removeOnFail: { age: 2 * 86_400, count: 25 } });
    expect(kept.segments).toEqual({ removeOnComplete: { age: 86_400, count: 25 }, removeOnFail: { age: 2 * 86_400, count: 25 } });
    expect(keptJobs({ olderThanMs: 0 }).runs.removeOnComplete.age).toBe(MIN_JOB_AGE_S);
    expect(keptJobs({ olderThanMs: 365 * DAY }).runs).toEqual(RETENTION.runs);
  });

  it('say ages in the largest whole unit, as --older-than takes them', () => {
    expect([ageText(40 * DAY + 5), ageText(5 * 3_600_000 + 1), ageText(61_000), ageText(999), ageText(-5)]).toEqual(['40d', '5h', '1m', '0s', '0s']);
  });
});
