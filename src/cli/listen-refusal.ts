import { UsageError } from '../errors.js';

/** The codes of a listen the machine refuses: the port is taken, privileged, or the address is not this machine's. */
const REFUSED = new Set(['EADDRINUSE', 'EACCES', 'EADDRNOTAVAIL']);

/**
 * What a command that failed to listen on `host:port` throws: a usage error (exit 2) naming the
 * address, the reason and `advice` when the machine refused the address; any other failure as it is.
 */
export function listenRefusal(err: unknown, command: string, host: string, port: number, advice: string): unknown {
  const code = (err as { code?: unknown } | undefined)?.code;
  if (typeof code !== 'string' || !REFUSED.has(code)) return err;
  return new UsageError(`${command}: cannot listen on ${host}:${port} (${code}): ${advice}`, { cause: err });
}
