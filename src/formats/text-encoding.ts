import iconv from 'iconv-lite';

/** Provisional: replaced by the dialect branch's module. */
export function checkEncoding(name: string): string {
  if (!iconv.encodingExists(name)) throw new Error(`unknown encoding "${name}"`);
  return name.toLowerCase();
}

export function isUtf8(name: string): boolean {
  return /^utf-?8$/i.test(name);
}

export async function* decodeToUtf8(source: AsyncIterable<Buffer>, encoding: string): AsyncGenerator<Buffer> {
  const decoder = iconv.getDecoder(encoding);
  for await (const chunk of source) {
    const text = decoder.write(chunk);
    if (text) yield Buffer.from(text);
  }
  const rest = decoder.end();
  if (rest) yield Buffer.from(rest);
}
