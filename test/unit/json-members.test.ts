import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NestedTooDeep, textNestedDeeperThan } from '../../src/formats/json-depth.js';
import { NotAnObject, pickMembers, type PickedRow } from '../../src/service/json-members.js';

const pick = (text: string, members: string[]) => pickMembers(Buffer.from(text, 'utf8'), members);

/** What picking should answer: the members of each element of JSON.parse's array. */
function expected(text: string, members: string[]): PickedRow[] {
  return (JSON.parse(text) as unknown[]).map((element) =>
    typeof element === 'object' && element !== null && !Array.isArray(element)
      ? members.map((m) => (Object.prototype.hasOwnProperty.call(element, m) ? (element as Record<string, unknown>)[m] : undefined))
      : new NotAnObject(element),
  );
}

describe('pickMembers', () => {
  it('reads the members asked for, in the order asked, stepping over the rest', () => {
    const body =
      '[{"price":4609.6,"price_explain":"{\\"predicted_value\\":4609.6,\\"confidence\\":0.5}","rooms":3,"price_confidence":0.52,"id":0},' +
      '{"price":-1e3,"nested":{"a":[1,{"price":7}],"b":"}"},"price_confidence":null,"id":"1"}]';
    expect(pick(body, ['id', 'price', 'price_confidence', 'missing'])).toEqual([
      [0, 4609.6, 0.52, undefined],
      ['1', -1000, null, undefined],
    ]);
  });

  it('decodes strings as JSON.parse does: UTF-8 bytes, escapes, and both together', () => {
    const body = '[{"area":"Montréal-Nord","区":"中央区","esc":"\\u00e9t\\u00e9 été \\"q\\" \\\\","pet":"\\ud83d\\udc36🐶","obj":{"é":["ü",true]}}]';
    expect(pick(body, ['area', '区', 'esc', 'pet', 'obj'])).toEqual(expected(body, ['area', '区', 'esc', 'pet', 'obj']));
  });

  it('finds a member whose name is written with escapes', () => {
    expect(pick('[{"pri\\u0063e":1,"a\\"b":2}]', ['price', 'a"b'])).toEqual([[1, 2]]);
  });

  it('takes the last value of a repeated member, as JSON.parse does', () => {
    expect(pick('[{"a":1,"a":2}]', ['a'])).toEqual([[2]]);
  });

  it('reads white space between every token', () => {
    const body = ' [ { "a" : 1 , "b" : [ 1 , 2 ] , "c" : "x" } ,\n\t{ } ] \n';
    expect(pick(body, ['a', 'b', 'c'])).toEqual([
      [1, [1, 2], 'x'],
      [undefined, undefined, undefined],
    ]);
  });

  it('answers elements that are not objects as such, with their values', () => {
    expect(pick('[1,"two",null,[3],{"a":4}]', ['a'])).toEqual([new NotAnObject(1), new NotAnObject('two'), new NotAnObject(null), new NotAnObject([3]), [4]]);
    expect(pick('[]', ['a'])).toEqual([]);
  });

  it('refuses a cut or garbled body with a SyntaxError', () => {
    const body = '[{"a":1,"b":"x\\"y","c":{"d":[1,2]}},{"a":2}]';
    for (let cut = 1; cut < body.length; cut++) expect(() => pick(body.slice(0, cut), ['a']), body.slice(0, cut)).toThrow(SyntaxError);
    for (const bad of ['{"a":1}', '[{"a":1}}', '[{"a" 1}]', '[{"a":1,}]', '[{a:1}]', '[{"a":1}] x', '[{"a":nul}]', '[{"a":}]', '']) {
      expect(() => pick(bad, ['a']), bad).toThrow(SyntaxError);
    }
  });

  it('answers what JSON.parse answers, for any array of objects and any members', () => {
    const row = fc.dictionary(fc.string({ unit: 'binary', maxLength: 6 }), fc.jsonValue({ stringUnit: 'binary', maxDepth: 2 }), { maxKeys: 6 });
    fc.assert(
      fc.property(
        fc.array(fc.oneof(row, row, fc.jsonValue({ maxDepth: 1 }))),
        fc.array(fc.string({ unit: 'binary', maxLength: 6 }), { maxLength: 4 }),
        (rows, asked) => {
          const text = JSON.stringify(rows);
          // The members asked for are some that occur and some drawn anew.
          const members = [
            ...new Set([...asked, ...rows.flatMap((r) => (typeof r === 'object' && r !== null && !Array.isArray(r) ? Object.keys(r).slice(0, 2) : []))]),
          ];
          expect(pick(text, members)).toEqual(expected(text, members));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('reads decimals of up to 15 digits as Number reads their text, and longer ones too', () => {
    const decimal = fc
      .tuple(fc.boolean(), fc.stringMatching(/^(0|[1-9][0-9]{0,17})$/), fc.option(fc.stringMatching(/^[0-9]{1,17}$/)))
      .map(([negative, whole, fraction]) => `${negative ? '-' : ''}${whole}${fraction === null ? '' : `.${fraction}`}`);
    fc.assert(
      fc.property(fc.array(decimal, { minLength: 1, maxLength: 5 }), (numbers) => {
        const text = `[${numbers.map((n) => `{"v":${n}}`).join(',')}]`;
        const read = pick(text, ['v']) as unknown[][];
        read.forEach(([v], i) => expect(Object.is(v, Number(numbers[i])), `${numbers[i]} read as ${String(v)}`).toBe(true));
      }),
      { numRuns: 2000 },
    );
  });
});

describe('pickMembers with a depth bound', () => {
  const text = (json: string) => Buffer.from(json, 'utf8');

  it('refuses an answer nested deeper than the bound as textNestedDeeperThan does, whatever member holds the depth', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 6 })), fc.jsonValue({ maxDepth: 6 }))),
        fc.integer({ min: 0, max: 8 }),
        (rows, max) => {
          const body = text(JSON.stringify(rows));
          const deeper = textNestedDeeperThan(body, max);
          let thrown: unknown;
          try {
            pickMembers(body, ['a', 'b'], max);
          } catch (err) {
            thrown = err;
          }
          expect(thrown instanceof NestedTooDeep).toBe(deeper);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('stops at the first level past the bound in an answer far deeper than a parse could go', () => {
    const deep = text(`[{"rental_price":${'['.repeat(100_000)}${']'.repeat(100_000)}}]`);
    expect(() => pickMembers(deep, ['rental_price'], 64)).toThrow(NestedTooDeep);
    expect(pickMembers(text(`[{"rental_price":${'['.repeat(62)}${']'.repeat(62)}}]`), ['rental_price'], 64)).toHaveLength(1);
  });
});
