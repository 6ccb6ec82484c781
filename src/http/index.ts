/**
 * HTTP: `serve`'s server (run API, S3 events, pages, queue dashboard, health, metrics) and a
 * worker's metrics server. The servers are loaded when one starts: a command that only checks
 * where it would listen loads no fastify, bull-board or page code.
 */

// Who may call an endpoint, and whether an address is this machine's only: checked before a server starts.
export { hasCredentials, isLoopback, type Credentials } from './auth.js';
export type { RunRoutesDeps } from './run-routes.js';

/** `serve`'s server and what it is built with: the run API as the deployment policy allows it, the run pages, the dashboard's path. */
export async function loadServeServer() {
  const [{ buildServer, closeHttp }, { checkSubmission, policedRuns }, { runPages }, { QUEUES_PATH }] = await Promise.all([
    import('./server.js'),
    import('./policed-runs.js'),
    import('./run-pages.js'),
    import('./dashboard.js'),
  ]);
  return { buildServer, closeHttp, checkSubmission, policedRuns, runPages, QUEUES_PATH };
}

/** A worker's metrics server (`worker --metrics-port`). */
export async function loadMetricsServer() {
  const { startMetricsServer } = await import('./metrics-server.js');
  return { startMetricsServer };
}
