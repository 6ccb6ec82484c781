import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { referenceDocs, REFERENCE_DIR } from '../../scripts/reference-docs.js';

const root = path.resolve(import.meta.dirname, '../..');

describe('generated references under docs/reference/', () => {
  it('are what `npm run docs` writes from the code now', { timeout: 60_000 }, async () => {
    const generated = await referenceDocs(root);
    const stale: string[] = [];
    for (const [file, text] of generated) {
      let checkedIn: string | undefined;
      try {
        checkedIn = readFileSync(path.join(root, file), 'utf8');
      } catch {
        checkedIn = undefined;
      }
      if (checkedIn !== text) stale.push(file);
    }
    expect(stale, `stale or missing: ${stale.join(', ')}: run \`npm run docs\` and commit the result`).toEqual([]);
    const extra = readdirSync(path.join(root, REFERENCE_DIR))
      .map((name) => `${REFERENCE_DIR}/${name}`)
      .filter((file) => !generated.has(file));
    expect(extra, `not generated (remove them, or generate them in scripts/reference-docs.ts): ${extra.join(', ')}`).toEqual([]);
  });

  it('describe every command of the program', async () => {
    const cli = (await referenceDocs(root)).get(`${REFERENCE_DIR}/cli.md`)!;
    for (const command of ['score', 'worker', 'enqueue', 'status', 'serve', 'simulate', 'schedule sync']) {
      expect(cli).toContain(`batch-scorer ${command}\n`);
    }
    expect(cli).toContain('`--batch-size <rows>`');
  });
});
