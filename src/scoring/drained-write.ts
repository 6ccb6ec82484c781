import type { Writable } from 'node:stream';

/**
 * Writes with backpressure into a stream whose consumer (a storage upload) settles `consumed`:
 * waits for 'drain', but not past the stream's end. An upload that fails destroys the stream
 * without a word, and its 'drain' never comes: the upload's own error (naming the file) is thrown
 * instead of waiting forever.
 *
 * Nothing is chained on `consumed` until the stream is gone: it stays pending for the whole file,
 * and a reaction added to it at every wait (one per 64 KiB chunk of a run's output) was kept until
 * the end, growing the heap with the file's size.
 */
export async function drainedWrite(stream: Writable, data: string | Buffer, consumed: Promise<unknown>): Promise<void> {
  if (data.length === 0) return;
  if (!stream.destroyed && stream.write(data)) return;
  if (!stream.destroyed) await drainOrClose(stream);
  if (stream.destroyed) {
    await consumed;
    throw new Error('the upload ended before its content was written');
  }
}

/** Settles at the stream's next 'drain' or 'close', whichever comes first, and leaves no listener behind. */
function drainOrClose(stream: Writable): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      stream.off('drain', done);
      stream.off('close', done);
      resolve();
    };
    stream.on('drain', done);
    stream.on('close', done);
  });
}
