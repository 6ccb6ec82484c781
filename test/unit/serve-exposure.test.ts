import { describe, expect, it } from 'vitest';
import { isLoopback } from '../../src/http/auth.js';
import { redactPath } from '../../src/log.js';

describe('what serve exposes', () => {
  it('takes only 127.0.0.0/8, ::1 and localhost as loopback', () => {
    for (const host of ['127.0.0.1', '127.1.2.3', '::1', '[::1]', 'localhost', 'LOCALHOST']) expect([host, isLoopback(host)]).toEqual([host, true]);
    for (const host of ['0.0.0.0', '::', '10.0.0.1', '128.0.0.1', '127.0.0.1.example.com', 'example.com', ''])
      expect([host, isLoopback(host)]).toEqual([host, false]);
  });

  it('logs request paths without their query strings', () => {
    expect(redactPath('/runs')).toBe('/runs');
    expect(redactPath('/ui/queues/api/queues?token=abc&page=1')).toBe('/ui/queues/api/queues?…');
    expect(redactPath('/metrics?s3cr3t')).toBe('/metrics?…');
  });
});
