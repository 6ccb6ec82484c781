// npm run docs: writes the references under docs/reference/ from the code (see reference-docs.ts).
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { referenceDocs, REFERENCE_DIR } from './reference-docs.js';

const root = path.resolve(import.meta.dirname, '..');
mkdirSync(path.join(root, REFERENCE_DIR), { recursive: true });
for (const [file, text] of await referenceDocs(root)) {
  writeFileSync(path.join(root, file), text);
  console.log(`wrote ${file}`);
}
