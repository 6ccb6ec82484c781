/**
 * The text of a top-level member's value in a JSON object's text, exactly as written: a number
 * keeps its digits (a 19-digit id JSON.parse would round), an object its spacing and key order.
 * Of a name given twice, the last, as JSON.parse reads it. Undefined when the text is no object or
 * has no such member. The text must be valid JSON (JSON.parse it first): only quotes, brackets,
 * colons and commas are looked at.
 */
export function memberText(text: string, name: string): string | undefined {
  let at = skipSpace(text, 0);
  if (text[at] !== '{') return undefined;
  at = skipSpace(text, at + 1);
  let found: string | undefined;
  while (at < text.length && text[at] === '"') {
    const keyEnd = stringEnd(text, at);
    const key = JSON.parse(text.slice(at, keyEnd)) as string;
    // Past the colon, to the value.
    const start = skipSpace(text, skipSpace(text, keyEnd) + 1);
    const end = valueEnd(text, start);
    if (key === name) found = text.slice(start, end);
    at = skipSpace(text, end);
    if (text[at] === ',') at = skipSpace(text, at + 1);
  }
  return found;
}

/** The first character at or after `at` that is not JSON white space. */
function skipSpace(text: string, at: number): number {
  while (at < text.length && (text[at] === ' ' || text[at] === '\t' || text[at] === '\n' || text[at] === '\r')) at++;
  return at;
}

/** Where the string starting with the quote at `at` ends: one past its closing quote. */
function stringEnd(text: string, at: number): number {
  for (let i = at + 1; i < text.length; i++) {
    const c = text[i];
    if (c === '\\') i++;
    else if (c === '"') return i + 1;
  }
  return text.length;
}

/** Where the value starting at `at` ends: one past its last character. */
function valueEnd(text: string, at: number): number {
  const first = text[at];
  if (first === '"') return stringEnd(text, at);
  if (first !== '{' && first !== '[') {
    let i = at;
    while (i < text.length && !',}] \t\n\r'.includes(text[i])) i++;
    return i;
  }
  let depth = 0;
  for (let i = at; i < text.length; i++) {
    const c = text[i];
    if (c === '"') i = stringEnd(text, i) - 1;
    else if (c === '{' || c === '[') depth++;
    else if ((c === '}' || c === ']') && --depth === 0) return i + 1;
  }
  return text.length;
}
