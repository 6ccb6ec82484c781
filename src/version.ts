import { readFileSync } from 'node:fs';

/**
 * The package's own folder (package.json, schemas/, assets/). This module lies one folder below it
 * both as compiled (dist/version.js) and as bundled into the command (a dist/chunk-*.js file).
 */
export const PACKAGE_ROOT = new URL('../', import.meta.url);

const pkg = JSON.parse(readFileSync(new URL('package.json', PACKAGE_ROOT), 'utf8')) as { name: string; version: string; license: string };

/** This tool's name and version, from package.json, for manifests and `--version`. */
export const TOOL = { name: pkg.name, version: pkg.version };

/** This tool's license, an SPDX id from package.json, which the API's document names. */
export const TOOL_LICENSE = pkg.license;
