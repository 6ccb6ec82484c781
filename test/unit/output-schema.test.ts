import { describe, expect, it } from 'vitest';
import { buildOutputSchema, CLASH_PREFIX, predictionMembers, targetsFromAnswer } from '../../src/scoring/output-schema.js';

const numericProbe = {
  rental_price: 1200,
  rental_price_confidence: 0.9,
  rental_price_min: 1000,
  rental_price_max: 1400,
  rental_price_anomaly: null,
  rental_price_explain: '{}',
};

const categoricalProbe = {
  location: 'good',
  location_confidence: 0.7,
  location_anomaly: null,
  location_explain: '{"probability_class_good":0.7}',
};

describe('buildOutputSchema', () => {
  it('gives a numeric target value, confidence, _min, _max and anomaly columns', () => {
    const schema = buildOutputSchema(['rental_price'], numericProbe, ['sqft', 'rooms'], predictionMembers(undefined, false));
    expect(schema.columns).toEqual(['rental_price', 'rental_price_confidence', 'rental_price_min', 'rental_price_max', 'rental_price_anomaly']);
    expect(schema.targets).toEqual([
      {
        target: 'rental_price',
        interval: true,
        columns: schema.columns.map((c) => ({ member: c, column: c })),
      },
    ]);
    expect(schema.warnings).toEqual([]);
  });

  it('gives a categorical target (no _min/_max in the probe) no interval columns', () => {
    const schema = buildOutputSchema(['location'], categoricalProbe, ['sqft'], predictionMembers(undefined, false));
    expect(schema.targets[0].interval).toBe(false);
    expect(schema.columns).toEqual(['location', 'location_confidence', 'location_anomaly']);
  });

  it('needs both _min and _max for an interval', () => {
    const onlyMin = buildOutputSchema(['t'], { t: 1, t_confidence: 1, t_min: 0 }, [], predictionMembers(undefined, false));
    expect(onlyMin.targets[0].interval).toBe(false);
    expect(onlyMin.columns).not.toContain('t_min');
    const nullBounds = buildOutputSchema(['t'], { t: 1, t_min: null, t_max: null }, [], predictionMembers(undefined, false));
    expect(nullBounds.targets[0].interval).toBe(true);
  });

  it('adds _explain only with the explain flag, last', () => {
    const probe = { ...numericProbe, ...categoricalProbe };
    expect(buildOutputSchema(['rental_price', 'location'], probe, [], predictionMembers(undefined, false)).columns.some((c) => c.endsWith('_explain'))).toBe(
      false,
    );
    expect(buildOutputSchema(['rental_price', 'location'], probe, [], predictionMembers(undefined, true)).columns).toEqual([
      'rental_price',
      'rental_price_confidence',
      'rental_price_min',
      'rental_price_max',
      'rental_price_anomaly',
      'rental_price_explain',
      'location',
      'location_confidence',
      'location_anomaly',
      'location_explain',
    ]);
  });

  it('adds _explain with the flag even when the probe lacks it', () => {
    expect(buildOutputSchema(['t'], { t: 1, t_anomaly: null }, [], predictionMembers(undefined, true)).columns).toEqual([
      't',
      't_confidence',
      't_anomaly',
      't_explain',
    ]);
  });

  it('writes _anomaly only for a model that answers it (MindsDB’s BYOM engine does not)', () => {
    const byom = { rental_price: 1200, rental_price_confidence: 0.9, rental_price_min: 1000, rental_price_max: 1400 };
    expect(buildOutputSchema(['rental_price'], byom, [], predictionMembers(undefined, false)).columns).toEqual([
      'rental_price',
      'rental_price_confidence',
      'rental_price_min',
      'rental_price_max',
    ]);
    expect(buildOutputSchema(['rental_price'], byom, [], ['anomaly']).columns).toEqual([]);
  });

  it('keeps targets in the order given', () => {
    const schema = buildOutputSchema(['b', 'a'], { a_anomaly: null, b_anomaly: null }, [], predictionMembers(undefined, false));
    expect(schema.targets.map((t) => t.target)).toEqual(['b', 'a']);
    expect(schema.columns).toEqual(['b', 'b_confidence', 'b_anomaly', 'a', 'a_confidence', 'a_anomaly']);
  });

  it("renames all of a target's columns with pred_ when the target name is an input column", () => {
    const schema = buildOutputSchema(['rental_price'], numericProbe, ['sqft', 'rental_price'], predictionMembers(undefined, false));
    expect(CLASH_PREFIX).toBe('pred_');
    expect(schema.targets[0].columns).toEqual([
      { member: 'rental_price', column: 'pred_rental_price' },
      { member: 'rental_price_confidence', column: 'pred_rental_price_confidence' },
      { member: 'rental_price_min', column: 'pred_rental_price_min' },
      { member: 'rental_price_max', column: 'pred_rental_price_max' },
      { member: 'rental_price_anomaly', column: 'pred_rental_price_anomaly' },
    ]);
    expect(schema.warnings).toHaveLength(1);
    expect(schema.warnings[0]).toContain('"rental_price"');
    expect(schema.warnings[0]).toContain('pred_rental_price');
  });

  it('renames all columns when any one of them (e.g. _max or _explain) clashes', () => {
    const byMax = buildOutputSchema(['rental_price'], numericProbe, ['rental_price_max'], predictionMembers(undefined, false));
    expect(byMax.columns).toEqual([
      'pred_rental_price',
      'pred_rental_price_confidence',
      'pred_rental_price_min',
      'pred_rental_price_max',
      'pred_rental_price_anomaly',
    ]);
    expect(buildOutputSchema(['t'], { t_anomaly: null }, ['t_explain'], predictionMembers(undefined, false)).columns).toEqual([
      't',
      't_confidence',
      't_anomaly',
    ]);
    expect(buildOutputSchema(['t'], { t_anomaly: null }, ['t_explain'], predictionMembers(undefined, true)).columns).toEqual([
      'pred_t',
      'pred_t_confidence',
      'pred_t_anomaly',
      'pred_t_explain',
    ]);
  });

  it('does not rename for a clash with an interval column the target does not have', () => {
    const schema = buildOutputSchema(['location'], categoricalProbe, ['location_min'], predictionMembers(undefined, false));
    expect(schema.columns).toEqual(['location', 'location_confidence', 'location_anomaly']);
    expect(schema.warnings).toEqual([]);
  });

  it('repeats the prefix while a prefixed name is also taken', () => {
    const schema = buildOutputSchema(['t'], { t_anomaly: null }, ['t', 'pred_t_anomaly', 'pred_pred_t'], predictionMembers(undefined, false));
    expect(schema.columns).toEqual(['pred_pred_pred_t', 'pred_pred_pred_t_confidence', 'pred_pred_pred_t_anomaly']);
    expect(schema.warnings[0]).toContain('pred_pred_pred_t');
    const once = buildOutputSchema(['t'], { t_anomaly: null }, ['t_confidence', 'pred_t'], predictionMembers(undefined, false));
    expect(once.columns).toEqual(['pred_pred_t', 'pred_pred_t_confidence', 'pred_pred_t_anomaly']);
  });

  it('renames only the clashing target, and keeps the answer members unprefixed', () => {
    const probe = { ...numericProbe, ...categoricalProbe };
    const schema = buildOutputSchema(['rental_price', 'location'], probe, ['location'], predictionMembers(undefined, false));
    expect(schema.columns).toEqual([
      'rental_price',
      'rental_price_confidence',
      'rental_price_min',
      'rental_price_max',
      'rental_price_anomaly',
      'pred_location',
      'pred_location_confidence',
      'pred_location_anomaly',
    ]);
    expect(schema.targets[1].columns.map((c) => c.member)).toEqual(['location', 'location_confidence', 'location_anomaly']);
    expect(schema.warnings).toHaveLength(1);
  });

  it("never outputs a column name twice, nor an input column's name", () => {
    // target "a_confidence" would clash with target "a"'s confidence column
    const inputs = ['x', 'a_confidence_anomaly'];
    const schema = buildOutputSchema(['a', 'a_confidence'], { a_anomaly: null, a_confidence_anomaly: null }, inputs, predictionMembers(undefined, true));
    const all = [...inputs, ...schema.columns];
    expect(new Set(all).size).toBe(all.length);
  });
});

describe('targetsFromAnswer', () => {
  it('names every member that comes with a _confidence member', () => {
    expect(targetsFromAnswer({ ...numericProbe, ...categoricalProbe, sqft: 10, __service_row_id: 0 })).toEqual(['rental_price', 'location']);
  });

  it('ignores a _confidence member without its value member', () => {
    expect(targetsFromAnswer({ price_confidence: 0.5, sqft: 1, rooms_confidence: 1, rooms: 2 })).toEqual(['rooms']);
  });

  it('answers nothing for an answer without confidences', () => {
    expect(targetsFromAnswer({ a: 1, b_min: 0, b_max: 2, b: 1 })).toEqual([]);
    expect(targetsFromAnswer({})).toEqual([]);
  });

  it('counts a target whose value is null', () => {
    expect(targetsFromAnswer({ t: null, t_confidence: null })).toEqual(['t']);
  });
});
