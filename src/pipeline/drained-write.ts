import { once } from 'node:events';
import type { Writable } from 'node:stream';

/**
 * Writes with backpressure into a stream whose consumer (a storage upload) settles `consumed`:
 * waits for 'drain', but not past the consumer's end. An upload that fails destroys the stream
 * without a word, and its 'drain' never comes: the upload's own error (naming the file) is thrown
 * instead of waiting forever.
 */
export async function drainedWrite(stream: Writable, data: string | Buffer, consumed: Promise<unknown>): Promise<void> {
  if (data.length === 0) return;
  if (stream.destroyed || !stream.write(data)) {
    const stopped = consumed.then(() => {
      throw new Error('the upload ended before its content was written');
    });
    await Promise.race([stream.destroyed ? stopped : once(stream, 'drain'), stopped]);
  }
}
