import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { silentLogger, type Logger } from '../log.js';
import { apiNotFound, badRequest, methodNotAllowed, problem, uncaught, unsupportedMediaType, werkzeugPage, type Answer } from './answer.js';
import { describeModel } from './describe.js';
import { faultDrawer, type Fault } from './faults.js';
import { PROJECT_NAME, resolveModel } from './models.js';
import { simulatorOptionsSchema, type SimulatorOptions } from './options.js';
import { predictAnswer, readPredictRows } from './predict.js';
import { mulberry32 } from './prng.js';

/** Live counters, read by tests and benchmarks to check what the client really sent. */
export interface SimulatorStats {
  /** Predict requests routed (authorized, path and method matched), whatever their outcome. */
  predictRequests: number;
  /** When the last of them arrived (ms since the epoch; 0 before the first): what a client sent after a moment. */
  lastPredictAt: number;
  /** Input rows of predict requests answered 200. */
  predictRows: number;
  /** Input rows of every predict request read, whatever its outcome (a fault, a refusal): what clients sent, retries included. */
  predictRowsReceived: number;
  /** Describe requests routed, whatever their outcome. */
  describeRequests: number;
  /** Simulated faults served, by kind. */
  faults: { error500: number; rateLimited: number; resets: number; hangs: number; gateway: number; shortAnswers: number };
  /** Predict requests refused (429) because `capacity` were already being worked on. */
  overCapacity: number;
  /** The most predict requests the engine worked on at once. */
  peakInFlight: number;
}

export interface Simulator {
  /** Base URL for clients: `http://host:port` plus the base path. */
  url: string;
  port: number;
  stats: SimulatorStats;
  /** Stops listening and destroys every connection, hanging ones included. */
  close(): Promise<void>;
}

const ROUTE = /^\/api\/projects\/([^/]+)\/models\/([^/]+)\/(predict|describe)$/;

const GATEWAY_HTML = '<html><body><h1>503 Service Unavailable</h1></body></html>';

/**
 * Starts the Model Query Service simulator (see docs of `simulatorOptionsSchema`). The logger is a
 * separate argument because it is not a setting a flag or file can carry.
 */
