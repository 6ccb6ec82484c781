import type { Readable } from 'node:stream';

/** A bound on the service's answers, by the name the deployment's limits give it. */
export type AnswerBound = 'answerBytes' | 'answerRatio' | 'answerDepth' | 'describeBytes';

/**
 * How much of the service's answers the client reads: the answers are the service's to size, and
 * one read whole without a bound (a valid array followed by gigabytes of white space) takes the
 * process down with it. Plain numbers: the wiring maps the deployment's limits onto them.
 */
export interface AnswerBounds {
  /** A predict answer's bytes, whatever its request. */
  maxAnswerBytes: number;
  /** A predict answer's bytes per byte of its request's body. */
  maxAnswerRatio: number;
  /** Below this, a predict answer is never refused for its ratio to its request. */
  answerFloorBytes: number;
  /** How deep arrays and objects may nest in a predict or describe answer. */
  maxAnswerDepth: number;
  /** A describe answer's bytes. */
  maxDescribeBytes: number;
  /**
   * The error of an answer past a bound: `bound` names it, `value` is its value, `what` says what
   * passed it. The call fails with it as it is, never retried: the same request would be answered
   * the same way.
   */
  limitError: (bound: AnswerBound, value: number, what: string) => Error;
}

/** The bytes an answer may have, and the bound that sets them (the one to raise to allow more). */
export interface Allowance {
  bytes: number;
  bound: 'answerBytes' | 'answerRatio' | 'describeBytes';
}

/**
 * A predict answer's allowance for a request body of `requestBytes`: its ratio to the request, at
 * least the floor, at most the ceiling. Below the ceiling, raising the ratio is what allows more.
 */
export function predictAllowance(requestBytes: number, bounds: Omit<AnswerBounds, 'limitError'>): Allowance {
  const byRatio = Math.max(bounds.answerFloorBytes, bounds.maxAnswerRatio * requestBytes);
  return byRatio < bounds.maxAnswerBytes ? { bytes: byRatio, bound: 'answerRatio' } : { bytes: bounds.maxAnswerBytes, bound: 'answerBytes' };
}

/**
 * Buffers that answers are joined into, used again once an answer is read. A 1000-row answer is
 * about half a megabyte: joined into a fresh buffer each time, every answer was a mapping of new
 * pages (page faults, then an unmap) and, until a collection found it dead, half a megabyte more of
 * the process's memory. Only buffers made here are taken back; `give` ignores any other.
 */
export class AnswerBuffers {
  private readonly free: ArrayBuffer[] = [];
  private readonly made = new WeakSet<ArrayBuffer>();

  /** @param keep how many free buffers are kept for later answers (about the requests in flight) */
  constructor(private readonly keep: number) {}

  /** A view of `length` bytes, their contents unset. */
  take(length: number): Buffer {
    const i = this.free.findIndex((b) => b.byteLength >= length);
    const buffer = i >= 0 ? this.free.splice(i, 1)[0] : this.make(length);
    return Buffer.from(buffer, 0, length);
  }

  /** Takes back the buffer behind `view` once nothing reads it any more. */
  give(view: Buffer): void {
    const buffer = view.buffer as ArrayBuffer;
    if (!this.made.has(buffer) || this.free.includes(buffer)) return;
    if (this.free.length < this.keep) this.free.push(buffer);
    else this.made.delete(buffer);
  }

  private make(length: number): ArrayBuffer {
    // A quarter more, in 64 KiB steps, so that the next answer of about this size fits too.
    const buffer = new ArrayBuffer(Math.ceil((length * 1.25) / 65536) * 65536);
    this.made.add(buffer);
    return buffer;
  }
}

/**
 * A body's bytes, counted as they come; undefined once they pass `allowed`, or at once when the
 * length it declares (`Content-Length`) does, the body then destroyed (its connection closed) so
 * the rest is never read. Collected as they come and joined once, as a whole read does: into a
 * buffer of `into` when given (give it back once the answer is read).
 */
export function readBounded(body: Readable, allowed: number, declared?: number, into?: AnswerBuffers): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    // After a destroy the body fails with its abort, which no one waits for any more.
    body.on('error', reject);
    if (declared !== undefined && declared > allowed) {
      resolve(undefined);
      body.destroy();
      return;
    }
    const chunks: Buffer[] = [];
    let length = 0;
    body.on('data', (chunk: Buffer) => {
      length += chunk.length;
      if (length <= allowed) chunks.push(chunk);
      else {
        chunks.length = 0;
        resolve(undefined);
        body.destroy();
      }
    });
    body.on('end', () => resolve(chunks.length === 1 ? chunks[0] : join(chunks, length, into)));
  });
}

function join(chunks: Buffer[], length: number, into: AnswerBuffers | undefined): Buffer {
  if (into === undefined) return Buffer.concat(chunks, length);
  const joined = into.take(length);
  let at = 0;
  for (const chunk of chunks) at += chunk.copy(joined, at);
  return joined;
}
