import { Writable } from 'node:stream';
import { promiseHooks } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { drainedWrite } from '../../src/scoring/drained-write.js';

/** A stream that takes one byte before it asks to drain, and drains on the next turn of the loop. */
function slowStream(): Writable {
  return new Writable({ highWaterMark: 1, write: (_chunk, _encoding, done) => setImmediate(done) });
}

describe('drainedWrite', () => {
  it('waits for drain at every full write without chaining anything on the pending upload', async () => {
    const stream = slowStream();
    const consumed = new Promise<void>(() => {}); // an upload that lasts the whole file
    let chained = 0;
    const stop = promiseHooks.onInit((_promise, parent) => {
      if (parent === consumed) chained++;
    }) as () => void;
    try {
      for (let i = 0; i < 1000; i++) await drainedWrite(stream, 'xy', consumed);
    } finally {
      stop();
    }
    expect(stream.writableLength).toBe(0);
    expect(chained).toBe(0);
    expect(stream.listenerCount('drain') + stream.listenerCount('close')).toBe(0);
  });

  it("throws the upload's own error when the upload fails while a write waits", async () => {
    const stream = slowStream();
    let fail!: (err: Error) => void;
    const consumed = new Promise<void>((_resolve, reject) => (fail = reject));
    const waiting = drainedWrite(stream, 'xy', consumed);
    fail(new Error('upload of predictions.csv failed: AccessDenied'));
    stream.destroy();
    await expect(waiting).rejects.toThrow('upload of predictions.csv failed: AccessDenied');
  });

  it('refuses to write into a stream the upload already ended', async () => {
    const stream = slowStream();
    stream.destroy();
    await expect(drainedWrite(stream, 'xy', Promise.resolve())).rejects.toThrow('the upload ended before its content was written');
  });

  it('writes nothing for empty data', async () => {
    const stream = slowStream();
    stream.destroy();
    await expect(drainedWrite(stream, '', Promise.resolve())).resolves.toBeUndefined();
  });
});
