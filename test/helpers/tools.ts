import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/**
 * Programs from Debian's packages that some tests drive: `.ci/run` installs them, so CI runs every
 * such test; on a machine without one, its tests are skipped, saying which package brings it.
 */
function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function onPath(name: string): string | undefined {
  const dir = (process.env.PATH ?? '').split(delimiter).find((d) => d && executable(join(d, name)));
  return dir && join(dir, name);
}

/** Chromium for the browser test (Debian's `chromium`; CHROMIUM_PATH to use another). */
export const CHROMIUM = [process.env.CHROMIUM_PATH, '/usr/bin/chromium'].find((p): p is string => p !== undefined && executable(p));

/** `redis-server` and `redis-cli` (Debian's `redis-server`), which start a Redis Cluster of a test's own. */
export const REDIS_SERVER = onPath('redis-server');
export const REDIS_CLI = onPath('redis-cli');

/** `promtool` (Debian's `prometheus`), which checks the metrics exposition. */
export const PROMTOOL = onPath('promtool');

/** Says once, on stderr, why tests are skipped on this machine. */
export function noteMissing(what: string, pkg: string): void {
  process.stderr.write(`skipping ${what}: not installed here (apt-get install ${pkg}; .ci/run installs it)\n`);
}
