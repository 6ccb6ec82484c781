/**
 * The composition root: the wiring commands share, and `serve` itself. Commands import it from
 * here; `serve`'s app is loaded only by `serve` (it holds the HTTP server, dashboards and metrics).
 */

// The service client a run's options ask for, and the bounds on a model's answers.
export { answerBounds, serviceClientFactory } from './service-clients.js';

// A submission's segment count checked before it is queued.
export { segmentBoundCheck } from './segment-bound-check.js';

// `serve`: loaded when it starts, so that no other command loads fastify, bull-board or prom-client.
export type { ServeOptions, Serving } from './serve-app.js';
export async function loadServe() {
  const { startServe } = await import('./serve-app.js');
  return { startServe };
}
