/**
 * Whether a parsed JSON value nests more than `max` levels deep: an object or array is one level,
 * the objects and arrays it holds one more (`{"a":[1]}` is 2; a number or text is 0). JSON.parse
 * reads any depth, but JSON.stringify, structuredClone and every other recursive walk of the
 * value overflow the stack at a few thousand levels, so a value is checked before any of them
 * meets it. Walked without recursion, level by level, stopping at the first level past `max`; a
 * container met twice (YAML aliases can share one) is walked once, so the walk never outgrows
 * the value.
 */
export function nestedDeeperThan(value: unknown, max: number): boolean {
  if (!isContainer(value)) return false;
  const seen = new Set<object>([value]);
  let level: object[] = [value];
  for (let depth = 1; level.length > 0; depth++) {
    if (depth > max) return true;
    const next: object[] = [];
    for (const container of level) {
      const members: unknown[] = Array.isArray(container) ? container : Object.values(container);
      for (const member of members) {
        if (isContainer(member) && !seen.has(member)) {
          seen.add(member);
          next.push(member);
        }
      }
    }
    level = next;
  }
  return false;
}

function isContainer(value: unknown): value is object {
  return typeof value === 'object' && value !== null;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * JSON text that nests deeper than its reader allows, found before any of it is built: a reader
 * (see textNestedDeeperThan, pickMembers) throws it so that its caller can tell it from text that
 * is not JSON.
 */
export class NestedTooDeep extends Error {
  constructor(readonly max: number) {
    super(`JSON nested more than ${max} levels deep`);
    this.name = 'NestedTooDeep';
  }
}

/**
 * Whether JSON text, given as its bytes, nests more than `max` levels deep, counted as
 * nestedDeeperThan counts a parsed value: read before the text is parsed, so that no parse (or
 * anything after it) meets a value too deep to walk. Brackets inside strings are not counted
 * (their escapes are stepped over); whether the text is JSON at all is left to the parser. One
 * pass over the bytes, stopping at the first level past `max`: about a third of what reading a
 * predict answer's members costs, so it is kept to this loop.
 */
export function textNestedDeeperThan(bytes: Uint8Array, max: number): boolean {
  const length = bytes.length;
  let depth = 0;
  for (let i = 0; i < length; i++) {
    const b = bytes[i];
    if (b === QUOTE) {
      for (i++; i < length; i++) {
        const c = bytes[i];
        if (c === QUOTE) break;
        if (c === BACKSLASH) i++;
      }
    } else if (b === 0x5b || b === 0x7b) {
      if (++depth > max) return true;
    } else if (b === 0x5d || b === 0x7d) depth--;
  }
  return false;
}
