import { type DeploymentPolicy, openSettings } from '../config/index.js';
import { type Credentials, hasCredentials, isLoopback } from '../http/index.js';

/**
 * Why `serve` must not listen on `host`, or undefined when it may. Beyond loopback anyone who
 * reaches the port is a caller: without credentials anyone may enqueue runs, and without the
 * whole deployment policy a caller with the token may make runs read, write and call anything
 * this process and its workers can. `--insecure` is the user insisting.
 */
export function exposureRefusal(host: string, credentials: Credentials, policy: DeploymentPolicy, insecure: boolean): string | undefined {
  if (insecure || isLoopback(host)) return undefined;
  if (!hasCredentials(credentials)) {
    return `--host ${host} is reachable beyond this machine, and no credentials are set: set API_TOKEN (and DASHBOARD_USER/DASHBOARD_PASSWORD for the dashboard), or pass --insecure to serve without them`;
  }
  const open = openSettings(policy);
  if (open.length === 0) return undefined;
  return `--host ${host} is reachable beyond this machine, and ${open.join(', ')} ${open.length === 1 ? 'is' : 'are'} not set, so a caller with the token could make runs read, write or call anything this machine's processes can reach: set ${open.length === 1 ? 'it' : 'them'} (see docs/deploying.md), or pass --insecure to serve without a policy`;
}

/** What runs may do under a policy that leaves these settings unset: the warning `serve` logs once at start. */
export function openPolicyWarning(open: readonly string[]): string {
  const reach: Record<string, string> = {
    INPUT_ROOTS: 'read any file or object',
    OUTPUT_ROOTS: 'write and delete anywhere',
    SERVICE_URLS: 'send rows to any service',
  };
  const may = open.map((name) => reach[name]);
  const list = may.length > 1 ? `${may.slice(0, -1).join(', ')} and ${may.at(-1)}` : may[0];
  return `${open.join(', ')} not set: runs submitted here may ${list}, as far as this process and the workers can reach`;
}
