import { once } from 'node:events';
import { Agent, createServer, request, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { buffer } from 'node:stream/consumers';
import { afterAll, beforeAll } from 'vitest';

/** One request the proxy passed on, and the server's answer to it, byte for byte. */
export interface Exchange {
  method: string;
  /** The request's path and query, e.g. `/api/projects/mindsdb/models/home_rentals_model.2/predict`. */
  path: string;
  request: Buffer;
  status: number;
  contentType: string | undefined;
  answer: Buffer;
}

/**
 * A plain HTTP proxy on loopback in front of a real server: it passes every request on as it came
 * (method, path, headers, body) and every answer back as it came, keeping both. What a test reads
 * from it is what went over the wire, not what either end says it sent.
 */
export interface RecordingProxy {
  /** Its base URL, to give the client as --service. */
  url: string;
  /** Every exchange so far, in the order the answers came. */
  exchanges: Exchange[];
  /** The most requests it has had in flight at once, received and not yet answered. */
  peakInFlight(): number;
  close(): Promise<void>;
}

/** Headers that belong to one hop, not to the message: the proxy's own connections set them. */
const HOP_HEADERS = new Set(['connection', 'keep-alive', 'transfer-encoding', 'host', 'content-length']);

function endToEnd(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const kept: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined && !HOP_HEADERS.has(name)) kept[name] = value;
  return kept;
}

/**
 * Starts a RecordingProxy to `target` (a base URL such as `http://127.0.0.1:47334`) on a free port
 * of 127.0.0.1. It opens as many connections to the target as requests are in flight, so the
 * client's concurrency reaches the server unchanged. A failed exchange with the target resets the
 * client's connection, as the target failing would.
 */
export async function startRecordingProxy(target: string): Promise<RecordingProxy> {
  const upstream = new URL(target);
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
  const exchanges: Exchange[] = [];
  let inFlight = 0;
  let peak = 0;
  const server = createServer((req, res) => {
    peak = Math.max(peak, ++inFlight);
    // Counted out before the client can have its answer, so a request it sends in the slot freed is never counted with the one before.
    let out = false;
    const answered = () => {
      if (!out) inFlight--;
      out = true;
    };
    void (async () => {
      const sent = await buffer(req);
      const answer = request({
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        agent,
        headers: { ...endToEnd(req.headers), 'content-length': String(sent.length) },
      });
      answer.end(sent);
      const [upstreamRes] = (await once(answer, 'response')) as [IncomingMessage];
      const received = await buffer(upstreamRes);
      exchanges.push({
        method: req.method ?? '',
        path: req.url ?? '',
        request: sent,
        status: upstreamRes.statusCode ?? 0,
        contentType: upstreamRes.headers['content-type'],
        answer: received,
      });
      answered();
      res.writeHead(upstreamRes.statusCode ?? 502, { ...endToEnd(upstreamRes.headers), 'content-length': String(received.length) }).end(received);
    })().catch(() => {
      answered();
      res.destroy();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    exchanges,
    peakInFlight: () => peak,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
      agent.destroy();
    },
  };
}

/** A predict exchange read: the model path it went to, the rows sent (in either envelope), and the rows answered (on a 200). */
export interface PredictExchange {
  /** The model as the path names it, e.g. `home_rentals_model.2`. */
  model: string;
  sent: Record<string, unknown>[];
  status: number;
  /** The answer's rows on a 200; undefined for an error answer. */
  answered: Record<string, unknown>[] | undefined;
  /** The request body's size in bytes, as sent. */
  bytes: number;
}

const PREDICT_PATH = /^\/api\/projects\/[^/]+\/models\/([^/]+)\/predict$/;

/** The predict exchanges among `exchanges` (a proxy's, or a slice of them), read, in the same order. */
export function predictExchanges(exchanges: readonly Exchange[]): PredictExchange[] {
  return exchanges.flatMap((e) => {
    const model = PREDICT_PATH.exec(e.path)?.[1];
    if (e.method !== 'POST' || model === undefined) return [];
    const body = JSON.parse(e.request.toString('utf8')) as Record<string, unknown>[] | { data: Record<string, unknown>[] };
    const answered = e.status === 200 ? (JSON.parse(e.answer.toString('utf8')) as Record<string, unknown>[]) : undefined;
    return [{ model: decodeURIComponent(model), sent: Array.isArray(body) ? body : body.data, status: e.status, answered, bytes: e.request.length }];
  });
}

/**
 * A test file's RecordingProxy in front of `target`: started before the file's tests and closed
 * after them. What it answers stands for the proxy once started (reading it before throws).
 */
export function useRecordingProxy(target: string): RecordingProxy {
  let proxy: RecordingProxy | undefined;
  beforeAll(async () => {
    proxy = await startRecordingProxy(target);
  });
  afterAll(() => proxy?.close());
  const started = () => {
    if (!proxy) throw new Error('the recording proxy starts before the tests');
    return proxy;
  };
  return {
    get url() {
      return started().url;
    },
    get exchanges() {
      return started().exchanges;
    },
    peakInFlight: () => started().peakInFlight(),
    close: () => started().close(),
  };
}
