import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadSettings } from '../../src/config/settings.js';
import { s3ClientConfig } from '../../src/storage/s3-settings.js';

const dir = mkdtempSync(join(tmpdir(), 's3-settings-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
writeFileSync(join(dir, 'local.yaml'), 's3:\n  region: eu-west-3\n');

describe('the S3 region', () => {
  it("is the config file's s3.region unless S3_REGION or AWS_REGION says otherwise, us-east-1 when none does", () => {
    expect(loadSettings({}, dir).s3.region).toBe('eu-west-3');
    expect(loadSettings({ AWS_REGION: 'ap-south-1' }, dir).s3.region).toBe('ap-south-1');
    expect(loadSettings({ AWS_REGION: 'ap-south-1', S3_REGION: 'us-west-2' }, dir).s3.region).toBe('us-west-2');
    const none = loadSettings({}, join(dir, 'missing'));
    expect(none.s3.region).toBeUndefined();
    expect(s3ClientConfig(none.s3).region).toBe('us-east-1');
  });
});