export async function createSimulator(options: SimulatorOptions = {}, logger: Logger = silentLogger): Promise<Simulator> {
  const opts = simulatorOptionsSchema.parse(options);
  const stats: SimulatorStats = {
    predictRequests: 0,
    lastPredictAt: 0,
    predictRows: 0,
    predictRowsReceived: 0,
    describeRequests: 0,
    faults: { error500: 0, rateLimited: 0, resets: 0, hangs: 0, gateway: 0, shortAnswers: 0 },
    overCapacity: 0,
    peakInFlight: 0,
  };
  const closing = new AbortController();
  const handler = new SimulatorHandler(opts, stats, logger, closing.signal);

  const server = createServer({ keepAlive: true }, (req, res) => {
    handler.handle(req, res).catch((err: unknown) => {
      if (res.headersSent || req.socket.destroyed) return;
      logger.error({ err }, 'simulator request failed');
      send(res, uncaught('InternalServerError', 'unexpected simulator failure'));
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : opts.port;
  const host = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
  const url = `http://${host}:${port}${opts.basePath}`;
  logger.info({ url, envelope: opts.envelope }, 'simulator listening');

  return {
    url,
    port,
    stats,
    close: () =>
      new Promise<void>((resolve) => {
        closing.abort();
        server.close(() => resolve());
        server.closeAllConnections();
        logger.info({ url }, 'simulator closed');
      }),
  };
}

/** The simulator's settings, defaults filled in. */
type SimulatorSettings = ReturnType<typeof simulatorOptionsSchema.parse>;

/** A request's route: the project, model and operation its path names. */
interface Route {
  project: string;
  model: string;
  operation: 'predict' | 'describe';
}

/**
 * Answers a simulator's requests as the reference server does, with the faults, latency and
 * capacity its settings ask for, counting them in `stats`. One per simulator, since it holds what
 * they share: the predict requests in flight and the fault and jitter streams.
 */
class SimulatorHandler {
  private inFlight = 0;
  private readonly drawFault: () => Fault | undefined;
  // Jitter has its own stream so the fault sequence does not depend on the latency settings.
  private readonly jitter: () => number;
  private readonly expectedAuth: string | undefined;

  /** `closing` is aborted when the simulator closes: a predict waiting out its latency then gives up. */
  constructor(
    private readonly opts: SimulatorSettings,
    private readonly stats: SimulatorStats,
    private readonly logger: Logger,
    private readonly closing: AbortSignal,
  ) {
    this.drawFault = faultDrawer(opts, opts.seed);
    this.jitter = mulberry32(opts.seed ^ 0x5bd1e995);
    this.expectedAuth = opts.token === undefined ? undefined : `Bearer ${opts.token}`;
  }

  /** Answers a request: the token first, then its route, then the operation it names. */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (this.expectedAuth !== undefined && req.headers.authorization !== this.expectedAuth) {
      return send(res, problem(401, 'Unauthorized', 'Authorization is required to complete the request'));
    }
    const route = this.matchRoute(req);
    if (isAnswer(route)) {
      await readRaw(req);
      return send(res, route);
    }
    return route.operation === 'describe' ? this.describe(req, res, route) : this.predict(req, res, route);
  }

  private async describe(req: IncomingMessage, res: ServerResponse, { project, model: modelSegment }: Route): Promise<void> {
    this.stats.describeRequests++;
    const raw = await readRaw(req);
    // As the reference server: the project and model first, then the body.
    const found = lookupModel(project, modelSegment, this.retrained(), 'describe');
    if (isAnswer(found)) return send(res, found);
    const body = parseJson(req, raw);
    if (isAnswer(body)) return send(res, body);
    return send(res, describeModel(found.model, found.version, body.value, this.opts.legacyDescribe, this.opts.engine));
  }

  private async predict(req: IncomingMessage, res: ServerResponse, { project, model: modelSegment }: Route): Promise<void> {
    const { opts, stats } = this;
    stats.predictRequests++;
    stats.lastPredictAt = Date.now();
    const arrived = performance.now();
    const received = this.requestRows(req, await readRaw(req));
    if (!isAnswer(received)) stats.predictRowsReceived += received.length;
    const fault = this.drawFault();
    if (fault) this.logger.debug({ fault, url: req.url }, 'simulated fault');
    if (this.servedFault(req, res, fault)) return;

    if (opts.capacity > 0 && this.inFlight >= opts.capacity) {
      stats.overCapacity++;
      return send(res, { ...problem(429, 'Too Many Requests', 'all engine threads are busy'), headers: { 'retry-after': String(opts.retryAfterSeconds) } });
    }
    this.inFlight++;
    stats.peakInFlight = Math.max(stats.peakInFlight, this.inFlight);
    let engine: { answer: Answer; rows: number };
    try {
      engine = this.engineAnswer(received, project, modelSegment, fault === 'shortAnswer');
      // The latency is the time to answer, counted from the request's arrival: the work above is
      // part of it, so a client at concurrency C meets C x batch / latency rows/s at best.
      const latency = opts.latencyMs + (opts.latencyJitterMs > 0 ? this.jitter() * opts.latencyJitterMs : 0);
      // A timer counts from the event loop's cached time, which can lag the clock by a millisecond:
      // it may fire that much early, and the answer must never come before its latency.
      for (let left = latency - (performance.now() - arrived); left > 0; left = latency - (performance.now() - arrived)) {
        await sleep(left, undefined, { signal: this.closing });
      }
    } catch {
      return; // closing: the connection is being destroyed anyway
    } finally {
      this.inFlight--;
    }
    if (fault === 'error500') {
      stats.faults.error500++;
      return send(res, uncaught('InternalServerError', 'simulated failure'));
    }
    const { answer, rows } = engine;
    if (answer.status === 200) stats.predictRows += rows;
    if (answer.status === 200 && fault === 'shortAnswer') stats.faults.shortAnswers++;
    return send(res, answer);
  }

  /** Serves a fault that takes the place of the engine's answer; answers whether `fault` was one. */
  private servedFault(req: IncomingMessage, res: ServerResponse, fault: Fault | undefined): boolean {
    const { faults } = this.stats;
    switch (fault) {
      case 'reset':
        faults.resets++;
        req.socket.resetAndDestroy();
        return true;
      case 'hang':
        // Never answered: the socket stays open until the client gives up or close() runs.
        faults.hangs++;
        return true;
      case 'rateLimited':
        faults.rateLimited++;
        send(res, {
          ...problem(429, 'Too Many Requests', 'simulated rate limit'),
          headers: { 'retry-after': String(this.opts.retryAfterSeconds) },
        });
        return true;
      case 'gateway':
        faults.gateway++;
        send(res, { status: 503, contentType: 'text/html', body: GATEWAY_HTML });
        return true;
    }
    return false;
  }

  /** Whether the model has been retrained since the simulator started: past `retrainAfterPredicts` predict requests. */
  private retrained(): boolean {
    return this.opts.retrainAfterPredicts > 0 && this.stats.predictRequests > this.opts.retrainAfterPredicts;
  }

  /** A predict body's rows, or the answer the server gives a body it cannot read. */
  private requestRows(req: IncomingMessage, raw: Buffer): ReturnType<typeof readPredictRows> {
    const body = parseJson(req, raw);
    return isAnswer(body) ? body : readPredictRows(body.value, this.opts.envelope);
  }

  /**
   * What the server answers a predict body's rows with (their count, for the stats), before any
   * fault is applied: as the reference server, the project and model are looked up before the body is read.
   */
  private engineAnswer(rows: ReturnType<typeof readPredictRows>, project: string, modelSegment: string, short: boolean): { answer: Answer; rows: number } {
    const found = lookupModel(project, modelSegment, this.retrained(), 'predict');
    if (isAnswer(found)) return { answer: found, rows: 0 };
    if (isAnswer(rows)) return { answer: rows, rows: 0 };
    return {
      answer: predictAnswer(found.model, found.version, rows, this.opts.rowIdMember, short, this.opts.engine, this.opts.engineErrors),
      rows: rows.length,
    };
  }

  /**
   * The route a request names, or what the reference server answers a request no route serves:
   * outside `/api/`, Werkzeug's HTML page (404 for a GET, which the server's catch-all GET route
   * would serve from its web UI, 405 otherwise); under it, a GET gets the catch-all's 404 (even on
   * predict), another method on a route the 405 of the API, anything else Werkzeug's 405.
   */
  private matchRoute(req: IncomingMessage): Route | Answer {
    const { basePath } = this.opts;
    const path = (req.url ?? '/').split('?', 1)[0];
    const get = req.method === 'GET' || req.method === 'HEAD';
    const api = path.startsWith(basePath) ? path.slice(basePath.length) : undefined;
    if (api === undefined || !api.startsWith('/api/')) return werkzeugPage(get ? 404 : 405);
    const match = ROUTE.exec(api);
    if (!match) return get ? apiNotFound() : werkzeugPage(405);
    const operation = match[3] as 'predict' | 'describe';
    if (req.method !== (operation === 'predict' ? 'POST' : 'GET')) return get ? apiNotFound() : methodNotAllowed;
    try {
      return { project: decodeURIComponent(match[1]), model: decodeURIComponent(match[2]), operation };
    } catch {
      return apiNotFound(); // malformed percent-encoding
    }
  }
}

/**
 * The model and version a request's path names, or the reference server's 404 for an unknown
 * project or model (its predict and describe word an unknown project differently); exported for
 * the tests' in-process fake of the service.
 */
export function lookupModel(
  project: string,
  modelSegment: string,
  retrained: boolean,
  operation: 'predict' | 'describe' = 'predict',
): Answer | NonNullable<ReturnType<typeof resolveModel>> {
  if (project !== PROJECT_NAME) {
    return problem(404, 'Project not found', `Project ${operation === 'predict' ? 'with name' : 'name'} ${project} does not exist`);
  }
  return resolveModel(modelSegment, retrained) ?? problem(404, 'Model not found', `Model with name ${modelSegment} not found`);
}

/** Whether a handler's result is an answer to send rather than the value asked for. */
export function isAnswer(x: unknown): x is Answer {
  return typeof x === 'object' && x !== null && 'status' in x && 'contentType' in x && 'body' in x;
}

function readRaw(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let length = 0;
    req.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      length += chunk.length;
    });
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, length)));
    req.on('error', reject);
  });
}

/**
 * The body parsed once, or the reference server's 415/400: Flask reads JSON only when so labelled
 * (`application/json`, or `application/<anything>+json`), and an empty body is not JSON.
 */
function parseJson(req: IncomingMessage, raw: Buffer): { value: unknown } | Answer {
  const mediaType = (req.headers['content-type'] ?? '').split(';', 1)[0].trim().toLowerCase();
  if (mediaType !== 'application/json' && !/^application\/[^/]+\+json$/.test(mediaType)) return unsupportedMediaType;
  try {
    return { value: JSON.parse(raw.toString('utf8')) as unknown };
  } catch {
    return badRequest;
  }
}

function send(res: ServerResponse, answer: Answer): void {
  const body = Buffer.from(answer.body, 'utf8');
  res.writeHead(answer.status, {
    'content-type': answer.contentType,
    'content-length': body.length,
    ...answer.headers,
  });
  res.end(body);
}
