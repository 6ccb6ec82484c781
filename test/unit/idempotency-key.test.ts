import { describe, expect, it } from 'vitest';
import { submissionHash } from '../../src/http/idempotency-key.js';
import { runSubmissionSchema } from '../../src/http/run-schemas.js';

const body = (deadline: string) => ({ input: '/data/in.csv', model: 'mindsdb/home_rentals_model', out: '/data/out/', options: { deadline } });

describe('submissionHash', () => {
  it('hashes a deadline duration as sent: the same body sent again later hashes alike, though it parses to a later time', () => {
    const sent = body('2h');
    const first = runSubmissionSchema.parse(sent);
    // As the same body parsed an hour later: its deadline is another time.
    const later = { ...first, options: { ...first.options!, deadline: new Date(Date.parse(first.options!.deadline!) + 3_600_000).toISOString() } };
    expect(later.options.deadline).not.toBe(first.options!.deadline);
    expect(submissionHash(later, sent)).toBe(submissionHash(first, sent));
  });

  it('tells another deadline apart', () => {
    const [a, b] = [body('2h'), body('3h')];
    expect(submissionHash(runSubmissionSchema.parse(a), a)).not.toBe(submissionHash(runSubmissionSchema.parse(b), b));
  });
});
