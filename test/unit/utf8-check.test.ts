import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Utf8Check } from '../../src/formats/utf8-check.js';

/**
 * Pushes the chunks in order until one is refused; answers the file offset of the first invalid
 * byte (the bytes of earlier chunks plus the index push answers), and whether end() accepted the
 * stream's end (undefined when a push refused a chunk).
 */
function run(chunks: readonly Buffer[]): { invalidAt: number; ended?: boolean } {
  const check = new Utf8Check();
  let before = 0;
  for (const chunk of chunks) {
    const bad = check.push(chunk);
    if (bad >= 0) {
      expect(bad).toBeLessThan(chunk.length);
      return { invalidAt: before + bad };
    }
    before += chunk.length;
  }
  return { invalidAt: -1, ended: check.end() };
}

const VALID = { invalidAt: -1, ended: true };

const TEXT = 'a é € 😀 中文 ü\n«ok» ğ 𝄞 end';

/** `bytes` cut into chunks of the given sizes, the rest in a last chunk. */
function cut(bytes: Buffer, sizes: readonly number[]): Buffer[] {
  const chunks: Buffer[] = [];
  let from = 0;
  for (const size of sizes) {
    chunks.push(bytes.subarray(from, from + size));
    from += size;
  }
  chunks.push(bytes.subarray(from));
  return chunks;
}

describe('Utf8Check', () => {
  it('accepts valid multi-byte text split in two at every byte boundary', () => {
    const bytes = Buffer.from(TEXT, 'utf8');
    for (let cut = 0; cut <= bytes.length; cut++) {
      expect(run([bytes.subarray(0, cut), bytes.subarray(cut)]), `cut at ${cut}`).toEqual(VALID);
    }
  });

  it('accepts valid text fed one byte at a time, and empty chunks', () => {
    const bytes = Buffer.from(TEXT, 'utf8');
    const chunks = [Buffer.alloc(0), ...Array.from(bytes, (b) => Buffer.from([b])), Buffer.alloc(0)];
    expect(run(chunks)).toEqual(VALID);
  });

  it('accepts any valid text in any chunking', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 40 }), fc.array(fc.integer({ min: 0, max: 12 }), { maxLength: 20 }), (s, sizes) => {
        const bytes = Buffer.from(s, 'utf8');
        expect(run(cut(bytes, sizes))).toEqual(VALID);
      }),
    );
  });

  it.each([
    ['0xFF', 0xff],
    ['0xFE', 0xfe],
    ['an overlong lead 0xC0', 0xc0],
    ['an overlong lead 0xC1', 0xc1],
    ['a lead above U+10FFFF (0xF5)', 0xf5],
  ])('reports the file offset of %s in the first chunk', (_what, bad) => {
    const prefix = Buffer.from('ab é€', 'utf8');
    const chunk = Buffer.concat([prefix, Buffer.from([bad]), Buffer.from('tail')]);
    expect(run([chunk])).toEqual({ invalidAt: prefix.length });
  });

  it('reports the file offset of an invalid byte in a later chunk, counting every earlier byte', () => {
    const first = Buffer.from('x,😀,€\n', 'utf8');
    const second = Buffer.from('ok,é,', 'utf8');
    const third = Buffer.concat([Buffer.from('中z', 'utf8'), Buffer.from([0xff]), Buffer.from('a')]);
    expect(run([first, second, third])).toEqual({ invalidAt: first.length + second.length + Buffer.byteLength('中z') });
  });

  it('reports the right offset when the bad chunk starts by completing a character from the last chunk', () => {
    const euro = Buffer.from('€', 'utf8'); // E2 82 AC
    const first = Buffer.concat([Buffer.from('abc'), euro.subarray(0, 1)]);
    const second = Buffer.concat([euro.subarray(1), Buffer.from('de'), Buffer.from([0xfe])]);
    expect(run([first, second])).toEqual({ invalidAt: 3 + 1 + 2 + 2 });
  });

  it('reports an invalid byte placed between any two characters at its exact file offset, whatever the chunking', () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }), { maxLength: 30 }),
        fc.nat(),
        fc.constantFrom(0xff, 0xfe, 0xc0, 0xc1, 0xf8),
        fc.array(fc.integer({ min: 1, max: 9 }), { maxLength: 30 }),
        (chars, pick, bad, sizes) => {
          const at = pick % (chars.length + 1);
          const before = Buffer.from(chars.slice(0, at).join(''), 'utf8');
          const bytes = Buffer.concat([before, Buffer.from([bad]), Buffer.from(chars.slice(at).join(''), 'utf8')]);
          expect(run(cut(bytes, sizes))).toEqual({ invalidAt: before.length });
        },
      ),
      { numRuns: 300 },
    );
  });

  it('reports a lead byte whose continuation is missing at the lead byte', () => {
    // E2 82 then a letter: the character begun at offset 3 is broken
    const chunk = Buffer.concat([Buffer.from('abc'), Buffer.from([0xe2, 0x82]), Buffer.from('d')]);
    expect(run([chunk])).toEqual({ invalidAt: 3 });
  });

  it('reports a stray continuation byte at its offset', () => {
    const chunk = Buffer.concat([Buffer.from('héllo '), Buffer.from([0x80]), Buffer.from('x')]);
    expect(run([chunk])).toEqual({ invalidAt: Buffer.byteLength('héllo ') });
  });

  it('end() answers false for a character cut off by the end of the stream', () => {
    const emoji = Buffer.from('😀', 'utf8');
    for (let keep = 1; keep < emoji.length; keep++) {
      expect(run([Buffer.from('ab'), emoji.subarray(0, keep)]), `${keep} of 4 bytes`).toEqual({ invalidAt: -1, ended: false });
    }
    expect(run([Buffer.from('ab'), Buffer.from([0xc3])])).toEqual({ invalidAt: -1, ended: false });
  });

  it('end() answers true when the last character is complete', () => {
    const emoji = Buffer.from('😀', 'utf8');
    expect(run([Buffer.from('ab'), emoji.subarray(0, 2), emoji.subarray(2)])).toEqual(VALID);
    expect(run([])).toEqual(VALID);
  });
});

