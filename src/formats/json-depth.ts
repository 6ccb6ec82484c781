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
