import { describe, expect, it } from 'vitest';
import { answerCheck } from '../../src/scoring/answer-check.js';
import { buildOutputSchema } from '../../src/scoring/output-schema.js';

const probe = {
  price: 1,
  price_confidence: 0.9,
  price_min: 0,
  price_max: 2,
  price_anomaly: null,
  price_explain: null,
  kind: 'a',
  kind_confidence: 0.5,
  kind_anomaly: null,
};
const all = buildOutputSchema(['price', 'kind'], probe, [], ['value', 'confidence', 'interval', 'anomaly', 'explain']);
/** The answer members in schema order, each at its own place. */
const check = answerCheck(
  all,
  all.columns.map((_, c) => c),
);
const columns = all.targets.flatMap((t) => t.columns.map((c) => c.member));
/** An answer row of sound values, with `changes` made. */
const row = (changes: Record<string, unknown> = {}): unknown[] =>
  columns.map((member) => (member in changes ? changes[member] : ((probe as Record<string, unknown>)[member] ?? null)));

describe('answerCheck', () => {
  it('passes what a model answers: numbers, text, booleans and nulls, an explain of any shape, a value outside its interval', () => {
    expect(columns).toEqual([
      'price',
      'price_confidence',
      'price_min',
      'price_max',
      'price_anomaly',
      'price_explain',
      'kind',
      'kind_confidence',
      'kind_anomaly',
      'kind_explain',
    ]);
    expect(check(row())).toBeUndefined();
    expect(check(row({ price: -1e308, price_anomaly: true, kind: 'x', kind_confidence: 0, price_confidence: 1 }))).toBeUndefined();
    expect(check(row({ price_explain: { predicted_value: 1, truth: [1, 2] }, kind_explain: '{"a":1}' }))).toBeUndefined();
    expect(check(row({ price: 5, price_min: 0, price_max: 2 }))).toBeUndefined();
    expect(check(row({ price_min: 2, price_max: 2, price_confidence: null }))).toBeUndefined();
  });

  it('refuses a number past the range of a double, in any member', () => {
    expect(check(row({ price: Infinity }))).toBe("the model's price is a number past the range of a double (such as 1e999)");
    expect(check(row({ price_max: -Infinity }))).toMatch(/^the model's price_max is a number past/);
    expect(check(row({ kind_explain: Infinity }))).toMatch(/^the model's kind_explain is a number past/);
  });

  it('refuses an object or array where a value is written, a confidence outside [0, 1], a min above its max', () => {
    expect(check(row({ price: { value: 1 } }))).toBe("the model's price is an object, where a value is written");
    expect(check(row({ kind_anomaly: [true] }))).toBe("the model's kind_anomaly is an array, where a value is written");
    expect(check(row({ kind_confidence: 1.5 }))).toBe("the model's kind_confidence is 1.5, outside [0, 1]");
    expect(check(row({ price_confidence: -0.1 }))).toBe("the model's price_confidence is -0.1, outside [0, 1]");
    expect(check(row({ price_min: 3, price_max: 2 }))).toBe("the model's price_min 3 is above price_max 2");
  });

  it('reads only the members written, where the answer row has them', () => {
    const valueOnly = buildOutputSchema(['price'], probe, [], ['value']);
    // The value read second, after a member the run does not write.
    const only = answerCheck(valueOnly, [1]);
    expect(only([Infinity, 3])).toBeUndefined();
    expect(only([1, Infinity])).toMatch(/^the model's price is a number past/);
    // A member not written is not looked at.
    expect(only([{}, 1])).toBeUndefined();
  });
});