describe('Utf8Check names the sequence that is not UTF-8', () => {
  const b = (...bytes: number[]) => Buffer.from(bytes);
  it.each([
    ['a surrogate', [0x61, 0x62, 0xed, 0xa0, 0x80], 2],
    ['an overlong encoding', [0x61, 0xe0, 0x80, 0x80], 1],
    ['a code point above U+10FFFF', [0xf4, 0x90, 0x80, 0x80], 0],
    ['a stray continuation after a whole character', [0xc3, 0xa9, 0xa9, 0x41], 2],
    ['a lead byte cut short by ASCII', [0x61, 0xc3, 0x41], 1],
    ['a byte that is never UTF-8', [0x61, 0x62, 0x63, 0xff], 3],
  ])('%s', (_name, bytes, at) => {
    expect(run([b(...bytes)]).invalidAt).toBe(at);
  });

  it('refuses a stream in the chunk a fatal streaming TextDecoder refuses it, and ends where it does', () => {
    // Bytes around UTF-8's edges: leads of every length, the second bytes' bounds, invalid bytes.
    const edgy = fc.constantFrom(0x41, 0x0a, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc2, 0xdf, 0xe0, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff);
    const text = fc.string({ unit: 'binary', maxLength: 6 }).map((s) => [...Buffer.from(s, 'utf8')]);
    const bytes = fc
      .array(
        fc.oneof(
          edgy.map((b) => [b]),
          text,
        ),
        { maxLength: 12 },
      )
      .map((parts) => Buffer.from(parts.flat()));
    fc.assert(
      fc.property(bytes, fc.array(fc.integer({ min: 0, max: 7 }), { maxLength: 8 }), (all, sizes) => {
        const chunks = cut(all, sizes);
        const decoder = new TextDecoder('utf-8', { fatal: true });
        const check = new Utf8Check();
        for (const [i, chunk] of chunks.entries()) {
          let refused = false;
          try {
            decoder.decode(chunk, { stream: true });
          } catch {
            refused = true;
          }
          expect(check.push(chunk) >= 0, `chunk ${i}`).toBe(refused);
          if (refused) return;
        }
        let ended = true;
        try {
          decoder.decode();
        } catch {
          ended = false;
        }
        expect(check.end()).toBe(ended);
      }),
      { numRuns: 2000 },
    );
  });
});
