import { mulberry32 } from './prng.js';

/** What a predict request gets instead of (or before) the engine's answer. */
export type Fault = 'reset' | 'hang' | 'rateLimited' | 'gateway' | 'error500' | 'shortAnswer';

export interface FaultRates {
  resetRate: number;
  hangRate: number;
  rateLimitRate: number;
  gatewayErrorRate: number;
  errorRate: number;
  shortAnswerRate: number;
}

/**
 * One seeded draw per predict request, split over the rates in a fixed order (reset, hang, 429,
 * 503, 500, short answer: new kinds go last, so a seed keeps drawing the same earlier faults), so each rate is exactly the fraction of requests it names and a seed replays the
 * same sequence. Returns undefined for a request the engine answers normally.
 */
export function faultDrawer(rates: FaultRates, seed: number): () => Fault | undefined {
  const random = mulberry32(seed);
  const bands: [number, Fault][] = [
    [rates.resetRate, 'reset'],
    [rates.hangRate, 'hang'],
    [rates.rateLimitRate, 'rateLimited'],
    [rates.gatewayErrorRate, 'gateway'],
    [rates.errorRate, 'error500'],
    [rates.shortAnswerRate, 'shortAnswer'],
  ];
  return () => {
    const u = random();
    let edge = 0;
    for (const [rate, fault] of bands) {
      edge += rate;
      if (u < edge) return fault;
    }
    return undefined;
  };
}
