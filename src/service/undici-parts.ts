import { createRequire } from 'node:module';
import type { Agent as UndiciAgent, buildConnector as UndiciConnector, Dispatcher } from 'undici';

// The one place undici is loaded: the service client takes it from here. What the client relies on
// of undici's behaviour (when a request reaches its socket, which pool a describe needs, the error
// codes the retry policy names) is pinned
// by test/unit/undici-behaviour.test.ts, which fails, saying which, when an upgrade changes it.
//
// undici's parts, not its index: the index loads all of undici (fetch, WebSocket, caches, mocks),
// 5.7 MiB of live heap that every full collection marks again, a quarter of a `score`'s live heap
// on Node 24, where a CPU-bound run's full collections follow each other (measured: 6.45 MiB for
// the client with the index, 3.2 without). The parts are what `undici.request` and `Agent` are;
// undici's package.json has no `exports`, so its files can be required by path.
const requireUndici = createRequire(import.meta.url);

/** undici's `Agent`: a pool of keep-alive connections per origin. */
export const Agent = requireUndici('undici/lib/dispatcher/agent.js') as typeof UndiciAgent;
/** undici's `buildConnector`: opens the sockets an Agent uses. */
export const buildConnector = requireUndici('undici/lib/core/connect.js') as typeof UndiciConnector;
/** undici's `request`, called with a dispatcher as `this`, as `undici.request(url, { dispatcher })` calls it. */
export const request = requireUndici('undici/lib/api/api-request.js') as Dispatcher['request'];

export type { UndiciAgent, UndiciConnector };
