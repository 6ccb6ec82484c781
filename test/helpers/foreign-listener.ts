import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request a listener received, whole. */
export interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * A real HTTP server on loopback standing for a host a run must never reach (or one it may, to see
 * what reaches it): it records every connection and request, and answers each request 404, as a
 * host that is no Model Query Service would.
 */
export interface ForeignListener {
  /** Its base URL, e.g. `http://127.0.0.1:40123`. */
  url: string;
  /** Every request received, in order. */
  requests: RecordedRequest[];
  /** TCP connections accepted, whether or not a request came over them. */
  connections(): number;
  close(): Promise<void>;
}

/**
 * How a listener answers a request once it is recorded: a status (with a short text body), a
 * status with headers of its own (a redirect's `location`), or `hang` to never answer (a server
 * that accepted the request and stalls).
 */
export type Answer = (request: RecordedRequest) => number | { status: number; headers: Record<string, string> } | 'hang';

/** Starts a ForeignListener on a free port of 127.0.0.1; it answers 404 unless `answer` says otherwise. */
export async function startForeignListener(answer: Answer = () => 404): Promise<ForeignListener> {
  const requests: RecordedRequest[] = [];
  let connections = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      requests.push(request);
      const answered = answer(request);
      if (answered === 'hang') return;
      const { status, headers } = typeof answered === 'number' ? { status: answered, headers: {} } : answered;
      res.writeHead(status, { 'content-type': 'text/plain', ...headers }).end(status === 404 ? 'not here' : String(status));
    });
  });
  server.on('connection', () => connections++);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    connections: () => connections,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
