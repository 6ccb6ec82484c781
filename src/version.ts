import { readFileSync } from 'node:fs';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { name: string; version: string; license: string };

/** This tool's name and version, from package.json, for manifests and `--version`. */
export const TOOL = { name: pkg.name, version: pkg.version };

/** This tool's license, an SPDX id from package.json, which the API's document names. */
export const TOOL_LICENSE = pkg.license;
