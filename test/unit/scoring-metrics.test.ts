import { describe, expect, it } from 'vitest';
import { createMetricsRegistry } from '../../src/metrics/registry.js';
import { scoringMetrics } from '../../src/metrics/scoring-metrics.js';
import { loadOutcome, predictOutcome } from '../../src/scoring/scoring-observer.js';
import { fixedSlots } from '../../src/service/request-slots.js';
import { ServiceError } from '../../src/service/service-error.js';
import { byOutcome, parseSamples, promtoolCheck, sample } from '../helpers/metrics.js';
import { noteMissing, PROMTOOL } from '../helpers/tools.js';

if (!PROMTOOL) noteMissing('the promtool check of the scoring metrics', 'prometheus');

describe('scoring metrics', () => {
  it('count what the observer hears, by outcome, with every outcome present from the start', async () => {
    const registry = createMetricsRegistry();
    const observer = scoringMetrics(registry, { maxConcurrency: 8 });
    let s = parseSamples(await registry.metrics());
    expect(byOutcome(s, 'batch_scorer_predict_requests_total')).toEqual({ answered: 0, overloaded: 0, 'bad-rows': 0, 'bad-answer': 0, failed: 0 });
    expect(byOutcome(s, 'batch_scorer_segments_total')).toEqual({ scored: 0, failed: 0, stopped: 0 });

    observer.requestStarted();
    observer.requestStarted();
    observer.requestDone('overloaded', 0.02);
    observer.retry();
    observer.requestDone('answered', 0.3);
    observer.requestDone('bad-rows', 1.5);
    observer.requestEnded();
    observer.rows(10, 0);
    observer.rows(5, 2);
    s = parseSamples(await registry.metrics());
    expect(sample(s, 'batch_scorer_predict_requests_in_flight')).toBe(1);
    expect(byOutcome(s, 'batch_scorer_predict_requests_total')).toEqual({ answered: 1, overloaded: 1, 'bad-rows': 1, 'bad-answer': 0, failed: 0 });
    expect(sample(s, 'batch_scorer_predict_retries_total')).toBe(1);
    expect(byOutcome(s, 'batch_scorer_rows_total')).toEqual({ scored: 15, quarantined: 2 });
    expect(sample(s, 'batch_scorer_predict_duration_seconds_bucket{le="0.025",outcome="overloaded"}')).toBe(1);
    expect(sample(s, 'batch_scorer_predict_duration_seconds_bucket{le="1",outcome="bad-rows"}')).toBe(0);
    expect(sample(s, 'batch_scorer_predict_duration_seconds_count{outcome="answered"}')).toBe(1);
  });

  it('the concurrency limit is what the segments in progress may use together, at most the process bound, 0 while idle', async () => {
    const registry = createMetricsRegistry();
    const observer = scoringMetrics(registry, { maxConcurrency: 6 });
    const limit = async () => sample(parseSamples(await registry.metrics()), 'batch_scorer_predict_concurrency_limit');
    const runA = fixedSlots(4);
    const runB = fixedSlots(3);
    expect(await limit()).toBe(0);
    // Two segments of one run share its limit: counted once.
    observer.segmentStarted(runA);
    observer.segmentStarted(runA);
    expect(await limit()).toBe(4);
    observer.segmentStarted(runB);
    expect(await limit()).toBe(6);
    observer.segmentEnded(runA, 'scored');
    observer.segmentEnded(runB, 'failed');
    expect(await limit()).toBe(4);
    observer.segmentEnded(runA, 'stopped');
    expect(await limit()).toBe(0);
    expect(byOutcome(parseSamples(await registry.metrics()), 'batch_scorer_segments_total')).toEqual({ scored: 1, failed: 1, stopped: 1 });
  });

  it('each registry is its own: two in one process do not share counts', async () => {
    const a = createMetricsRegistry();
    const b = createMetricsRegistry();
    scoringMetrics(a, { maxConcurrency: 1 }).rows(3, 0);
    scoringMetrics(b, { maxConcurrency: 1 });
    expect(sample(parseSamples(await a.metrics()), 'batch_scorer_rows_total{outcome="scored"}')).toBe(3);
    expect(sample(parseSamples(await b.metrics()), 'batch_scorer_rows_total{outcome="scored"}')).toBe(0);
  });

  it.skipIf(!PROMTOOL)('passes promtool check metrics, process metrics included', async () => {
    const registry = createMetricsRegistry();
    const observer = scoringMetrics(registry, { maxConcurrency: 2 });
    observer.requestDone('answered', 0.1);
    const text = await registry.metrics();
    expect(text).toMatch(/^process_cpu_seconds_total /m);
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds /m);
    expect(await promtoolCheck(text)).toEqual({ code: 0, output: '' });
  });

  it('an attempt outcome follows the error: overload first, then bad rows and bad answers, anything else failed', () => {
    expect(predictOutcome(undefined)).toBe('answered');
    expect(predictOutcome(new ServiceError('retriable', '429', { status: 429 }))).toBe('overloaded');
    expect(predictOutcome(new ServiceError('retriable', 'reset', { overload: true }))).toBe('overloaded');
    expect(predictOutcome(new ServiceError('bad-rows', 'engine', { status: 500 }))).toBe('bad-rows');
    expect(predictOutcome(new ServiceError('bad-answer', 'short'))).toBe('bad-answer');
    expect(predictOutcome(new ServiceError('retriable', '502', { status: 502 }))).toBe('failed');
    expect(predictOutcome(new ServiceError('fatal', '404', { status: 404 }))).toBe('failed');
    // The request limit learns load only: a bad answer or an engine failure is not overload.
    expect(['answered', 'overloaded', 'bad-rows', 'bad-answer', 'failed'].map((o) => loadOutcome(o as never))).toEqual([
      'answered',
      'overloaded',
      'failed',
      'failed',
      'failed',
    ]);
  });
});
