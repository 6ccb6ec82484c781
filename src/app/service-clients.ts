import { ANSWER_FLOOR_BYTES, limitError, type Limits, type RunOptions, type ServiceTokens, tokenFor } from '../config/index.js';
import type { Logger } from '../log.js';
import { type AnswerBounds, DEFAULT_RETRY_POLICY, ServiceClient } from '../service/index.js';
import type { PredictorFactory } from '../scoring/index.js';

// Wiring: the one place a run's options become a ServiceClient. Commands hand the factory to the
// pipeline (scoreRun's predictorFor) and to workers (WorkerOptions.predictors), which never build
// a client themselves.

/** The deployment's bounds on a model's answers, as the client takes them; past one, the run fails E_LIMIT naming its setting. */
export function answerBounds(limits: Limits): AnswerBounds {
  return {
    maxAnswerBytes: limits.answerBytes,
    maxAnswerRatio: limits.answerRatio,
    answerFloorBytes: ANSWER_FLOOR_BYTES,
    maxAnswerDepth: limits.answerDepth,
    maxDescribeBytes: limits.describeBytes,
    limitError,
  };
}

/**
 * The Model Query Service client a run's options ask for: its service, time limit and retries,
 * with `connections` kept alive (as many as requests may be in flight) and the token of that
 * service's origin, if it has one (see tokenFor), never logged.
 */
function runServiceClient(
  options: Pick<RunOptions, 'service' | 'timeout' | 'retries'>,
  ctx: { tokens: ServiceTokens; answers: AnswerBounds; connections: number; log: Logger },
): ServiceClient {
  return new ServiceClient({
    baseUrl: options.service,
    token: tokenFor(ctx.tokens, options.service),
    timeoutMs: options.timeout,
    retry: { ...DEFAULT_RETRY_POLICY, retries: options.retries },
    connections: ctx.connections,
    answers: ctx.answers,
    logger: ctx.log,
  });
}

/**
 * The PredictorFactory of a process: each run gets a ServiceClient of its options, with the token
 * of its service's origin, reading answers within the deployment's `limits`.
 */
export function serviceClientFactory(tokens: ServiceTokens, limits: Limits): PredictorFactory {
  const answers = answerBounds(limits);
  return (options, connections, log) => runServiceClient(options, { tokens, answers, connections, log });
}
