/**
 * The defaults of batch-scorer's processes, in one table: the shutdown timeouts, addresses and
 * log level each command starts with unless a flag or variable says otherwise. Every command
 * reads its defaults here (and the reference docs show them from the flags built on them), so
 * that one value is never written twice with two meanings. Sizes peers control are limits
 * (limits.ts); what a run does is its options (run-options.ts).
 */
export const PROCESS_DEFAULTS = {
  /** `score --shutdown-timeout`: how long a signalled run may take to stop (its requests cancelled, its failure recorded) before the process exits anyway. */
  scoreShutdownTimeoutMs: 10_000,
  /** `serve --shutdown-timeout`: how long requests in flight may take to finish on SIGTERM; run API calls take milliseconds. */
  serveShutdownTimeoutMs: 10_000,
  /** `worker --shutdown-timeout`: how long SIGTERM waits for in-flight segments before handing them back; a segment takes seconds. */
  workerShutdownTimeoutMs: 30_000,
  /** `watch` and `simulate`, which have no flag for it: how long stopping (a poll pass, the simulator's connections) may take. */
  stopTimeoutMs: 10_000,
  /**
   * Past a command's own shutdown timeout, how long the rest of its shutdown (handing segments
   * back, closing queue connections, draining lineage and webhooks, flushing the log) may take
   * before the process exits anyway: a step that hangs never keeps a stopped process alive.
   */
  shutdownMarginMs: 10_000,
  /** `serve --host`: this machine only; beyond it only with credentials and a deployment policy. */
  serveHost: '127.0.0.1',
  /** PORT: where `serve` listens unless `--port` says otherwise. */
  servePort: 8080,
  /** `worker --metrics-host`: this machine only; beyond it only with API_TOKEN. */
  metricsHost: '127.0.0.1',
  /** `simulate --host`. */
  simulatorHost: '127.0.0.1',
  /** `simulate --port`: the port of a local MindsDB, so that MODEL_SERVICE_URL's default reaches it. */
  simulatorPort: 47334,
  /** LOG_LEVEL unset and no `log.level` in config/*.yaml. */
  logLevel: 'info',
  /** LOG_LEVEL unset for a `score` drawing a progress bar on a terminal: JSON log lines would garble it. */
  progressBarLogLevel: 'warn',
  /** `watch --interval`: seconds between two polls. */
  watchIntervalS: 30,
} as const;

/**
 * LOG_LEVEL as set, or undefined when it is not: the one place the variable is read (settings,
 * the logger and the error report ask here).
 */
export function envLogLevel(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return env.LOG_LEVEL || undefined;
}
