import { Writable } from 'node:stream';
import { pino } from 'pino';

/** A logger whose lines are kept, parsed. */
export function keptLogger() {
  const lines: Record<string, unknown>[] = [];
  const out = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { log: pino({ level: 'info' }, out), messages: () => lines.map((l) => l.msg), lines };
}
