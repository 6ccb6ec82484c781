import { clearLine, cursorTo } from 'node:readline';
import type { RunProgress } from '../scoring/index.js';

/** A progress bar, and a way to say something beside it. */
export interface ProgressBar {
  update: (p: RunProgress) => void;
  /** Writes a line on stderr, above the bar when one is shown (drawn again below it at its next update). */
  say: (line: string) => void;
  stop: () => void;
}

/**
 * A progress bar on stderr when it is a terminal (rows, rows/s, ETA); nothing otherwise.
 * cli-progress (and the string-width modules it pulls in) is loaded only when a bar is shown: a
 * run with --json or without a terminal starts without it.
 */
export async function createProgressBar(enabled: boolean): Promise<ProgressBar> {
  const say = (line: string) => void process.stderr.write(`${line}\n`);
  if (!enabled || !process.stderr.isTTY) return { update: () => {}, say, stop: () => {} };
  const { default: cliProgress } = await import('cli-progress');
  const bar = new cliProgress.SingleBar(
    {
      stream: process.stderr,
      format: '{bar} {percentage}% | {value}/{total} rows | {rate} rows/s | ETA {eta_s} | quarantined {quarantined}',
      hideCursor: true,
    },
    cliProgress.Presets.shades_classic,
  );
  let started = false;
  return {
    update: (p) => {
      const payload = { rate: p.rowsPerSecond, eta_s: p.etaSeconds === null ? '?' : `${p.etaSeconds}s`, quarantined: p.rowsQuarantined };
      if (!started) {
        bar.start(p.rowsTotal, p.rowsDone, payload);
        started = true;
      } else bar.update(p.rowsDone, payload);
    },
    say: (line) => {
      // The bar's line is cleared, so the line said does not start with the bar's text.
      if (started) {
        clearLine(process.stderr, 0);
        cursorTo(process.stderr, 0);
      }
      say(line);
    },
    stop: () => started && bar.stop(),
  };
}
