import type { S3ClientConfig } from '@aws-sdk/client-s3';
import { BatchScorerError } from '../errors.js';

/**
 * How to reach S3 or an S3-compatible server (MinIO, s3rver). Kept apart from the SDK's own
 * config so settings can come from env, config files or tests without touching the client.
 * Without `credentials` the SDK's default chain is used (AWS_ACCESS_KEY_ID, profiles, IMDS...).
 */
export interface S3Settings {
  endpoint?: string;
  region?: string;
  forcePathStyle?: boolean;
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
}

function configError(message: string): BatchScorerError {
  return new BatchScorerError('E_CONFIG', message);
}

/**
 * S3_REGION (else AWS_REGION), S3_ENDPOINT and S3_FORCE_PATH_STYLE, each only when set: a region
 * defaulted here would hide a config file's `s3.region` (s3ClientConfig supplies us-east-1 last).
 */
export function s3SettingsFromEnv(env: NodeJS.ProcessEnv = process.env): S3Settings {
  const settings: S3Settings = {};
  const region = env.S3_REGION || env.AWS_REGION;
  if (region) settings.region = region;
  const endpoint = env.S3_ENDPOINT;
  if (endpoint) {
    if (!URL.canParse(endpoint) || !/^https?:$/.test(new URL(endpoint).protocol)) {
      throw configError(`S3_ENDPOINT must be an http(s) URL such as http://127.0.0.1:9000 (got '${endpoint}')`);
    }
    settings.endpoint = endpoint;
  }
  const pathStyle = env.S3_FORCE_PATH_STYLE?.trim().toLowerCase();
  if (pathStyle) {
    if (!['true', '1', 'false', '0'].includes(pathStyle)) {
      throw configError(`S3_FORCE_PATH_STYLE must be true, false, 1 or 0 (got '${env.S3_FORCE_PATH_STYLE}')`);
    }
    settings.forcePathStyle = pathStyle === 'true' || pathStyle === '1';
  }
  return settings;
}

/**
 * The SDK client config for these settings. Checksums only when an operation requires them:
 * the SDK's default (CRC32 on every upload, validation on every download) breaks on s3rver and
 * some MinIO versions.
 */
export function s3ClientConfig(settings: S3Settings): S3ClientConfig {
  return {
    region: settings.region ?? 'us-east-1',
    ...(settings.endpoint !== undefined && { endpoint: settings.endpoint }),
    ...(settings.forcePathStyle !== undefined && { forcePathStyle: settings.forcePathStyle }),
    ...(settings.credentials !== undefined && { credentials: settings.credentials }),
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  };
}
