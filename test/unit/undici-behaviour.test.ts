// What the service client relies on of undici, through src/service/undici-parts.ts, checked
// against a real local HTTP server: an undici upgrade that changes any of it fails here, saying
// what in client.ts to look at again.
import { createServer, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo, Socket } from 'node:net';
import { setImmediate as immediate } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_POLICY } from '../../src/service/retry-policy.js';
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

// The retry policy (src/service/retry-policy.ts) knows failures by undici's error codes: a code
// renamed by an upgrade would turn a passing network fault into a failed run.
describe("undici's error codes, as the retry policy names them", () => {
  /** The code of the error a request to `at` fails with, through an Agent with `options`. */
  async function failureCode(at: string, options: ConstructorParameters<typeof Agent>[0] = {}): Promise<string> {
    const agent = new Agent(options);
    try {
      const res = await request.call(agent, { origin: at, path: '/', method: 'POST', body: '{}' });
      await res.body.arrayBuffer();
      throw new Error('the request did not fail');
    } catch (err) {
      return (err as { code: string }).code;
    } finally {
      await agent.close();
    }
  }

  /** A server answering each request as `answer` does, for the length of `body`. */
  async function withServer(answer: (res: ServerResponse, socket: Socket) => void, body: (at: string) => Promise<void>): Promise<void> {
    const misbehaving = createServer((req, res) => req.resume().on('end', () => answer(res, req.socket)));
    await new Promise<void>((resolve) => misbehaving.listen(0, '127.0.0.1', resolve));
    try {
      await body(`http://127.0.0.1:${(misbehaving.address() as AddressInfo).port}`);
    } finally {
      misbehaving.closeAllConnections();
      await new Promise<void>((resolve) => misbehaving.close(() => resolve()));
    }
  }

  const known = (code: string) => DEFAULT_RETRY_POLICY.errorCodes.includes(code);

  it('a socket closed before the answer: UND_ERR_SOCKET, retried', async () => {
    await withServer(
      (_res, socket) => socket.destroy(),
      async (at) => {
        const code = await failureCode(at);
        expect(code).toBe('UND_ERR_SOCKET');
        expect(known(code)).toBe(true);
      },
    );
  });

  it('no answer within headersTimeout, or a body that stalls past bodyTimeout: UND_ERR_HEADERS_TIMEOUT and UND_ERR_BODY_TIMEOUT, retried', async () => {
    await withServer(
      () => undefined,
      async (at) => {
        const code = await failureCode(at, { headersTimeout: 100 });
        expect(code).toBe('UND_ERR_HEADERS_TIMEOUT');
        expect(known(code)).toBe(true);
      },
    );
    await withServer(
      (res) => res.writeHead(200, { 'content-type': 'application/json' }).write('{"data":'),
      async (at) => {
        const code = await failureCode(at, { bodyTimeout: 100 });
        expect(code).toBe('UND_ERR_BODY_TIMEOUT');
        expect(known(code)).toBe(true);
      },
    );
  });

  it('nothing listening: ECONNREFUSED, which the policy counts as unreachable', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const at = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const code = await failureCode(at);
    expect(code).toBe('ECONNREFUSED');
    expect(DEFAULT_RETRY_POLICY.unreachableCodes).toContain(code);
  });
});
