import { z } from 'zod';
import { PROCESS_DEFAULTS } from '../process-defaults.js';

/**
 * Settings of the bundled Model Query Service simulator. The logger is not part of the schema (it
 * is not data a flag or file can carry): pass it as the second argument of `createSimulator`.
 */
export const simulatorOptionsSchema = z
  .object({
    /** Interface to listen on; loopback by default so a demo never exposes itself. */
    host: z.string().min(1).default(PROCESS_DEFAULTS.simulatorHost),
    /** The reference server's default port, so a client's default base URL reaches it; 0 picks a free one. */
    port: z.number().int().min(0).max(65535).default(PROCESS_DEFAULTS.simulatorPort),
    /**
     * Prefix before `/api/...`, as a gateway adds (`/v1`), so clients can be tested against a base
     * URL that carries a path. Empty, or `/segment(/segment)*` without a trailing slash.
     */
    basePath: z
      .string()
      .regex(/^(\/[^/?#]+)*$/, 'basePath must be empty or like /v1 (no trailing slash)')
      .default(''),
    /**
     * Predict body shape the simulator accepts: `data` is the reference server
     * (`{"data": [...], "params": {...}}`), `array` is the interface document as written (a bare
     * array). The other shape gets the 500 the matching real server gives, so clients can detect it.
     */
    envelope: z.enum(['data', 'array']).default('data'),
    /**
     * The engine the models answer like (see EngineFlavour): `lightwood`, MindsDB's default
     * engine up to 25.x (inputs echoed, `_explain`, `_anomaly`); `byom`, MindsDB 26.x with a
     * Bring-Your-Own-Model engine (the engine's columns and the row id only, ACCURACY null).
     */
    engine: z.enum(['lightwood', 'byom']).default('lightwood'),
    /** Answer describe `{}` with the info shape, as older servers do, instead of the metadata row. */
    legacyDescribe: z.boolean().default(false),
    /** How long each predict answer the engine gives takes, from the request's arrival (not 429/503/reset/hang), to model compute time. */
    latencyMs: z.number().min(0).default(0),
    /** Uniform random extra delay (0..latencyJitterMs) on top of latencyMs, drawn from its own seeded stream. */
    latencyJitterMs: z.number().min(0).default(0),
    /** Fraction of predict requests answered 500 InternalServerError, to exercise retries. */
    errorRate: z.number().min(0).max(1).default(0),
    /** Fraction of predict requests answered 429 with Retry-After, to exercise backoff. */
    rateLimitRate: z.number().min(0).max(1).default(0),
    /**
     * Predict requests the simulated engine works on at once (its thread pool; 0: no limit). A
     * request beyond them is answered 429 with Retry-After, as a server with a full pool would,
     * so clients can be tested finding the concurrency a server sustains.
     */
    capacity: z.number().int().min(0).default(0),
    /** Seconds sent in the Retry-After header of simulated 429s. */
    retryAfterSeconds: z.number().int().min(0).default(1),
    /** Fraction of predict requests whose socket is reset without an answer, to exercise network-error handling. */
    resetRate: z.number().min(0).max(1).default(0),
    /** Fraction of predict requests never answered, to exercise client time-outs. */
    hangRate: z.number().min(0).max(1).default(0),
    /** Fraction of predict requests answered 503 with an HTML body, as a proxy in front of the server would. */
    gatewayErrorRate: z.number().min(0).max(1).default(0),
    /**
     * Fraction of predict requests the engine answers with one row too few or one too many (half
     * each), as a proxy cutting a body or a flaky engine would, to exercise alignment retries.
     */
    shortAnswerRate: z.number().min(0).max(1).default(0),
    /**
     * After this many predict requests (0: never), every model is retrained: its active version
     * gives other predictions and describe other accuracies, as a retrain during a run would.
     */
    retrainAfterPredicts: z.number().int().min(0).default(0),
    /**
     * Whether the engine fails on a row holding `__engine_error__` (ENGINE_ERROR_VALUE), so clients
     * can test isolating bad rows; false is that engine fixed: it reads the value as any other.
     */
    engineErrors: z.boolean().default(true),
    /** Seed of the generator that draws faults (one draw per predict request), so runs are repeatable. */
    seed: z.number().int().default(1),
    /** When set, every request must carry `Authorization: Bearer <token>` or gets 401, to test credentials. */
    token: z.string().min(1).optional(),
    /**
     * Name of the row id member echoed back: `__mindsdb_row_id` as the reference server,
     * `__service_row_id` as the interface document, `none` for a server that echoes no row id.
     */
    rowIdMember: z.string().min(1).default('__mindsdb_row_id'),
  })
  .refine(
    (o) => o.resetRate + o.hangRate + o.rateLimitRate + o.gatewayErrorRate + o.errorRate + o.shortAnswerRate <= 1,
    'the fault rates (reset, hang, rate limit, gateway, error, short answer) must add up to at most 1',
  );

/** What callers (the CLI, tests, scripts) pass; every field is optional. */
export type SimulatorOptions = z.input<typeof simulatorOptionsSchema>;
