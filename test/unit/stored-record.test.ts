import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { storedRecord } from '../../src/queue/stored-record.js';

describe('storedRecord', () => {
  const schema = z.object({ runId: z.string(), enqueued: z.boolean() });

  it('reads a record of the schema, and nothing from text that is not JSON or not of its shape', () => {
    expect(storedRecord('{"runId":"r1","enqueued":true}', schema)).toEqual({ runId: 'r1', enqueued: true });
    expect(storedRecord('{"runId":"r1"', schema)).toBeUndefined();
    expect(storedRecord('{"runId":1,"enqueued":true}', schema)).toBeUndefined();
    expect(storedRecord('null', schema)).toBeUndefined();
  });
});
