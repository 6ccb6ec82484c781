import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { FrameWriter } from '../../src/cli/frame-writer.js';

/** What was written, as a terminal (or a pipe) of the given width receives it. */
class Output extends Writable {
  text = '';
  constructor(
    readonly isTTY: boolean,
    readonly columns = 80,
  ) {
    super();
  }
  override _write(chunk: Buffer, _encoding: BufferEncoding, done: () => void): void {
    this.text += chunk.toString();
    done();
  }
}

const UP = (n: number) => `\x1b[${n}A`;
const CLEAR_DOWN = '\x1b[0J';

describe('FrameWriter', () => {
  it('on a terminal, draws each frame over the one before, with new lines above it', () => {
    const tty = new Output(true);
    const w = new FrameWriter(tty);
    w.write('run-a  active  10/100 rows\nrun-b  waiting');
    expect(tty.text).toBe('run-a  active  10/100 rows\nrun-b  waiting\n');
    tty.text = '';
    w.write('run-a  active  50/100 rows\nrun-b  active', ['planned: 100 rows']);
    expect(tty.text).toBe(`${UP(2)}${CLEAR_DOWN}planned: 100 rows\nrun-a  active  50/100 rows\nrun-b  active\n`);
    tty.text = '';
    // The same frame and nothing new: nothing to draw.
    w.write('run-a  active  50/100 rows\nrun-b  active');
    expect(tty.text).toBe('');
  });

  it.each([
    [10, 25, 3],
    [0, 100, 2], // a terminal that does not say its width: taken as 80
  ])('on a terminal %i columns wide, goes up over the rows a line of %i wrapped into (%i)', (columns, length, rows) => {
    const tty = new Output(true, columns);
    const w = new FrameWriter(tty);
    w.write('x'.repeat(length));
    tty.text = '';
    w.write('done');
    expect(tty.text).toBe(`${UP(rows)}${CLEAR_DOWN}done\n`);
  });

  it('elsewhere, writes a frame only when it changed, new lines always, and no terminal codes', () => {
    const pipe = new Output(false);
    const w = new FrameWriter(pipe);
    w.write('run-a  waiting');
    w.write('run-a  waiting');
    w.write('run-a  waiting', ['planned: 100 rows']);
    w.write('run-a  active  10/100 rows');
    w.write('run-a  active  10/100 rows', ['segment 0 done']);
    expect(pipe.text).toBe('run-a  waiting\nplanned: 100 rows\nrun-a  active  10/100 rows\nsegment 0 done\n');
  });

  it('never redraws when told not to, even on a terminal (JSON lines)', () => {
    const tty = new Output(true);
    const w = new FrameWriter(tty, false);
    w.write('{"state":"waiting"}');
    w.write('{"state":"active"}');
    expect(tty.text).toBe('{"state":"waiting"}\n{"state":"active"}\n');
  });
});
