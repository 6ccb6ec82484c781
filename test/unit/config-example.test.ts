// config/example.yaml.sample documents every key of the settings file: commented out, it changes
// nothing; with the first "#" of each line deleted (as its header says), it is a settings file
// that loadSettings reads, naming every key the schema has, each with its default where it has one.
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { z } from 'zod';
import { runOptionsSchema } from '../../src/config/run-options.js';
import { configFileSchema, loadSettings } from '../../src/config/settings.js';

const sample = fileURLToPath(new URL('../../config/example.yaml.sample', import.meta.url));
const dirs: string[] = [];
afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/** A config folder holding `text` as its one settings file. */
function configDir(text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'config-example-'));
  dirs.push(dir);
  writeFileSync(join(dir, 'local.yaml'), text);
  return dir;
}

/** The sample with the first "#" of each line deleted, as its header tells users to. */
const uncommented = readFileSync(sample, 'utf8')
  .split('\n')
  .map((line) => line.replace(/^#/, ''))
  .join('\n');

describe('config/example.yaml.sample', () => {
  it('is not read where it ships (not *.yaml), and changes nothing as a settings file while commented out', () => {
    const shipped = mkdtempSync(join(tmpdir(), 'config-example-'));
    dirs.push(shipped);
    copyFileSync(sample, join(shipped, 'example.yaml.sample'));
    const none = loadSettings({}, configDir(''));
    expect(loadSettings({}, shipped)).toEqual(none);
    expect(loadSettings({}, configDir(readFileSync(sample, 'utf8')))).toEqual(none);
  });

  it('uncommented, is read by loadSettings, the files winning over built-in defaults', () => {
    const settings = loadSettings({}, configDir(uncommented));
    expect(settings.runDefaults).toMatchObject({ batchSize: 1000, priority: 'normal', keepColumns: ['sqft', 'location'] });
    expect(settings.redisUrl).toBe('redis://127.0.0.1:6379');
    expect(settings.queuePrefix).toBe('{batch-scorer}');
    expect(settings.s3).toMatchObject({ endpoint: 'http://127.0.0.1:9000', forcePathStyle: true });
    expect(settings.logLevel).toBe('info');
    expect(settings.retention).toEqual({ olderThanMs: 30 * 86_400_000, keep: 10, jobs: 1000 });
  });

  it('uncommented, names every key of the settings schema, each set to its default where it has one', () => {
    const doc = configFileSchema.parse(parse(uncommented));
    const sections = configFileSchema.shape;
    const keysOf = (section: z.ZodOptional<z.ZodObject>) => Object.keys(section.unwrap().shape).sort();
    expect(Object.keys(doc).sort()).toEqual(Object.keys(sections).sort());
    expect(Object.keys(doc.run ?? {}).sort()).toEqual(keysOf(sections.run));
    expect(Object.keys(doc.redis ?? {}).sort()).toEqual(keysOf(sections.redis));
    expect(Object.keys(doc.s3 ?? {}).sort()).toEqual(keysOf(sections.s3));
    expect(Object.keys(doc.log ?? {}).sort()).toEqual(keysOf(sections.log));

    const written = parse(uncommented) as { run: Record<string, unknown> };
    for (const [key, schema] of Object.entries(runOptionsSchema.shape)) {
      if (!(schema instanceof z.ZodDefault)) continue;
      expect(schema.parse(written.run[key]), `run.${key}: its default`).toEqual(schema.parse(undefined));
    }
  });
});
