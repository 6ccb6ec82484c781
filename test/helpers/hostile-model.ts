import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Answer } from '../../src/simulator/answer.js';
import { describeModel } from '../../src/simulator/describe.js';
import { predictAnswer, readPredictRows } from '../../src/simulator/predict.js';
import { isAnswer, lookupModel } from '../../src/simulator/server.js';

/** What a hostile model answers instead of the simulator: bytes as they are made (no Content-Length), or text. */
export type HostileBody = Iterable<Buffer> | AsyncIterable<Buffer> | string;

/**
 * Chooses the answer to one request: given the simulator's own answer (its JSON text) and the
 * request's number among those of its operation (1 is the first), a hostile body, or undefined
 * for the simulator's answer as it is.
 */
export type Hostility = (normal: string, number: number) => HostileBody | undefined;

/** What the hostile model was asked and what it sent. */
export interface HostileModel {
  /** Its base URL, for --service. */
  url: string;
  /** Predict requests received. */
  predicts: number;
  /** Predict requests whose body had been received before (the same batch again: a retry). */
  repeatedPredicts: number;
  /** Bytes written to clients, hostile ones included, as far as they read them. */
  bytesWritten(): number;
  close(): Promise<void>;
}

/**
 * A Model Query Service as a real HTTP server that answers as the simulator does (its models, its
 * describe, its row id echo), except where `predict` or `describe` chooses a hostile answer: a
 * stream made by a generator as the client reads it (a gigabyte of white space is never held), or
 * a text, answered with `status` (200 unless given). A client that stops reading closes the
 * stream; the generator is then left.
 */
export async function startHostileModel(hostile: { predict?: Hostility; describe?: Hostility; status?: number }): Promise<HostileModel> {
  const seen = new Set<string>();
  let describes = 0;
  const model: Omit<HostileModel, 'url' | 'close' | 'bytesWritten'> = { predicts: 0, repeatedPredicts: 0 };
  const server: Server = createServer((req, res) => {
    void answer(req, res).catch(() => res.destroy());
  });
  async function answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = Buffer.concat(await req.toArray());
    const route = /\/models\/([^/]+)\/(predict|describe)$/.exec(req.url ?? '');
    const found = lookupModel('mindsdb', route?.[1] ?? '', false);
    if (!route || isAnswer(found)) return send(res, isAnswer(found) ? found : { status: 404, contentType: 'text/plain', body: 'not here' });
    const body = JSON.parse(raw.toString('utf8')) as unknown;
    let normal: Answer;
    let choice: HostileBody | undefined;
    if (route[2] === 'describe') {
      normal = describeModel(found.model, found.version, body, false);
      choice = hostile.describe?.(normal.body, ++describes);
    } else {
      model.predicts++;
      const digest = createHash('sha256').update(raw).digest('hex');
      if (seen.has(digest)) model.repeatedPredicts++;
      seen.add(digest);
      const rows = readPredictRows(body, 'data');
      normal = isAnswer(rows) ? rows : predictAnswer(found.model, found.version, rows, '__mindsdb_row_id');
      choice = hostile.predict?.(normal.body, model.predicts);
    }
    if (choice === undefined) return send(res, normal);
    const status = hostile.status ?? 200;
    if (typeof choice === 'string') return send(res, { status, contentType: 'application/json', body: choice });
    res.writeHead(status, { 'content-type': 'application/json' });
    // A client that stops reading ends the pipeline with an error: what it was sent is counted.
    await pipeline(Readable.from(choice), res).catch(() => undefined);
  }
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const sockets = new Set<Socket>();
  let closedWrote = 0;
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => {
      sockets.delete(socket);
      closedWrote += socket.bytesWritten;
    });
  });
  return Object.assign(model, {
    url: `http://127.0.0.1:${port}`,
    bytesWritten: () => [...sockets].reduce((sum, socket) => sum + socket.bytesWritten, closedWrote),
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  });
}

function send(res: ServerResponse, answer: Answer): void {
  res.writeHead(answer.status, { 'content-type': answer.contentType, 'content-length': Buffer.byteLength(answer.body) }).end(answer.body);
}

/** `bytes` bytes of `character` (white space by default), made a chunk at a time as they are read. */
export function* filler(bytes: number, character = ' '): Generator<Buffer> {
  const chunk = Buffer.alloc(64 * 1024, character);
  for (let left = bytes; left > 0; left -= chunk.length) yield left >= chunk.length ? chunk : chunk.subarray(0, left);
}
