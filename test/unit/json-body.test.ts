import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseJsonBody } from '../../src/service/json-body.js';

const parse = (text: string) => parseJsonBody(Buffer.from(text, 'utf8'));

describe('parseJsonBody', () => {
  it('reads UTF-8 strings and keys as UTF-8, also when the body is read as latin1 first', () => {
    const body = '[{"neighborhood":"Montréal-Nord","区":"中央区","note":"pets ok 🐶","n":1.5,"nested":{"a":["é",null,true]}}]';
    expect(parse(body)).toEqual(JSON.parse(body));
    expect(Object.keys((parse(body) as Record<string, unknown>[])[0])).toContain('区');
  });

  it('keeps what \\u escapes say, next to raw UTF-8', () => {
    const body = '[{"a":"\\u00e9t\\u00e9","b":"été","c":"\\ud83d\\udc36"}]';
    expect(parse(body)).toEqual([{ a: 'été', b: 'été', c: '🐶' }]);
  });

  it('reads an ASCII body', () => {
    expect(parse('{"data":[1,2,{"x":"y"}]}')).toEqual({ data: [1, 2, { x: 'y' }] });
  });

  it('refuses a body that is not JSON with a SyntaxError', () => {
    expect(() => parse('[{"a":1},')).toThrow(SyntaxError);
    expect(() => parse('<html>é</html>')).toThrow(SyntaxError);
  });

  it('answers what JSON.parse of the UTF-8 text answers, for any JSON value', () => {
    fc.assert(
      fc.property(fc.jsonValue({ stringUnit: 'binary' }), (value) => {
        const text = JSON.stringify(value);
        expect(parse(text)).toEqual(JSON.parse(text));
      }),
      { numRuns: 500 },
    );
  });
});
