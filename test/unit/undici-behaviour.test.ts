// What the service client relies on of undici, through src/service/undici-parts.ts, checked
// against a real local HTTP server: an undici upgrade that changes any of it fails here, saying
// what in client.ts to look at again.
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo, Socket } from 'node:net';
import { setImmediate as immediate } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent, buildConnector, request, type UndiciAgent } from '../../src/service/undici-parts.js';

const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
});
let origin = '';
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** An Agent as the client makes one, keeping the sockets it opens. */
function agentKeepingSockets(connections: number): { agent: UndiciAgent; sockets: Socket[] } {
  const sockets: Socket[] = [];
  const connector = buildConnector({});
  const agent = new Agent({
    connections,
    keepAliveTimeout: 30_000,
    connect: (options, callback) =>
      connector(options, (...answer: Parameters<typeof callback>) => {
        if (answer[1]) sockets.push(answer[1]);
        callback(...answer);
      }),
  });
  return { agent, sockets };
}

/** A request as the client sends one (a POST predict, or a GET describe with a body), its answer read whole. */
function send(agent: UndiciAgent, method: 'GET' | 'POST'): Promise<ArrayBuffer> {
  return request
    .call(agent, { origin, path: '/api/projects/p/models/m/predict', method, body: '{"data":[]}', headers: { 'content-type': 'application/json' } })
    .then((res) => res.body.arrayBuffer());
}

describe('undici, as the service client uses it', () => {
  it("is undici's own Agent, buildConnector and request, required by path", () => {
    const undici = createRequire(import.meta.url)('undici') as Record<string, unknown>;
    expect(Agent, 'undici/lib/dispatcher/agent.js is no longer undici.Agent: fix the paths in src/service/undici-parts.ts').toBe(undici.Agent);
    expect(buildConnector, 'undici/lib/core/connect.js is no longer undici.buildConnector: fix src/service/undici-parts.ts').toBe(undici.buildConnector);
    expect(request, 'undici/lib/api/api-request.js is gone: fix src/service/undici-parts.ts').toBeTypeOf('function');
  });

  it('writes a request to a kept-alive socket from an immediate of its own: within the two the client waits, not at once', async () => {
    const { agent, sockets } = agentKeepingSockets(1);
    try {
      await send(agent, 'POST');
      expect(sockets).toHaveLength(1);
      const [socket] = sockets;
      for (let round = 0; round < 3; round++) {
        const before = socket.bytesWritten;
        const answer = send(agent, 'POST');
        await Promise.resolve();
        expect(
          socket.bytesWritten,
          'undici now writes a request at once (or in a microtask): the two setImmediates before an answer is read in src/service/client.ts wait for nothing; measure without them',
        ).toBe(before);
        await immediate();
        await immediate();
        expect(
          socket.bytesWritten,
          'undici no longer writes a request within two immediates of its dispatch: the setImmediates in src/service/client.ts no longer let it go out before an answer is parsed; tune them again',
        ).toBeGreaterThan(before);
        await answer;
      }
      expect(sockets, 'one kept-alive connection').toHaveLength(1);
    } finally {
      await agent.close();
    }
  });

  it('after a GET with a body, opens a connection for every later request of its pool: why describe has a pool of its own', async () => {
    const predicts = agentKeepingSockets(4);
    const mixed = agentKeepingSockets(4);
    try {
      // One after another, POSTs take the connection kept alive, or a second one while undici has
      // not yet freed the first (it does so in an immediate): never one per request.
      for (let i = 0; i < 5; i++) await send(predicts.agent, 'POST');
      expect(predicts.sockets.length, 'POSTs alone reuse their kept-alive connections').toBeLessThanOrEqual(2);
      await send(mixed.agent, 'GET');
      for (let i = 0; i < 4; i++) await send(mixed.agent, 'POST');
      expect(
        mixed.sockets.length,
        "undici now reuses connections after a GET with a body: ServiceClient's separate describeAgent (src/service/client.ts) may go",
      ).toBe(5);
    } finally {
      await Promise.all([predicts.agent.close(), mixed.agent.close()]);
    }
  });
});
