import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { LIMITS } from '../../src/config/limits.js';
import { ENV_SETTINGS } from '../../src/config/settings-catalogue.js';

const src = path.resolve(import.meta.dirname, '../../src');

/**
 * The environment variables the source reads: `env.X`, `env['X']`, `process.env.X`, and names
 * handed with the environment to a helper that reads them (`secretFromEnv(env, 'API_TOKEN')`).
 * Line comments are left out: they may name a variable without reading it.
 */
function variablesRead(): Map<string, string[]> {
  const read = new Map<string, string[]>();
  const patterns = [/\benv\.([A-Z][A-Z0-9_]*)\b/g, /\benv\[\s*['"]([A-Z][A-Z0-9_]*)['"]\s*\]/g, /\benv,\s*['"]([A-Z][A-Z0-9_]*)['"]/g];
  for (const entry of readdirSync(src, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
    const file = path.join(entry.parentPath, entry.name);
    const text = readFileSync(file, 'utf8')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/(^|\s)\/\/.*$/gm, '$1');
    for (const pattern of patterns) {
      for (const [, name] of text.matchAll(pattern)) read.set(name, [...(read.get(name) ?? []), path.relative(src, file)]);
    }
  }
  // limitsFromEnv reads each bound's variable by its name in LIMITS.
  for (const { setting } of Object.values(LIMITS)) read.set(setting, [...(read.get(setting) ?? []), 'config/limits.ts']);
  return read;
}

describe('the environment settings catalogue', () => {
  const catalogued = new Set(ENV_SETTINGS.map((s) => s.name));
  const read = variablesRead();

  it('names every environment variable the source reads', () => {
    const missing = [...read].filter(([name]) => !catalogued.has(name)).map(([name, files]) => `${name} (${[...new Set(files)].join(', ')})`);
    expect(missing, 'add these to ENV_SETTINGS in src/config/settings-catalogue.ts, then run `npm run docs`').toEqual([]);
  });

  it('names no variable the source does not read', () => {
    const unread = [...catalogued].filter((name) => !read.has(name));
    expect(unread, 'remove these from ENV_SETTINGS in src/config/settings-catalogue.ts, then run `npm run docs`').toEqual([]);
  });

  it('names each variable once, secrets without a default', () => {
    expect(ENV_SETTINGS.length).toBe(catalogued.size);
    expect(ENV_SETTINGS.filter((s) => s.secret && s.default !== undefined).map((s) => s.name)).toEqual([]);
  });
});
