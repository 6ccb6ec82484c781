import { readFileSync } from 'node:fs';

/** This tool's name and version, from package.json, for manifests and `--version`. */
export const TOOL = (() => {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { name: string; version: string };
  return { name: pkg.name, version: pkg.version };
})();
