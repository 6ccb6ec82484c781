import { describe, expect, it } from 'vitest';
import { exposureRefusal, openPolicyWarning } from '../../src/cli/serve-exposure.js';
import type { DeploymentPolicy } from '../../src/config/deployment-policy.js';
import { parseLocation } from '../../src/storage/location.js';
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

  it('listens beyond loopback only with credentials and the whole deployment policy, unless --insecure', () => {
    const full: DeploymentPolicy = { inputRoots: [parseLocation('s3://data/')], outputRoots: [parseLocation('s3://results/')], serviceUrls: ['http://sim:1'] };
    const token = { token: 'a-token-of-sixteen-or-more' };
    expect(exposureRefusal('127.0.0.1', {}, {}, false)).toBeUndefined();
    expect(exposureRefusal('0.0.0.0', token, full, false)).toBeUndefined();
    expect(exposureRefusal('0.0.0.0', {}, full, false)).toMatch(/no credentials are set: set API_TOKEN .* or pass --insecure/);
    expect(exposureRefusal('0.0.0.0', token, {}, false)).toMatch(
      /^--host 0\.0\.0\.0 is reachable beyond this machine, and INPUT_ROOTS, OUTPUT_ROOTS, SERVICE_URLS are not set, .*: set them .* or pass --insecure/,
    );
    expect(exposureRefusal('10.0.0.1', token, { ...full, serviceUrls: undefined }, false)).toMatch(/and SERVICE_URLS is not set, .*: set it /);
    expect(exposureRefusal('0.0.0.0', {}, {}, true)).toBeUndefined();
  });

  it('warns of what each unset setting leaves open', () => {
    expect(openPolicyWarning(['INPUT_ROOTS', 'OUTPUT_ROOTS', 'SERVICE_URLS'])).toBe(
      'INPUT_ROOTS, OUTPUT_ROOTS, SERVICE_URLS not set: runs submitted here may read any file or object, write and delete anywhere and send rows to any service, as far as this process and the workers can reach',
    );
    expect(openPolicyWarning(['SERVICE_URLS'])).toBe(
      'SERVICE_URLS not set: runs submitted here may send rows to any service, as far as this process and the workers can reach',
    );
  });
});
