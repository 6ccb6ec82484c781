import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { memberText } from '../../src/formats/json-member-text.js';

describe('memberText', () => {
  it('answers a member value as written: digits, spacing and key order kept', () => {
    const line = '{"row":3, "line" : 4,"input": {"id": 12345678901234567890, "b":[1, {"x":"}]\\""}], "a":1.50},"detail":"x"}';
    expect(memberText(line, 'input')).toBe('{"id": 12345678901234567890, "b":[1, {"x":"}]\\""}], "a":1.50}');
    expect(memberText(line, 'line')).toBe('4');
    expect(memberText(line, 'detail')).toBe('"x"');
    expect(memberText(line, 'missing')).toBeUndefined();
    expect(memberText('[1,2]', 'input')).toBeUndefined();
    expect(memberText('{"input":1,"input":"two"}', 'input')).toBe('"two"');
  });

  it('reads back what JSON.parse reads, for any object', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), fc.string(), fc.boolean(), (object, name, spaced) => {
        const text = JSON.stringify(object, null, spaced ? 2 : undefined);
        const found = memberText(text, name);
        if (!Object.hasOwn(object, name)) expect(found).toBeUndefined();
        else expect(JSON.parse(found!)).toEqual(JSON.parse(JSON.stringify(object[name])));
      }),
    );
  });
});
